"""Pooling: which items of the submitted runs the assessors judge (docs/assessment.md).

The rule is the task spec's ``pooling:`` block (:class:`sharedtask.spec.PoolingSpec`):

- ``unit: document`` (ARQMath Task 1, Touché, mathlib4): each run's first ``depth`` distinct
  documents per topic, ``depth`` by the run's kind (primary or alternate).
- ``unit: visual-id`` (ARQMath Task 2): down each ranked list until ``depth`` *visually
  distinct* formulae have been seen; the item is the visual id (the formula index's
  ``visual_id``, the key of the official Task 2 qrels), and up to ``instances_per_item``
  formula instances per visual id are kept to show the assessors, chosen by reciprocal-rank
  votes over the runs (ARQMath-3 overview §5.4).
- ``unit: answer`` (ARQMath-3 Task 3): each run's answer per topic; the item is ``a`` plus
  the first 16 hex digits of the answer text's sha256, so identical answers pool once.

Order within a run: trec_eval's (score descending as a C float, ties by document id
descending, docs/evaluation.md) for documents and answers, after keeping the first line of
a document the run lists twice (as the ARQMath evaluation does); for Task 2 the order of
the official Task 2 script (score descending, ties in file order), whose visual-id
de-duplication the evaluation repeats (sharedtask.evaluate.arqmath); a formula id listed
twice counts once, at its first place in that order. A contributor's rank is the 1-based
place of the item in that order (Task 2: of the first instance of the visual id).

Runs are read one at a time (sharedtask.edition.toplists for documents: column-wise with
numpy, falling back to the project's reader, whose errors name file, line and column), so
memory holds one run plus the pool; ``benchmarks/pooling.py`` measures 100 runs x 100
topics x 1,000 lines.
"""

from __future__ import annotations

import gc
import hashlib
import json
import os
import random
import secrets
from array import array
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from sharedtask.data.checksum import sha256
from sharedtask.errors import FormatError, SharedTaskError
from sharedtask.formats._io import atomic_text_writer
from sharedtask.formats.layouts import RUN_LAYOUTS
from sharedtask.edition.toplists import top_lists
from sharedtask.formats.trec import read_run
from sharedtask.spec import PoolingSpec, Task

RunKind = Literal["primary", "alternate"]
KINDS: tuple[str, ...] = ("primary", "alternate")
POOL_TSV = "pool.tsv"
POOL_JSON = "pool.json"
INSTANCES_TSV = "instances.tsv"  # Task 2: topic, visual id, formula id, post id, votes
ANSWERS_TSV = "answers.tsv"  # Task 3: topic, answer id, answer text
FORMAT_VERSION = 1


@dataclass(frozen=True)
class PoolRun:
    """One submitted run to pool: its file, its kind and the name it is known by.

    ``task``: the run's task when it is not the pool's, but a task judged in the pool's
    pools (its spec's ``pooling.shared_with``; ARQMath-3 Task 3 runs in Task 1's pool)."""

    path: Path
    kind: RunKind
    name: str
    task: str | None = None


@dataclass
class PoolItem:
    """One item of a topic's pool and the runs that brought it in, as (run name, rank)."""

    item: str
    contributors: list[tuple[str, int]] = field(default_factory=list)
    #: unit visual-id: the formula instances (formula id, post id) shown for it, best voted first
    instances: list[tuple[str, str]] = field(default_factory=list)
    #: unit answer: the answer text
    text: str | None = None


