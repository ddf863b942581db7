"""The whole edition on a sample, in one go: runs -> pool -> two simulated assessors ->
agreement -> qrels -> leaderboard (``sharedtask demo --edition``, docs/assessment.md).

The assessors are simulated from the sample's truth: each gives an item its true grade
(an item the truth does not know is taken as not relevant, the lowest non-negative grade),
except that with probability ``error_rate`` they give another grade of the task's scale,
drawn uniformly. ``ann`` judges every pooled item; ``bob`` judges a seeded share
(``double``) of each topic's items, so those are judged twice and the agreement is
measured on them. The new qrels are registered as dataset ``TASK/demo-edition`` and the
runs are ranked by them and by the sample's truth, with Kendall's tau between the two
orders: what the simulated assessors' errors did to the leaderboard.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from sharedtask.edition.agreement import agreement
from sharedtask.edition.judged import JUDGMENTS, read_judged_folder
from sharedtask.edition.pooling import Pool, PoolRun, build_pool
from sharedtask.edition.qrels import Qrels, assemble, register_qrels
from sharedtask.errors import SharedTaskError
from sharedtask.formats.trec import load_qrels_dict, write_qrels
from sharedtask.spec import Task

ASSESSORS = ("ann", "bob")


@dataclass
class EditionDemo:
    pool: Pool
    judgments: dict[str, int]  # assessor -> items judged
    agreement: dict[str, object]
    qrels: Qrels
    qrels_file: Path
    dataset: str
    board: list[tuple[str, float | None, float | None]]  # run, primary with the sample truth, with the new qrels
    measure: str
    tau: float | None


def scale(task: Task, role: str = "relevance") -> list[int]:
    """The grades an assessor may give: the truth file's labels, else min_rel..max_rel."""
    truth = task.truth.file(role)
    if truth is None:
        raise SharedTaskError(f"task {task.id} has no {role} truth to simulate assessors from")
    if truth.labels:
        return sorted(int(k) for k in truth.labels)
    low = max(truth.min_rel if truth.min_rel is not None else 0, 0)
    high = truth.max_rel if truth.max_rel is not None else max(low + 1, task.truth.relevant_threshold)
    return list(range(low, high + 1))


def simulate(pool: Pool, truth: dict[str, dict[str, int]], grades: Sequence[int], out: Path, *,
             error_rate: float, double: float, seed: int,
             quality: tuple[dict[str, dict[str, int]], Sequence[int]] | None = None) -> dict[str, int]:
    """Write ``out/judgments/ann.qrels`` (every item) and ``bob.qrels`` (a share of each topic);
    with ``quality`` (its truth and scale) also ``NAME.quality.qrels``, with the same errors."""
    rng = random.Random(seed)
    rows: dict[str, list[tuple[str, str, str, int]]] = {name: [] for name in ASSESSORS}
    quality_rows: dict[str, list[tuple[str, str, str, int]]] = {name: [] for name in ASSESSORS}
    for topic in pool.topics:
        order = pool.display_order(topic)
        share = set(rng.sample(order, round(len(order) * double)))
        for item in order:
            for name in ASSESSORS:
                if name == "bob" and item not in share:
                    continue
                rows[name].append((topic, "0", item, _judge(rng, truth, grades, topic, item, error_rate)))
                if quality is not None:
                    q = _judge(rng, quality[0], quality[1], topic, item, error_rate)
                    quality_rows[name].append((topic, "0", item, q))
    folder = out / JUDGMENTS
    folder.mkdir(parents=True, exist_ok=True)
    for name, lines in rows.items():
        write_qrels(folder / f"{name}.qrels", lines, sep="\t")
        if quality is not None:
            write_qrels(folder / f"{name}.quality.qrels", quality_rows[name], sep="\t")
    return {name: len(lines) for name, lines in rows.items()}


def _judge(rng: random.Random, truth: dict[str, dict[str, int]], grades: Sequence[int], topic: str, item: str,
           error_rate: float) -> int:
    """The true grade (an item the truth lacks: the lowest non-negative one), or with
    probability ``error_rate`` another grade of the scale."""
    lowest = min((g for g in grades if g >= 0), default=grades[0])
    true = truth.get(topic, {}).get(item, lowest)
    if rng.random() < error_rate:
        return rng.choice([g for g in grades if g != true] or [true])
    return true


