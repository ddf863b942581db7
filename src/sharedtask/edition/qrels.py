"""Judgments -> the task's official qrels, registered as a dataset's truth (docs/assessment.md).

Layouts written (the shipped official files, docs/formats.md):

- ARQMath Tasks 1-3: ``topic<TAB>0<TAB>item<TAB>grade`` in ``qrels.tsv``; Task 1 items are
  answer post ids, Task 2 items are visual ids (the official Task 2 qrels are keyed by
  ``visual_id`` of the formula index v3), Task 3 items are the pool's answer ids.
- Touché: ``topic 0 doc grade`` (spaces) in ``qrels.txt``, and argument quality in
  ``qrels-quality.txt`` when the task judges quality (Touché 2021).

An item judged by several assessors gets one grade by the spec's ``pooling.resolve`` rule:
``max``, ``min``, ``mean`` (rounded half up: 2.5 -> 3, -0.5 -> 0), or ``adjudicator`` (the
named assessor's grade where they judged the item, otherwise the others' max). The
quality grade is resolved by the same rule over the assessors who gave one.
"""

from __future__ import annotations

import json
import math
import shutil
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from sharedtask.errors import SharedTaskError
from sharedtask.formats._io import atomic_text_writer
from sharedtask.formats.trec import write_qrels
from sharedtask.spec import Task

RULES = ("max", "min", "mean", "adjudicator")


@dataclass(frozen=True)
class Judgment:
    """One assessor's grade for one pooled item (``when``: ISO 8601 time it was given)."""

    topic: str
    item: str
    assessor: str
    grade: int
    quality: int | None = None
    when: str | None = None


@dataclass
class Qrels:
    """Assembled qrels: per truth role (relevance, quality) ``{topic: {item: grade}}``."""

    task: str
    roles: dict[str, dict[str, dict[str, int]]]
    files: dict[str, str]  # role -> file name in the truth folder (the task's truth contract)
    sep: str
    rule: str
    adjudicator: str | None = None
    assessors: list[str] = field(default_factory=list)
    double_judged: int = 0  # items more than one assessor judged
    disagreements: int = 0  # of those, items with different grades
    first: str | None = None  # earliest and latest judgment times, when given
    last: str | None = None

    def rows(self, role: str = "relevance") -> Iterable[tuple[str, str, str, int]]:
        from sharedtask.edition.pooling import _topic_key

        grades = self.roles.get(role, {})
        for topic in sorted(grades, key=_topic_key):
            for item in sorted(grades[topic], key=_item_key):
                yield topic, "0", item, grades[topic][item]

    def write(self, folder: Path) -> dict[str, Path]:
        """Write one file per role into ``folder``; returns {role: path}."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        out = {}
        for role in self.roles:
            path = folder / self.files[role]
            write_qrels(path, self.rows(role), sep=self.sep)
            out[role] = path
        return out

    def summary(self) -> dict[str, object]:
        return {"task": self.task, "rule": self.rule, "adjudicator": self.adjudicator,
                "assessors": self.assessors, "double_judged": self.double_judged,
                "disagreements": self.disagreements, "first_judgment": self.first, "last_judgment": self.last,
                "items": {role: sum(len(v) for v in grades.values()) for role, grades in self.roles.items()},
                "topics": {role: len(grades) for role, grades in self.roles.items()}}


def _item_key(item: str) -> tuple[int, int, str]:
    return (0, int(item), "") if item.isdigit() else (1, 0, item)


def resolve(grades: Sequence[tuple[str, int]], rule: str, adjudicator: str | None = None) -> int:
    """One grade from several assessors' ``(assessor, grade)`` by ``rule`` (module docstring)."""
    values = [g for _, g in grades]
    if not values:
        raise ValueError("no grades to resolve")
    if rule == "max":
        return max(values)
    if rule == "min":
        return min(values)
    if rule == "mean":
        return math.floor(sum(values) / len(values) + 0.5)  # half up, also below zero
    if rule == "adjudicator":
        own = [g for who, g in grades if who == adjudicator]
        return own[-1] if own else max(values)
    raise SharedTaskError(f"unknown resolve rule {rule!r}", hint=f"rules: {', '.join(RULES)}")


def parse_rule(text: str) -> tuple[str, str | None]:
    """``max`` / ``min`` / ``mean`` / ``adjudicator:NAME`` -> (rule, adjudicator)."""
    rule, _, name = text.partition(":")
    if rule not in RULES or (rule == "adjudicator") != bool(name):
        raise SharedTaskError(f"unknown resolve rule {text!r}",
                              hint="max, min, mean or adjudicator:NAME")
    return rule, name or None