@dataclass
class Pool:
    """A built pool: per topic its items (in the order they first entered), plus provenance."""

    task: str
    rule: dict[str, object]
    runs: list[dict[str, object]]  # name, kind, sha256, file, depth
    topics: dict[str, dict[str, PoolItem]]
    seed: int

    def items(self, topic: str) -> list[PoolItem]:
        return list(self.topics.get(topic, {}).values())

    def item_task(self, topic: str, item: str) -> str:
        """The task an item is judged for: that of the first run that brought it in."""
        entry = self.topics[topic][item]
        run = entry.contributors[0][0]
        meta = next((r for r in self.runs if r.get("name") == run), {})
        return str(meta.get("task") or self.task)

    def counts(self) -> dict[str, int]:
        """Items per topic."""
        return {topic: len(items) for topic, items in self.topics.items()}

    def display_order(self, topic: str) -> list[str]:
        """The topic's items in the order assessors see them: a shuffle seeded by the pool's
        seed and the topic, of the items sorted by id, so it reveals neither which run found
        an item nor in which order the runs were given."""
        items = sorted(self.topics.get(topic, {}))
        random.Random(f"{self.seed}:{topic}").shuffle(items)
        return items

    def write(self, out_dir: Path) -> None:
        """Write ``pool.tsv`` and ``pool.json`` (and ``instances.tsv`` / ``answers.tsv``)."""
        out_dir = Path(out_dir)
        out_dir.mkdir(parents=True, exist_ok=True)
        with atomic_text_writer(out_dir / POOL_TSV) as fh:
            for topic, items in self.topics.items():
                for entry in items.values():
                    ranks = "\t".join(f"{run}:{rank}" for run, rank in entry.contributors)
                    fh.write(f"{topic}\t{entry.item}\t{ranks}\n")
        if self.rule.get("unit") == "visual-id":
            with atomic_text_writer(out_dir / INSTANCES_TSV) as fh:
                for topic, items in self.topics.items():
                    for entry in items.values():
                        for formula, post in entry.instances:
                            fh.write(f"{topic}\t{entry.item}\t{formula}\t{post}\n")
        if any(entry.text is not None for items in self.topics.values() for entry in items.values()):
            with atomic_text_writer(out_dir / ANSWERS_TSV) as fh:
                for topic, items in self.topics.items():
                    for entry in items.values():
                        if entry.text is not None:
                            fh.write(f"{topic}\t{entry.item}\t{entry.text}\n")
        meta = {
            "format": FORMAT_VERSION,
            "task": self.task,
            "rule": self.rule,
            "runs": self.runs,
            "counts": self.counts(),
            "items": sum(self.counts().values()),
            "display_seed": self.seed,
        }
        with atomic_text_writer(out_dir / POOL_JSON) as fh:
            json.dump(meta, fh, indent=2, ensure_ascii=False)
            fh.write("\n")


def read_pool(folder: Path) -> Pool:
    """Read a pool written by :meth:`Pool.write`; a malformed file is a FormatError with its line."""
    folder = Path(folder)
    meta_path = folder / POOL_JSON
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SharedTaskError(f"{folder}: no {POOL_JSON} here", hint="make a pool with `sharedtask pool`") from None
    except json.JSONDecodeError as exc:
        raise FormatError(meta_path, f"invalid JSON: {exc.msg}", line=exc.lineno, column=exc.colno) from None
    for key in ("task", "rule", "runs", "display_seed"):
        if key not in meta:
            raise FormatError(meta_path, f"missing key {key!r}", hint="write pools with `sharedtask pool`")
    topics: dict[str, dict[str, PoolItem]] = {}
    tsv = folder / POOL_TSV
    try:
        with tsv.open(encoding="utf-8") as fh:
            for lineno, line in enumerate(fh, 1):
                parts = line.rstrip("\n").split("\t")
                if len(parts) < 3 or not parts[0] or not parts[1]:
                    raise FormatError(tsv, "expected `topic<TAB>item<TAB>run:rank...`", line=lineno)
                entry = PoolItem(parts[1])
                for column, cell in enumerate(parts[2:], 3):
                    run, sep, rank = cell.rpartition(":")
                    if not sep or not run or not rank.isdigit():
                        raise FormatError(tsv, f"expected run:rank, found {cell!r}", line=lineno, column=column)
                    entry.contributors.append((run, int(rank)))
                topics.setdefault(parts[0], {})[parts[1]] = entry
    except FileNotFoundError:
        raise SharedTaskError(f"{folder}: no {POOL_TSV} here", hint="make a pool with `sharedtask pool`") from None
    instances = folder / INSTANCES_TSV
    if instances.is_file():
        with instances.open(encoding="utf-8") as fh:
            for lineno, line in enumerate(fh, 1):
                parts = line.rstrip("\n").split("\t")
                if len(parts) != 4 or parts[1] not in topics.get(parts[0], {}):
                    raise FormatError(instances, "expected `topic item formula_id post_id` of a pooled item",
                                      line=lineno)
                topics[parts[0]][parts[1]].instances.append((parts[2], parts[3]))
    answers = folder / ANSWERS_TSV
    if answers.is_file():
        with answers.open(encoding="utf-8") as fh:
            for lineno, line in enumerate(fh, 1):
                parts = line.rstrip("\n").split("\t", 2)
                if len(parts) != 3 or parts[1] not in topics.get(parts[0], {}):
                    raise FormatError(answers, "expected `topic item answer` of a pooled item", line=lineno)
                topics[parts[0]][parts[1]].text = parts[2]
    return Pool(task=meta["task"], rule=meta["rule"], runs=meta["runs"], topics=topics,
                seed=int(meta["display_seed"]))