def run_edition_demo(task: Task, runs: Sequence[PoolRun], out: Path, *, error_rate: float = 0.15,
                     double: float = 0.5, seed: int = 1, register_as: str = "demo-edition",
                     say: Callable[[str], None] = print) -> EditionDemo:
    """Every step of a new edition on the task's sample (module docstring)."""
    from sharedtask.edition.pooling import read_pool
    from sharedtask.evaluate.api import evaluate
    from sharedtask.evaluate.leaderboard import kendall

    if not 0 <= error_rate <= 1 or not 0 <= double <= 1:
        raise SharedTaskError("--error-rate and --double are shares between 0 and 1")
    sample = task.sample_dir
    truth_file = task.truth.file("relevance")
    assert truth_file is not None
    truth_path = sample / "truth" / truth_file.path
    formulas = sample / "input" / "formulas" if (sample / "input" / "formulas").is_dir() else None
    pool_dir = out / "pool"
    pool = build_pool(task, runs, seed=seed, formulas=formulas)
    pool.write(pool_dir)
    counts = pool.counts()
    say(f"1. pooled {len(runs)} runs: {sum(counts.values()):,} items over {len(counts)} topics "
        f"(depths {pool.rule['depths']}, unit {pool.rule['unit']}) -> {pool_dir}")
    quality = None
    quality_file = task.truth.file("quality")
    if task.pooling is not None and "quality" in task.pooling.judged and quality_file is not None \
            and (sample / "truth" / quality_file.path).is_file():
        quality = (load_qrels_dict(sample / "truth" / quality_file.path), scale(task, "quality"))
    judged = simulate(read_pool(pool_dir), load_qrels_dict(truth_path), scale(task), pool_dir,
                      error_rate=error_rate, double=double, seed=seed, quality=quality)
    say(f"2. two simulated assessors (error rate {error_rate:g}): ann judged {judged['ann']:,} items, "
        f"bob {judged['bob']:,} of them again{' (relevance and quality)' if quality else ''} -> "
        f"{pool_dir / JUDGMENTS}")
    _, judgments = read_judged_folder(pool_dir)
    by_assessor: dict[str, dict[tuple[str, str], int]] = {}
    for j in judgments:
        by_assessor.setdefault(j.assessor, {})[(j.topic, j.item)] = j.grade
    relevant_from = task.pooling.relevant_from if task.pooling else task.truth.relevant_threshold
    agreed = agreement(by_assessor, relevant_from, scale(task)).as_json()
    say(f"3. agreement on {agreed['judged_by_both']:,} items judged twice: Cohen's kappa "
        f"{_fmt(agreed['cohen_kappa'])} graded, {_fmt(agreed['cohen_kappa_binary'])} binarized "
        f"(relevant: grade >= {relevant_from})")
    qrels = assemble(task, judgments)
    qrels_file = out / truth_file.path
    written = qrels.write(out)
    dataset = register_qrels(task, qrels, name=register_as, pool=pool_dir, note="sharedtask demo --edition")
    say(f"4. qrels ({qrels.rule} of double judgments, {qrels.disagreements:,} disagreements) -> "
        f"{written['relevance']}, registered as dataset {dataset}")
    from sharedtask.data import registry
    from sharedtask.data.store import dataset_dir

    registered_truth = dataset_dir(registry.get_dataset(dataset)) / "truth"
    primary = task.primary_measure.key
    board = []
    for run in runs:
        old = evaluate(Path(run.path), task, truth_dir=sample / "truth", input_dir=sample / "input",
                       measures=[primary], run_name=run.name).scores.get(primary)
        new = evaluate(Path(run.path), task, truth_dir=registered_truth, input_dir=sample / "input",
                       measures=[primary], run_name=run.name).scores.get(primary)
        board.append((run.name, old, new))
    board.sort(key=lambda row: -(row[2] if row[2] is not None else float("-inf")))
    tau = kendall({r: n for r, _, n in board}, {r: o for r, o, _ in board}, primary, "sample truth").tau
    say(f"5. leaderboard by {task.primary_measure.label} on the new qrels (Kendall's tau with the "
        f"sample truth's order: {_fmt(tau)})")
    return EditionDemo(pool, judged, agreed, qrels, qrels_file, dataset, board, task.primary_measure.label, tau)


def _fmt(value: object) -> str:
    import math

    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "undefined"
    return f"{value:.3f}" if isinstance(value, float) else str(value)


def runs_from(paths: Sequence[Path]) -> list[PoolRun]:
    """Run files given as files or folders (every file in a folder, sorted); all primary,
    as ARQMath pooled its baselines."""
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            files += sorted(p for p in path.iterdir() if p.is_file() and not p.name.startswith("."))
        elif path.is_file():
            files.append(path)
        else:
            raise SharedTaskError(f"{path}: no such run file or folder")
    if not files:
        raise SharedTaskError("no runs to pool", hint="give --runs DIR or run files")
    names = [p.name.split(".")[0] for p in files]
    return [PoolRun(p, "primary", n if names.count(n) == 1 else f"{p.parent.name}-{n}") for p, n in zip(files, names)]
