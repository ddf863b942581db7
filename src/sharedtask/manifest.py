"""The manifest (``tira.yml``): which software runs on which task, built how.

Baselines and organizers' submission lists share one shape (:class:`Software`),
so the demo ranks baselines and submissions together. Checked against
``tasks/manifest.schema.json`` on load; errors name the file and the path.
"""

from __future__ import annotations

import fnmatch
import json
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from sharedtask.errors import SharedTaskError, SpecError, choices_hint
from sharedtask.resources import resource
from sharedtask.spec import Task, task_ids, yaml_error


@dataclass(frozen=True)
class Software:
    """A container that produces a run: a baseline, a submission, or the evaluator."""

    name: str
    image: str
    kind: str  # "baseline" | "submission" | "evaluator"
    build: Path | None = None
    dockerfile: str | None = None
    build_args: dict[str, str] = field(default_factory=dict)
    command: str | None = None
    commands: dict[str, str] = field(default_factory=dict)
    tasks: tuple[str, ...] = ()
    description: str = ""
    build_sandbox: dict[str, Any] = field(default_factory=dict)  # see sharedtask.images.build.BuildSandbox
    #: A re-ranker's first stages (manifest names); the first that serves a task feeds it there.
    input_runs: tuple[str, ...] = ()

    def serves(self, task_id: str) -> bool:
        return any(fnmatch.fnmatchcase(task_id, pattern) for pattern in self.tasks)

    def command_for(self, task_id: str) -> str | None:
        """The command for this task (per-task override first); None = image entrypoint."""
        return self.commands.get(task_id, self.command)

    @property
    def is_reranker(self) -> bool:
        return bool(self.input_runs)


@dataclass(frozen=True)
class Dataset:
    name: str
    input_dir: Path
    truth_dir: Path | None
    tira_dataset: str | None = None


@dataclass(frozen=True)
class Manifest:
    path: Path
    baselines: tuple[Software, ...]
    submissions: tuple[Software, ...]
    evaluator: Software | None
    datasets: dict[str, tuple[Dataset, ...]]

    def software(self, name: str) -> Software:
        for sw in (*self.baselines, *self.submissions):
            if sw.name == name:
                return sw
        raise SharedTaskError(f"{self.path}: no baseline or submission named {name!r}",
                              hint=choices_hint(name, (sw.name for sw in (*self.baselines, *self.submissions)),
                                                "baselines and submissions"))

    def for_task(self, task_id: str) -> list[Software]:
        return [sw for sw in (*self.baselines, *self.submissions) if sw.serves(task_id)]

    def first_stage(self, sw: Software, task: Task) -> Software | None:
        """The software whose run ``sw`` re-ranks on ``task``: the first of its ``input_run`` names
        that serves the task and that the task's stage admits (None: ``sw`` is no re-ranker)."""
        for name in sw.input_runs:
            first = self.software(name)
            if first.serves(task.id) and (task.rerank is None or task.rerank.allows(name)):
                return first
        return None

    def dataset(self, task: Task, name: str = "sample") -> Dataset:
        for ds in self.datasets.get(task.id, ()):
            if ds.name == name:
                return ds
        if name == "sample":
            return Dataset("sample", task.sample_dir / "input", task.sample_dir / "truth")
        from sharedtask.data import all_datasets, dataset_folders

        # Not in the manifest: a dataset of the registry (tasks/datasets/*.yml), e.g. "test".
        if name not in all_datasets() and f"{task.id}/{name}" not in all_datasets() and not name.startswith("irds:"):
            known = ", ".join(ds.id for ds in all_datasets().values() if ds.task == task.id) or "none"
            raise SharedTaskError(f"task {task.id} has no dataset {name!r} in {self.path} or in the data registry",
                                  hint=f"the registry's datasets of this task: {known}")
        input_dir, truth_dir, dataset_id = dataset_folders(task.id, name)
        return Dataset(dataset_id, input_dir, truth_dir)


@cache
def _schema() -> dict[str, Any]:
    with (resource("tasks") / "manifest.schema.json").open(encoding="utf-8") as fh:
        return json.load(fh)


def _read(path: Path) -> dict[str, Any]:
    try:
        with path.open(encoding="utf-8") as fh:
            doc = yaml.safe_load(fh) or {}
    except FileNotFoundError:
        raise SharedTaskError(f"manifest not found: {path}") from None
    except UnicodeDecodeError as exc:
        raise SpecError(f"{path}: not a YAML text file (byte {exc.start} is not UTF-8)") from None
    except yaml.MarkedYAMLError as exc:
        raise yaml_error(path, exc) from None
    validator = jsonschema.Draft202012Validator(_schema())
    errors = sorted(validator.iter_errors(doc), key=lambda e: len(e.absolute_path))
    if errors:
        err = errors[0]
        where = ".".join(str(p) for p in err.absolute_path) or "(top level)"
        raise SpecError(f"{path}: {where}: {err.message}")
    return doc