# ---------------------------------------------------------------- building


def pooling_rule(task: Task) -> PoolingSpec:
    """The task's pooling rule; a task without one (or one not pooled) is a clear error."""
    rule = task.pooling
    if rule is None:
        raise SharedTaskError(f"task {task.id} declares no pooling rule",
                              hint=f"add a pooling: block to tasks/{task.id}.yml (docs/assessment.md)")
    if not rule.pooled:
        raise SharedTaskError(f"task {task.id} is not pooled: {rule.reason}")
    return rule


def build_pool(task: Task, runs: Sequence[PoolRun], *, depths: Mapping[str, int] | None = None,
               seed: int | None = None, formulas: Path | None = None,
               progress: Callable[[PoolRun, int], None] | None = None, workers: int | None = None) -> Pool:
    """Pool ``runs`` by the task's rule (module docstring).

    ``depths`` overrides the spec's depth per kind; ``seed`` fixes the display order (a
    random one is drawn and recorded otherwise); ``formulas`` is the formula index (file,
    folder or glob) that maps Task 2 formula ids to visual ids. ``progress`` is called after
    each run with the run and its line count. ``workers``: processes reading runs at once
    (default: by the runs' size, :func:`_document_lists`).
    """
    rule = pooling_rule(task)
    depth_of = dict(rule.depths)
    for kind, value in (depths or {}).items():
        if kind not in KINDS:
            raise SharedTaskError(f"unknown run kind {kind!r} in a depth", hint="kinds: primary, alternate")
        if not isinstance(value, int) or value < 1:
            raise SharedTaskError(f"depth {kind}={value!r} must be a whole number of at least 1")
        depth_of[kind] = value
    names = [run.name for run in runs]
    if not runs:
        raise SharedTaskError("no runs to pool", hint="give at least one run file")
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise SharedTaskError(f"two runs are named {dupes[0]!r}", hint="every pooled run needs its own name")
    for run in runs:
        if run.kind not in KINDS:
            raise SharedTaskError(f"run {run.name}: kind {run.kind!r} is neither primary nor alternate")
        if not run.name or any(c.isspace() for c in run.name) or ":" in run.name:
            raise SharedTaskError(f"run name {run.name!r} must be non-empty, without spaces or ':'")
    layout = RUN_LAYOUTS[task.output.format].short
    if rule.unit == "visual-id":
        if formulas is None:
            raise SharedTaskError(f"task {task.id} pools visual ids: give the formula index (--formulas)",
                                  hint="the dataset's input/formulas folder (formula id -> visual_id)")
        from sharedtask.formats.formulas import load_visual_ids

        visual: dict[str, str] | None = load_visual_ids(formulas)
    else:
        visual = None
    own = [run for run in runs if run.task in (None, task.id)]
    shared: dict[str, list[PoolRun]] = {}
    for run in runs:
        if run.task not in (None, task.id):
            shared.setdefault(str(run.task), []).append(run)
    shared_rules = {other: _shared_rule(task, other) for other in shared}
    topics: dict[str, dict[str, PoolItem]] = {}
    votes: dict[tuple[str, str], dict[tuple[str, str], float]] = {}
    run_meta: list[dict[str, object]] = []
    gc_was_on = gc.isenabled()
    gc.disable()  # hundreds of thousands of small objects that live as long as the pool: no cycles to find
    try:
        _pool_runs(task, rule, own, layout, depth_of, visual, topics, votes, run_meta, progress, workers)
        for other, other_runs in shared.items():
            other_task, other_rule = shared_rules[other]
            _pool_runs(other_task, other_rule, other_runs, RUN_LAYOUTS[other_task.output.format].short,
                       dict(other_rule.depths), None, topics, votes, run_meta, progress)
            for entry in run_meta[-len(other_runs):]:
                entry["task"] = other
    finally:
        if gc_was_on:
            gc.enable()
    if rule.unit == "visual-id":
        keep = rule.instances_per_item or 5
        for (topic, vid), tally in votes.items():
            best = sorted(tally.items(), key=lambda kv: (-kv[1], kv[0]))[:keep]
            topics[topic][vid].instances = [key for key, _ in best]
    rule_doc: dict[str, object] = {
        "unit": rule.unit, "depths": {k: depth_of[k] for k in KINDS if k in depth_of},
        "judged": list(rule.judged), "relevant_from": rule.relevant_from, "resolve": rule.resolve,
        "source": rule.source,
    }
    if rule.shared_with:
        rule_doc["shared_with"] = rule.shared_with
    if rule.instances_per_item:
        rule_doc["instances_per_item"] = rule.instances_per_item
    if rule.adjudicator:
        rule_doc["adjudicator"] = rule.adjudicator
    if shared_rules:
        rule_doc["shared"] = {other: {"unit": r.unit, "depths": dict(r.depths), "judged": list(r.judged),
                                      "relevant_from": r.relevant_from, "resolve": r.resolve, "source": r.source}
                              for other, (_, r) in shared_rules.items()}
    ordered = {t: topics[t] for t in sorted(topics, key=_topic_key)}
    return Pool(task=task.id, rule=rule_doc, runs=run_meta, topics=ordered,
                seed=secrets.randbits(31) if seed is None else int(seed))