def assemble(task: Task, judgments: Iterable[Judgment], rule: str | None = None) -> Qrels:
    """Merge ``judgments`` into the task's qrels by ``rule`` (default: the spec's ``resolve``).

    ``rule`` is ``max``, ``min``, ``mean`` or ``adjudicator:NAME``. An assessor who judged an
    item twice counts with their last judgment (by ``when``, then by order given).
    """
    spec = task.pooling
    if rule is None:
        if spec is None or not spec.pooled:
            raise SharedTaskError(f"task {task.id} declares no pooling rule to resolve judgments by",
                                  hint="give a rule: max, min, mean or adjudicator:NAME")
        name, adjudicator = spec.resolve, spec.adjudicator
    else:
        name, adjudicator = parse_rule(rule)
    judged = spec.judged if spec is not None and spec.pooled else ("relevance",)
    latest: dict[tuple[str, str, str], Judgment] = {}
    for j in sorted(judgments, key=lambda j: j.when or ""):  # stable: given order among equal times
        latest[(j.topic, j.item, j.assessor)] = j
    by_item: dict[tuple[str, str], list[Judgment]] = {}
    for (topic, item, _), j in latest.items():
        by_item.setdefault((topic, item), []).append(j)
    roles: dict[str, dict[str, dict[str, int]]] = {role: {} for role in judged}
    double = disagree = 0
    for (topic, item), js in by_item.items():
        grades = [(j.assessor, j.grade) for j in js]
        if len(js) > 1:
            double += 1
            disagree += len({g for _, g in grades}) > 1
        roles["relevance"].setdefault(topic, {})[item] = resolve(grades, name, adjudicator)
        if "quality" in roles:
            quality = [(j.assessor, j.quality) for j in js if j.quality is not None]
            if quality:
                roles["quality"].setdefault(topic, {})[item] = resolve(quality, name, adjudicator)  # type: ignore[arg-type]
    files = {}
    for role in roles:
        entry = task.truth.file(role)
        if entry is None:
            raise SharedTaskError(f"task {task.id} has no {role} truth file to write judgments into")
        files[role] = entry.path
    times = sorted(j.when for j in latest.values() if j.when)
    return Qrels(task=task.id, roles=roles, files=files, sep="\t" if task.lab == "ARQMath" else " ",
                 rule=name, adjudicator=adjudicator, assessors=sorted({j.assessor for j in latest.values()}),
                 double_judged=double, disagreements=disagree,
                 first=times[0] if times else None, last=times[-1] if times else None)


# ---------------------------------------------------------------- registering