def _software(name: str, raw: dict[str, Any], kind: str, base: Path) -> Software:
    build = raw.get("build")
    return Software(
        name=name,
        image=raw["image"],
        kind=kind,
        build=(base / build).resolve() if build else None,
        dockerfile=raw.get("dockerfile"),
        build_args=dict(raw.get("build_args", {})),
        command=raw.get("command"),
        commands=dict(raw.get("commands", {})),
        tasks=tuple(raw.get("tasks", ())),
        description=raw.get("description", ""),
        build_sandbox=dict(raw.get("build_sandbox", {})),
        input_runs=_names(raw.get("input_run")),
    )


def _names(value: str | list[str] | None) -> tuple[str, ...]:
    return () if value is None else (value,) if isinstance(value, str) else tuple(value)


def _check_task_patterns(path: Path, doc: dict[str, Any], known: set[str]) -> None:
    """Every ``tasks`` pattern must match a task: a typo would silently drop the software."""
    for section in ("baselines", "submissions"):
        for name, raw in doc.get(section, {}).items():
            for pattern in raw.get("tasks", ()):
                if not fnmatch.filter(known, pattern):
                    raise SpecError(f"{path}: {section}.{name}.tasks: {pattern!r} matches no task")


def _check_stages(path: Path, softwares: list[Software]) -> None:
    """A re-ranker names software of the manifest that is no re-ranker itself (one stage deep),
    on tasks that declare a re-ranking stage (``rerank:`` in the task spec)."""
    from sharedtask.spec import load_task

    by_name = {s.name: s for s in softwares}
    for sw in softwares:
        for first in sw.input_runs:
            if first not in by_name:
                raise SpecError(f"{path}: {sw.name}.input_run: {first!r} is not software of this manifest",
                                hint="name a baseline or submission whose run it re-ranks")
            if by_name[first].is_reranker:
                raise SpecError(f"{path}: {sw.name}.input_run: {first!r} is a re-ranker itself",
                                hint="pipelines are one stage deep: name a first stage")
    for sw in softwares:
        for task_id in task_ids() if sw.input_runs else ():
            if not sw.serves(task_id):
                continue
            stage = load_task(task_id).rerank
            if stage is None:
                raise SpecError(f"{path}: {sw.name}: task {task_id} declares no re-ranking stage",
                                hint="add rerank: {depth: N} to the task spec, or leave the task out of tasks:")
            # else demo would plan no run of it there, without a word
            if not any(by_name[first].serves(task_id) and stage.allows(first) for first in sw.input_runs):
                admitted = ", ".join(stage.first_stages) or "any"
                raise SpecError(f"{path}: {sw.name}: none of its input runs ({', '.join(sw.input_runs)}) is a "
                                f"first stage of task {task_id}: one must serve the task, and the task's stage "
                                f"admits {admitted}",
                                hint="name such a first stage in input_run, or leave the task out of tasks:")


def load_manifest(path: Path | None = None, *, extra: list[Path] | None = None) -> Manifest:
    """Load ``tira.yml`` (default: the project's) plus optional submission lists."""
    path = (path or resource("tira.yml")).resolve()
    doc = _read(path)
    base = path.parent
    known = set(task_ids())
    _check_task_patterns(path, doc, known)
    baselines = [_software(n, r, "baseline", base) for n, r in doc.get("baselines", {}).items()]
    submissions = [_software(n, r, "submission", base) for n, r in doc.get("submissions", {}).items()]
    for extra_path in extra or []:
        extra_path = extra_path.resolve()
        extra_doc = _read(extra_path)
        _check_task_patterns(extra_path, extra_doc, known)
        submissions += [
            _software(n, r, "submission", extra_path.parent) for n, r in extra_doc.get("submissions", {}).items()
        ]
    names = [s.name for s in (*baselines, *submissions)]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise SpecError(f"{path}: software names must be unique: {', '.join(dupes)}")
    _check_stages(path, [*baselines, *submissions])
    datasets: dict[str, tuple[Dataset, ...]] = {}
    for task_id, entry in doc.get("tasks", {}).items():
        if task_id not in known:
            raise SpecError(f"{path}: tasks.{task_id}: no such task")
        datasets[task_id] = tuple(
            Dataset(
                name=ds_name,
                input_dir=(base / ds["input"]).resolve(),
                truth_dir=(base / ds["truth"]).resolve() if ds.get("truth") else None,
                tira_dataset=ds.get("tira_dataset"),
            )
            for ds_name, ds in (entry.get("datasets") or {}).items()
        )
    evaluator = _software("evaluator", doc["evaluator"], "evaluator", base) if "evaluator" in doc else None
    return Manifest(path, tuple(baselines), tuple(submissions), evaluator, datasets)