def _pool_runs(task: Task, rule: PoolingSpec, runs: Sequence[PoolRun], layout: str, depth_of: dict[str, int],
               visual: dict[str, str] | None, topics: dict[str, dict[str, PoolItem]],
               votes: dict[tuple[str, str], dict[tuple[str, str], float]], run_meta: list[dict[str, object]],
               progress: Callable[[PoolRun, int], None] | None, workers: int | None = 1) -> None:
    """Add each run's items to ``topics`` (one run read at a time, or a few at once in worker
    processes: see :func:`_document_lists`)."""
    for run in runs:
        path = Path(run.path)
        if not path.is_file():
            raise SharedTaskError(f"{path}: no such run file", hint=f"run {run.name} ({run.kind})")
    documents = _document_lists(runs, layout, depth_of, task.output.run_bytes_bound, workers) \
        if rule.unit == "document" else None
    for run in runs:
        depth = depth_of[run.kind]
        path = Path(run.path)
        if documents is not None:
            lists, lines, digest = next(documents)
            _check_ids(task, path, lists)
            for topic, taken in lists.items():
                pool = topics.setdefault(topic, {})
                for item, rank in taken:
                    entry = pool.get(item)
                    if entry is None:
                        entry = pool[item] = PoolItem(item)
                    entry.contributors.append((run.name, rank))
        else:
            per_topic, lines = _read(run, layout, rule.unit)
            digest = sha256(path)
            for topic, rows in per_topic.items():
                pool = topics.setdefault(topic, {})
                if rule.unit == "visual-id":
                    assert visual is not None
                    _take_visual(run, topic, rows, depth, visual, pool, votes)
                    continue
                for rank, (item, text) in enumerate(_answers(rows)[:depth], 1):
                    entry = pool.get(item)
                    if entry is None:
                        entry = pool[item] = PoolItem(item, text=text)
                    entry.contributors.append((run.name, rank))
        run_meta.append({"name": run.name, "kind": run.kind, "file": path.name, "sha256": digest,
                         "depth": depth, "lines": lines})
        if progress is not None:
            progress(run, lines)


def _check_ids(task: Task, path: Path, lists: Mapping[str, list[tuple[str, int]]]) -> None:
    """Every topic of a run and every pooled document id follow the task's id patterns
    (a run of another task, or ids an assessor could never look up, must not enter a pool)."""
    topic_re = task.output.pattern("topic")
    doc_re = task.output.pattern("document")
    for topic, taken in lists.items():
        if topic_re is not None and not topic_re.fullmatch(topic):
            raise FormatError(path, f"topic {topic!r} is not a topic id of {task.id}",
                              hint=f"topic ids match {topic_re.pattern}; is this a run of another task?")
        for doc, _ in taken:
            if doc_re is not None and not doc_re.fullmatch(doc):
                raise FormatError(path, f"document {doc!r} of topic {topic} is not a document id of {task.id}",
                                  hint=f"document ids match {doc_re.pattern}")


#: Below this many bytes of runs, worker processes cost more than they save.
PARALLEL_BYTES = 32 << 20


def _document_lists(runs: Sequence[PoolRun], layout: str, depth_of: Mapping[str, int], bound: int,
                    workers: int | None) -> Iterator[tuple[dict[str, list[tuple[str, int]]], int, str]]:
    """Each run's top lists, in the runs' order. ``workers`` processes read runs at once
    (None: one per CPU, at most 4, when the runs hold more than PARALLEL_BYTES; else 1):
    reading is CPU-bound Python and numpy, so threads would not help. The processes start
    from a fresh interpreter (forkserver), not a fork of this one with its threads."""
    jobs = [(Path(run.path), layout, depth_of[run.kind], bound) for run in runs]
    if workers is None:
        size = sum(path.stat().st_size for path, *_ in jobs)
        workers = min(os.cpu_count() or 1, 4) if size > PARALLEL_BYTES else 1
    if workers <= 1 or len(jobs) < 2:
        for job in jobs:
            yield top_lists(*job)
        return
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    context = multiprocessing.get_context("forkserver" if "forkserver" in multiprocessing.get_all_start_methods()
                                          else "spawn")
    with ProcessPoolExecutor(max_workers=min(workers, len(jobs)), mp_context=context) as pool:
        yield from pool.map(_top_lists_job, jobs, chunksize=1)