def register_qrels(task: Task, qrels: Qrels, *, name: str, pool: Path | None = None,
                   campaign: str | None = None, note: str | None = None,
                   extra: Mapping[str, object] | None = None) -> str:
    """Register ``qrels`` as the truth of the dataset ``<task>/<name>``; returns its id.

    The qrels files are placed in the data store with their sha256 (``data verify`` and every
    ``evaluate --dataset`` re-check them), the dataset is declared in the local registry
    (``$SHAREDTASK_DATA/registry``) next to the shipped one, and ``provenance.json`` in the
    dataset folder records the pool (its ``pool.json`` and sha256), the campaign, the
    assessors, the rule and the dates. The task's official input files are declared too,
    so that ``run --dataset`` finds the topics the runs answered.
    """
    import re

    import yaml

    from sharedtask.data import registry, store
    from sharedtask.data.checksum import sha256

    if not re.fullmatch(r"[a-z0-9][a-z0-9-]*", name):
        raise SharedTaskError(f"dataset name {name!r} must be lower-case letters, digits and '-'",
                              hint="e.g. edition-2026")
    dataset_id = f"{task.id}/{name}"
    shipped = {d.id for d in registry.all_datasets().values() if d.source_path is not None
               and d.source_path.parent == registry.registry_dir()}
    if dataset_id in shipped:
        raise SharedTaskError(f"{dataset_id} is a shipped dataset; register the new truth under another name")
    folder = store.store_root() / "datasets" / dataset_id
    truth = folder / "truth"
    if truth.exists():
        shutil.rmtree(truth)  # registering again replaces the truth (the manifest says which)
    written = qrels.write(truth)
    formats = dict.fromkeys(written, "trec-qrels")
    answers = _pooled_answers(task, pool, truth)
    if answers is not None:
        written["answers"], formats["answers"] = answers
    placed = {f"truth/{p.name}": store.file_entry(sha256(p), p.stat().st_size, "edition")
              for p in written.values()}
    files: list[dict[str, object]] = []
    for role, path in written.items():
        entry = placed[f"truth/{path.name}"]
        what = ("the pooled answers' texts, by the ids the qrels judge" if role == "answers"
                else f"{role} judgments of a new edition ({qrels.rule})")
        files.append({"path": path.name, "role": "truth", "format": formats[role], "sha256": entry["sha256"],
                      "size": entry["size"], "description": what})
    official = next((d for d in registry.all_datasets().values() if d.task == task.id and d.official), None)
    if official is not None:  # the topics and collection the runs answered, as the official dataset has them
        for f in official.files:
            if f.role == "input" or (f.role == "truth" and f.format != "trec-qrels" and f.path not in
                                     {x["path"] for x in files}):
                entry = {k: v for k, v in vars(f).items() if v not in (None, "") and k != "required"}
                if f.role == "truth" or not f.required:
                    entry["required"] = False
                files.append(entry)
    entry_doc: dict[str, object] = {"task": task.id, "title": f"{task.title}: new edition truth {name}"[:200],
                                    "files": files}
    if official is not None and official.irds and any("irds" in f for f in files):
        entry_doc["irds"] = official.irds
    if official is not None and official.checkout is not None and any("build" in f for f in files):
        entry_doc["checkout"] = {"repository": official.checkout.repository, "commit": official.checkout.commit}
    doc = {"version": 1, "datasets": {dataset_id: entry_doc}}
    local = registry.local_registry_dir()
    local.mkdir(parents=True, exist_ok=True)
    target = local / f"{task.id}--{name}.yml"
    tmp = target.with_name(target.name + ".part")
    tmp.write_text("# written by sharedtask qrels --register (sharedtask.edition.qrels)\n"
                   + yaml.safe_dump(doc, sort_keys=False, allow_unicode=True), encoding="utf-8")
    try:  # the declaration must load as the shipped ones do, or it would break every registry read
        registry.dataset_from_entry(tmp, dataset_id, registry.read_registry_file(tmp)["datasets"][dataset_id])
    except SharedTaskError:
        tmp.unlink(missing_ok=True)
        raise
    manifest = {"dataset": dataset_id, "task": task.id, "files": placed}
    folder.mkdir(parents=True, exist_ok=True)
    with atomic_text_writer(folder / store.MANIFEST) as fh:
        fh.write(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    provenance: dict[str, object] = {"dataset": dataset_id, "registered": _now(), **qrels.summary(),
                                     "sha256": {k: v["sha256"] for k, v in placed.items()}}
    if pool is not None:
        pool = Path(pool)
        meta = pool / "pool.json"
        provenance["pool"] = {"folder": str(pool.resolve()),
                              "pool.json sha256": sha256(meta) if meta.is_file() else None,
                              "pool.tsv sha256": sha256(pool / "pool.tsv") if (pool / "pool.tsv").is_file() else None}
    if campaign is not None:
        provenance["campaign"] = campaign
    if note:
        provenance["note"] = note
    provenance.update(extra or {})
    with atomic_text_writer(folder / "provenance.json") as fh:
        fh.write(json.dumps(provenance, indent=2) + "\n")
    tmp.replace(target)  # declared last: a dataset is registered only once its files are in place
    registry.all_datasets.cache_clear()
    return dataset_id


def _pooled_answers(task: Task, pool: Path | None, truth: Path) -> tuple[Path, str] | None:
    """A task scored by its answers' texts (ARQMath-3 Task 3: a run's answer finds its grade by
    its text among the known answers, ``evaluate.task3``) gets the pool's answers as its known
    answers, in the official ``answers.tsv`` layout (header, tab-separated, csv-quoted):
    (path, format), or None when the task or the pool has none."""
    import csv

    from sharedtask.edition.pooling import ANSWERS_TSV

    spec = task.truth.file("answers")
    source = Path(pool) / ANSWERS_TSV if pool is not None else None
    if spec is None or source is None or not source.is_file():
        return None
    target = truth / spec.path
    with source.open(encoding="utf-8") as src, atomic_text_writer(target) as fh:
        out = csv.writer(fh, delimiter="\t", quoting=csv.QUOTE_MINIMAL, lineterminator="\n")
        out.writerow(["answer_id", "topic", "text"])
        for line in src:
            topic, item, text = line.rstrip("\n").split("\t", 2)
            out.writerow([item, topic, text])
    return target, spec.format


def provenance(dataset_id: str) -> dict[str, object]:
    """The provenance a registered edition's truth was recorded with ({} for other datasets)."""
    from sharedtask.data.store import store_root

    try:
        return json.loads((store_root() / "datasets" / dataset_id / "provenance.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")
