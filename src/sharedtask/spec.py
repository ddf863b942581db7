"""Task specs: the contracts of each shared task, loaded from ``tasks/*.yml``.

A spec may ``extends:`` base specs (``tasks/_base/*.yml``); mappings are merged
key by key (the extending file wins), everything else is replaced. The merged
document is checked against ``tasks/task.schema.json`` on every load, and an
error names the file that supplied the offending value and the path inside it.
Code reads contracts from here and never hard-codes them (docs/architecture.md).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, Iterator

import yaml

from sharedtask.errors import SpecError, UnknownTaskError, choices_hint
from sharedtask.resources import cache_root, resource
from sharedtask.units import parse_size

SCHEMA_FILE = "task.schema.json"
BASE_DIR = "_base"


# --------------------------------------------------------------------------- model


@dataclass(frozen=True)
class InputFile:
    """One entry of the input contract: a file (or glob) inside ``$inputDataset``."""

    path: str
    format: str
    role: str
    required: bool = True
    description: str = ""

    @property
    def is_glob(self) -> bool:
        return any(ch in self.path for ch in "*?[")

    def matches(self, dataset_dir: Path) -> list[Path]:
        """The files of ``dataset_dir`` this entry names (sorted, for determinism)."""
        if self.is_glob:
            return sorted(p for p in dataset_dir.glob(self.path) if p.is_file())
        candidate = dataset_dir / self.path
        return [candidate] if candidate.is_file() else []


@dataclass(frozen=True)
class InputContract:
    files: tuple[InputFile, ...]

    def file(self, role: str) -> InputFile | None:
        """The first input file with this role (topics, posts, formulas, corpus)."""
        return next((f for f in self.files if f.role == role), None)

    def all(self, role: str) -> list[InputFile]:
        return [f for f in self.files if f.role == role]


@dataclass(frozen=True)
class RerankContract:
    """A re-ranking stage: its submissions read a previous stage's top ``depth`` per topic.

    The candidates reach the container as ``$inputDataset/rerank.jsonl.gz``, the re-rank
    dataset, as TIREx hands re-rankers their input; ``$inputRun`` holds them next to the first
    stage's ``run.txt`` (docs/pipelines.md).
    """

    depth: int
    first_stages: tuple[str, ...] = ()  # empty: any valid run may feed it
    format: str = "rerank-jsonl"

    def allows(self, software: str) -> bool:
        return not self.first_stages or software in self.first_stages


@dataclass(frozen=True)
class OutputContract:
    file: str
    format: str
    max_results_per_topic: int
    patterns: dict[str, str]
    max_answer_chars: int | None = None
    file_name_pattern: str | None = None
    #: Host-side bounds on reading a run a container wrote (docs/threat-model.md).
    max_run_bytes: str = "1g"
    max_line_bytes: str = "1m"

    @property
    def run_bytes_bound(self) -> int:
        return parse_size(self.max_run_bytes, "output.max_run_bytes")

    @property
    def line_bytes_bound(self) -> int:
        return parse_size(self.max_line_bytes, "output.max_line_bytes")

    def pattern(self, name: str) -> re.Pattern[str] | None:
        """Compiled full-match pattern for an id field, or None if the spec sets none."""
        raw = self.patterns.get(name)
        return _compile(raw) if raw is not None else None


@dataclass(frozen=True)
class TruthFile:
    path: str
    format: str
    role: str
    min_rel: int | None = None
    max_rel: int | None = None
    labels: dict[str, str] = field(default_factory=dict)
    gains: dict[str, float] = field(default_factory=dict)  # grade -> gain (LeanSearch: 1 / 0.3 / 0)
    required: bool = True
    description: str = ""

    def matches(self, truth_dir: Path) -> list[Path]:
        return InputFile(self.path, self.format, self.role).matches(truth_dir)


@dataclass(frozen=True)
class TruthContract:
    files: tuple[TruthFile, ...]
    relevant_threshold: int

    def file(self, role: str) -> TruthFile | None:
        return next((f for f in self.files if f.role == role), None)


@dataclass(frozen=True)
class MeasureSpec:
    """A measure as the task declares it.

    ``id`` names what is computed (several entries may share it with different
    ``qrels_role``); ``key`` is unique within a task and used as column name.
    """

    id: str
    label: str
    procedure: str
    primary: bool = False
    official: bool = True
    qrels_role: str = "relevance"

    @property
    def key(self) -> str:
        return self.id if self.qrels_role in ("relevance", "answers", "gold", "exam") else f"{self.id}_{self.qrels_role}"


@dataclass(frozen=True)
class SandboxLimits:
    memory: str
    cpus: float
    timeout: int
    pids: int
    max_output: str
    max_output_entries: int = 100_000
    disk: str = "10g"
    runtime: str = "runc"
    #: the largest image the submission service accepts for the task (archive and loaded size)
    max_image: str = "10g"


@dataclass(frozen=True)
class PoolingSpec:
    """How a new edition's truth is made (the spec's ``pooling:`` block, docs/assessment.md).

    ``depths`` per run kind (primary, alternate) count pooled items, i.e. visual ids when
    ``unit`` is ``visual-id`` (ARQMath Task 2); ``relevant_from`` binarizes grades for
    agreement; ``resolve`` merges several assessors' grades of one item into the qrels.
    """

    pooled: bool
    unit: str = "document"
    depths: dict[str, int] = field(default_factory=dict)
    judged: tuple[str, ...] = ("relevance",)
    relevant_from: int = 1
    resolve: str = "max"
    adjudicator: str | None = None
    instances_per_item: int | None = None
    shared_with: str | None = None
    source: str = ""
    reason: str = ""


@dataclass(frozen=True)
class Task:
    id: str
    title: str
    lab: str
    year: int
    edition: str
    family: str
    description: str
    input: InputContract
    output: OutputContract
    truth: TruthContract
    measures: tuple[MeasureSpec, ...]
    sandbox: SandboxLimits
    sample: str
    url: str | None
    topics: dict[str, Any]
    source_path: Path
    raw: dict[str, Any] = field(repr=False, compare=False)
    rerank: RerankContract | None = None
    pooling: PoolingSpec | None = None

    @property
    def primary_measure(self) -> MeasureSpec:
        return next((m for m in self.measures if m.primary), self.measures[0])

    def measure(self, key: str) -> MeasureSpec:
        for m in self.measures:
            if m.key == key:
                return m
        raise SpecError(f"task {self.id} has no measure {key!r}",
                        hint=choices_hint(key, (m.key for m in self.measures), "measures"))

    @property
    def sample_dir(self) -> Path:
        return tasks_dir() / "samples" / self.sample


# --------------------------------------------------------------------------- loading


@cache
def _compile(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def tasks_dir() -> Path:
    """The task catalogue: the package's ``tasks/``, or an organizer's own copy of it
    (with its schema, bases and samples) named by ``SHAREDTASK_TASKS``."""
    own = os.environ.get("SHAREDTASK_TASKS")
    return Path(own) if own else resource("tasks")


@cache
def _schema() -> dict[str, Any]:
    path = tasks_dir() / SCHEMA_FILE
    with path.open(encoding="utf-8") as fh:
        return json.load(fh)


# libyaml's parser builds the same documents as PyYAML's pure-Python one ~10x faster
# (~50 ms of every command's start for a task's two files). A file it rejects is read
# again by the pure parser, so that the message names the problem exactly as before.
_FAST_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def yaml_error(path: Path, exc: yaml.MarkedYAMLError) -> SpecError:
    """``FILE:LINE:COLUMN: invalid YAML: PROBLEM (CONTEXT at line L, column C)``.

    Why: PyYAML marks where it gave up, often the end of the file, while the mistake is where
    its context began (an unclosed quote or bracket): both are said, in one line.
    """
    mark = exc.problem_mark
    where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else str(path)
    context = exc.context_mark
    hint = (f"{exc.context} at line {context.line + 1}, column {context.column + 1}"
            if exc.context and context and (not mark or (context.line, context.column) != (mark.line, mark.column))
            else None)
    return SpecError(f"{where}: invalid YAML: {exc.problem}", hint=hint)


def read_yaml(path: Path) -> dict[str, Any]:
    try:
        with path.open(encoding="utf-8") as fh:
            text = fh.read()
        try:
            data = yaml.load(text, Loader=_FAST_LOADER)  # noqa: S506 - a safe loader
        except yaml.YAMLError:
            data = yaml.safe_load(text)
    except yaml.MarkedYAMLError as exc:
        raise yaml_error(path, exc) from None
    except OSError as exc:
        raise SpecError(f"{path}: cannot read: {exc.strerror}") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise SpecError(f"{path}: expected a mapping at the top level, found {type(data).__name__}")
    return data


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


def _resolve(
    path: Path, root: Path, chain: tuple[Path, ...] = ()
) -> tuple[dict[str, Any], list[tuple[Path, dict[str, Any]]]]:
    """Merged document plus the layers (most derived first) for error attribution.

    ``extends`` paths are relative to ``root``, the folder of the task files.
    """
    if path in chain:
        cycle = " -> ".join(p.name for p in (*chain, path))
        raise SpecError(f"{chain[0]}: extends forms a cycle: {cycle}")
    own = read_yaml(path)
    parents = own.get("extends", [])
    if isinstance(parents, str):
        parents = [parents]
    if not isinstance(parents, list) or not all(isinstance(p, str) for p in parents):
        raise SpecError(f"{path}: extends: expected a file name or a list of file names")
    merged: dict[str, Any] = {}
    layers: list[tuple[Path, dict[str, Any]]] = []
    for parent in parents:
        parent_path = (root / parent).resolve()
        if not parent_path.is_file():
            raise SpecError(f"{path}: extends: {parent!r} does not exist under {root}")
        parent_doc, parent_layers = _resolve(parent_path, root, (*chain, path))
        merged = _merge(merged, parent_doc)
        layers = parent_layers + layers
    body = {k: v for k, v in own.items() if k != "extends"}
    merged = _merge(merged, body)
    return merged, [(path, own), *layers]


def _owner(layers: list[tuple[Path, dict[str, Any]]], json_path: list[Any]) -> Path:
    """The most derived file that sets the value at ``json_path``."""
    for path, doc in layers:
        node: Any = doc
        for part in json_path:
            if isinstance(node, dict) and part in node:
                node = node[part]
            elif isinstance(node, list) and isinstance(part, int) and part < len(node):
                node = node[part]
            else:
                break
        else:
            return path
    # Path absent everywhere (e.g. a missing required key): blame the task file.
    return layers[0][0]


def yaml_path(parts: list[Any]) -> str:
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


def _cache_file() -> Path | None:
    """Where digests of specs that passed the schema are remembered (None: no cache)."""
    if os.environ.get("SHAREDTASK_NO_CACHE"):
        return None
    return cache_root() / "valid-specs.txt"


def _digest(doc: dict[str, Any]) -> str:
    """Digest of the merged spec together with the schema it must satisfy.

    The schema enters as the bytes of its file: parsing and re-serialising it cost
    ~10 ms of every command's start, and any edit of the file still changes the digest.
    """
    digest = hashlib.sha256((tasks_dir() / SCHEMA_FILE).read_bytes())
    digest.update(json.dumps(doc, sort_keys=True, ensure_ascii=False, default=str).encode())
    return digest.hexdigest()


def known_valid(digest: str) -> bool:
    cache = _cache_file()
    try:
        return cache is not None and digest in cache.read_text(encoding="ascii").split()
    except OSError:
        return False


def remember_valid(digest: str) -> None:
    cache = _cache_file()
    if cache is None:
        return
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        if cache.is_file() and cache.stat().st_size > 256 * 1024:
            cache.unlink()  # bounded: start over rather than grow with every edit of a spec
        with cache.open("a", encoding="ascii") as fh:
            fh.write(digest + "\n")
    except OSError:
        pass  # a read-only home only costs the schema check next time


def _schema_errors(doc: dict[str, Any]) -> list[Any]:
    """jsonschema errors of the merged spec, shortest path first.

    Every load checks the spec against the schema; a spec whose exact content (and
    schema) already passed is recognised by its digest, which spares the jsonschema
    import (about 0.1 s) on short commands such as evaluating a small run.
    """
    digest = _digest(doc)
    if known_valid(digest):
        return []
    import jsonschema

    validator = jsonschema.Draft202012Validator(_schema(), format_checker=jsonschema.FormatChecker())
    errors = sorted(validator.iter_errors(doc), key=lambda e: (len(e.absolute_path), list(map(str, e.absolute_path))))
    if not errors:
        remember_valid(digest)
    return errors


def _validate(path: Path, doc: dict[str, Any], layers: list[tuple[Path, dict[str, Any]]]) -> None:
    errors = _schema_errors(doc)
    if errors:
        err = errors[0]
        parts = list(err.absolute_path)
        owner = _owner(layers, parts)
        more = f" (and {len(errors) - 1} more problem(s))" if len(errors) > 1 else ""
        raise SpecError(f"{owner}: {yaml_path(parts)}: {err.message}{more}")
    if doc["id"] != path.stem:
        raise SpecError(f"{path}: id: {doc['id']!r} must equal the file name {path.stem!r}")
    keys = [MeasureSpec(**m).key for m in doc["measures"]]
    dupes = sorted({k for k in keys if keys.count(k) > 1})
    if dupes:
        raise SpecError(f"{path}: measures: duplicate measure {', '.join(dupes)} (same id and qrels_role)")
    if sum(bool(m.get("primary")) for m in doc["measures"]) > 1:
        raise SpecError(f"{path}: measures: more than one measure is marked primary")
    _check_measures(doc, layers)


def _check_measures(doc: dict[str, Any], layers: list[tuple[Path, dict[str, Any]]]) -> None:
    """Every measure a spec names is registered for the task's family (sharedtask.measures,
    sharedtask.families)."""
    from sharedtask import families, measures

    known = measures.for_inputs(families.get(doc["family"]).inputs)
    for i, entry in enumerate(doc["measures"]):
        if entry["id"] not in known:
            owner = _owner(layers, ["measures", i, "id"])
            what = "is not a registered measure" if entry["id"] not in measures.REGISTRY \
                else f"does not apply to {doc['family']} tasks"
            raise SpecError(f"{owner}: measures[{i}].id: {entry['id']!r} {what}",
                            hint=f"measures for {doc['family']}: {', '.join(known)} (sharedtask.measures)")


def load_task_file(path: Path) -> Task:
    """Load, merge and validate one spec file."""
    path = path.resolve()
    doc, layers = _resolve(path, path.parent)
    _validate(path, doc, layers)
    out = doc["output"]
    truth = doc["truth"]
    return Task(
        id=doc["id"],
        title=doc["title"],
        lab=doc["lab"],
        year=doc["year"],
        edition=doc["edition"],
        family=doc["family"],
        description=" ".join(doc["description"].split()),
        input=InputContract(tuple(InputFile(**f) for f in doc["input"]["files"])),
        output=OutputContract(
            file=out["file"],
            format=out["format"],
            max_results_per_topic=out["max_results_per_topic"],
            patterns=dict(out["patterns"]),
            max_answer_chars=out.get("max_answer_chars"),
            file_name_pattern=out.get("file_name_pattern"),
            **{key: str(out[key]) for key in ("max_run_bytes", "max_line_bytes") if key in out},
        ),
        truth=TruthContract(
            files=tuple(TruthFile(**f) for f in truth["files"]),
            relevant_threshold=truth["relevant_threshold"],
        ),
        measures=tuple(MeasureSpec(**m) for m in doc["measures"]),
        sandbox=SandboxLimits(**doc["sandbox"]),
        sample=doc["sample"],
        url=doc.get("url"),
        topics=dict(doc.get("topics", {})),
        source_path=path,
        raw=doc,
        rerank=_rerank(doc.get("rerank")),
        pooling=_pooling(path, doc.get("pooling")),
    )


def _pooling(path: Path, entry: dict[str, Any] | None) -> PoolingSpec | None:
    if entry is None:
        return None
    if entry.get("resolve") == "adjudicator" and not entry.get("adjudicator"):
        raise SpecError(f"{path}: pooling.adjudicator: resolve is adjudicator but no adjudicator is named")
    if entry.get("instances_per_item") is not None and entry.get("unit") != "visual-id":
        raise SpecError(f"{path}: pooling.instances_per_item: only unit visual-id keeps formula instances")
    return PoolingSpec(pooled=entry["pooled"], unit=entry.get("unit", "document"),
                       depths=dict(entry.get("depths", {})), judged=tuple(entry.get("judged", ("relevance",))),
                       relevant_from=entry.get("relevant_from", 1), resolve=entry.get("resolve", "max"),
                       adjudicator=entry.get("adjudicator"), instances_per_item=entry.get("instances_per_item"),
                       shared_with=entry.get("shared_with"), source=" ".join(entry.get("source", "").split()),
                       reason=" ".join(entry.get("reason", "").split()))


def _rerank(entry: dict[str, Any] | None) -> RerankContract | None:
    if entry is None:
        return None
    return RerankContract(depth=entry["depth"], first_stages=tuple(entry.get("first_stages", ())),
                          format=entry.get("format", "rerank-jsonl"))


def task_files() -> Iterator[Path]:
    yield from sorted(tasks_dir().glob("*.yml"))


@cache
def all_tasks() -> tuple[Task, ...]:
    """Every task of the catalogue, in file-name order."""
    return tuple(load_task_file(p) for p in task_files())


def task_ids() -> list[str]:
    return [p.stem for p in task_files()]


def load_task(task_id: str) -> Task:
    """The task with this id; unknown ids get the list of known ones."""
    path = tasks_dir() / f"{task_id}.yml"
    if not path.is_file() or task_id.startswith("_"):
        raise UnknownTaskError(f"unknown task {task_id!r}", hint=choices_hint(task_id, task_ids(), "tasks"))
    return _load_cached(path)


@cache
def _load_cached(path: Path) -> Task:
    return load_task_file(path)