def _top_lists_job(job: tuple[Path, str, int, int]) -> tuple[dict[str, list[tuple[str, int]]], int, str]:
    return top_lists(*job)


def _shared_rule(task: Task, other: str) -> tuple[Task, PoolingSpec]:
    """The spec of a task whose runs join ``task``'s pool; it must declare so."""
    from sharedtask.spec import load_task

    other_task = load_task(other)
    rule = pooling_rule(other_task)
    if rule.shared_with != task.id:
        raise SharedTaskError(f"task {other} is not judged in the pools of {task.id}",
                              hint=f"its spec's pooling.shared_with is {rule.shared_with or 'not set'}")
    if rule.unit == "visual-id":
        raise SharedTaskError(f"task {other}: a visual-id pool cannot join another task's pool")
    return other_task, rule


def _topic_key(topic: str) -> tuple[str, int, str]:
    """A.2 before A.10; 2 before 10."""
    head, _, tail = topic.rpartition(".")
    return (head, int(tail), "") if tail.isdigit() else (topic, -1, topic)


# A row as kept while a run is read: (score, doc, extra). extra: Task 2 (post id, file order),
# Task 3 the answer text.
Row = tuple[float, str, object]


def _read(run: PoolRun, layout: str, unit: str) -> tuple[dict[str, list[Row]], int]:
    """One run as {topic: rows}, in file order, with the reader's precise errors."""
    path = Path(run.path)
    per_topic: dict[str, list[Row]] = {}
    get = per_topic.get
    reader = read_run(path, layout)
    lines = 0
    if unit == "answer":
        for row in reader:
            text = " ".join((row.answer or "").split())
            rows = get(row.topic)
            if rows is None:
                rows = per_topic[row.topic] = []
            rows.append((row.score, "a" + hashlib.sha256(text.encode()).hexdigest()[:16], text))
        return per_topic, reader.rows
    for row in reader:
        rows = get(row.topic)
        if rows is None:
            rows = per_topic[row.topic] = []
        rows.append((row.score, row.doc, row.post_id))
        lines += 1
    return per_topic, lines


def _answers(rows: list[Row]) -> list[tuple[str, str]]:
    """Task 3: answers in trec_eval's order (score descending as a C float, ties by id
    descending), the first line of each distinct answer only: [(answer id, text)]."""
    firsts: dict[str, Row] = {}
    for row in rows:
        firsts.setdefault(row[1], row)
    kept = list(firsts.values())
    scores = array("f", [r[0] for r in kept]).tolist()
    order = sorted(range(len(kept)), key=lambda i: (scores[i], kept[i][1]), reverse=True)
    return [(kept[i][1], str(kept[i][2])) for i in order]


def _take_visual(run: PoolRun, topic: str, rows: list[Row], depth: int, visual: Mapping[str, str],
                 pool: dict[str, PoolItem], votes: dict[tuple[str, str], dict[tuple[str, str], float]]) -> None:
    """Task 2: walk the run (official Task 2 order) until ``depth`` distinct visual ids."""
    from sharedtask.evaluate.arqmath import formula_key

    order = sorted(range(len(rows)), key=lambda i: -rows[i][0])  # stable: ties keep file order
    seen_vids: set[str] = set()
    seen_formulas: set[str] = set()
    for place, i in enumerate(order, 1):
        score, formula, post = rows[i]
        key = formula_key(formula)
        if key in seen_formulas:
            continue
        seen_formulas.add(key)
        vid = visual.get(formula, visual.get(key))
        if vid is None:
            continue  # not in the formula index: the evaluation skips it too
        if vid not in seen_vids:
            if len(seen_vids) == depth:
                break
            seen_vids.add(vid)
            entry = pool.get(vid)
            if entry is None:
                entry = pool[vid] = PoolItem(vid)
            entry.contributors.append((run.name, place))
        tally = votes.setdefault((topic, vid), {})
        instance = (formula, str(post))
        tally[instance] = tally.get(instance, 0.0) + 1.0 / place
