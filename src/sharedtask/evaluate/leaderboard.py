"""Leaderboards: several runs of one task, sorted by the task's primary measure.

Optional paired significance test of every run against the best run of each measure
(scipy): ``ttest`` (paired Student t-test, ``scipy.stats.ttest_rel``) or ``permutation``
(paired randomisation test of the mean difference, ``scipy.stats.permutation_test``
with ``permutation_type="samples"``, 10,000 resamples, fixed seed). Pairs are the
topics both runs were averaged over. A marked cell (``†``) differs from the best run
at ``p < alpha``.

Next to that, every pair of runs is tested on every measure (``pairs``), and the p-values
of each measure's pairs are adjusted for multiple comparisons, Holm–Bonferroni by default
(:mod:`sharedtask.evaluate.multiple`): a pair whose adjusted p is below alpha is a
difference that survives correction.

Every measure the task does not call official (EXAM, EXAM Cover, EXAM qrels, our variants)
is set against the official primary measure: Kendall's tau-b between the two rankings of
the same runs (``scipy.stats.kendalltau``, variant ``b``, which corrects for ties), as
EXAM's authors validate it (Sander and Dietz 2021; Farzi and Dietz 2024).
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sharedtask.errors import SharedTaskError
from sharedtask.evaluate.multiple import CORRECTIONS, adjust
from sharedtask.evaluate.result import EvaluationResult, MeasureInfo

if TYPE_CHECKING:
    from sharedtask.tables import KeyedTable

TESTS = ("ttest", "permutation")
MARK = "†"


def _sort_value(value: float | None) -> float:
    return -math.inf if value is None or math.isnan(value) else value


def _finite(value: float | None) -> bool:
    return value is not None and math.isfinite(value)


def competition_ranks(values: list[float | None]) -> list[int | None]:
    """The leaderboard's one tie rule (standard competition ranking, "1224"): ``values`` are
    primary scores in leaderboard order (best first); equal scores share the better rank,
    the next distinct score takes its position; a run without a finite score gets no rank.
    The terminal table, JSON, CSV and the HTML report all rank by this function."""
    ranks: list[int | None] = []
    previous: float | None = None
    rank = 0
    for position, value in enumerate(values, 1):
        if not _finite(value):
            ranks.append(None)
            continue
        if value != previous:
            rank, previous = position, value
        ranks.append(rank)
    return ranks


def paired_p_value(a: dict[str, float], b: dict[str, float], test: str, seed: int = 0) -> tuple[float, int]:
    """Two-sided p-value of a paired test over the topics in both ``a`` and ``b``; and the pair count."""
    topics = sorted(set(a) & set(b))
    x = [a[t] for t in topics]
    y = [b[t] for t in topics]
    if len(topics) < 2 or x == y:
        return 1.0, len(topics)
    from scipy import stats  # heavy import, only when a test is asked for

    if test == "ttest":
        p = float(stats.ttest_rel(x, y).pvalue)
        return (1.0 if math.isnan(p) else p), len(topics)
    if test == "permutation":
        res = stats.permutation_test(
            (x, y), lambda u, v, axis=-1: (u - v).mean(axis=axis), permutation_type="samples",
            n_resamples=10_000, alternative="two-sided", rng=seed, vectorized=True,
        )
        return float(res.pvalue), len(topics)
    raise SharedTaskError(f"unknown significance test {test!r}", hint=f"choose one of {', '.join(TESTS)}")


@dataclass(frozen=True)
class PairTest:
    """One paired test between two runs on one measure, raw and corrected."""

    measure: str
    run_a: str  # the better of the two by mean (ties: by name)
    run_b: str
    difference: float  # mean of a - mean of b
    p: float
    p_adjusted: float
    topics: int

    def to_json(self) -> dict[str, Any]:
        return {"measure": self.measure, "a": self.run_a, "b": self.run_b, "difference": self.difference,
                "p": self.p, "p_adjusted": self.p_adjusted, "topics": self.topics}


@dataclass(frozen=True)
class Agreement:
    """Kendall's tau-b between the runs' order by one measure and by the official primary one."""

    measure: str
    against: str
    tau: float | None  # None: fewer than two runs; NaN: one of the two orders is all ties
    p: float | None
    runs: int

    def to_json(self) -> dict[str, Any]:
        def clean(v: float | None) -> float | None:
            return None if v is None or math.isnan(v) else v

        return {"measure": self.measure, "against": self.against, "kendall_tau_b": clean(self.tau),
                "p": clean(self.p), "runs": self.runs}

    def describe(self) -> str:
        if self.tau is None:
            return f"fewer than two runs with both {self.measure} and {self.against}"
        if math.isnan(self.tau):
            return "undefined (all runs tie)"
        return f"{self.tau:+.3f} (p = {self.p:.3g}, {self.runs} runs)"


def kendall(values: dict[str, float | None], official: dict[str, float | None], measure: str,
            against: str) -> Agreement:
    """Tau-b over the runs with a finite value of both measures; values equal to 12 decimals tie
    (a mean summed in another order differs in its last bits, which is no difference)."""
    mine = {r: round(v, 12) for r, v in values.items() if v is not None and math.isfinite(v)}
    theirs = {r: round(v, 12) for r, v in official.items() if v is not None and math.isfinite(v)}
    runs = sorted(set(mine) & set(theirs))
    if len(runs) < 2:
        return Agreement(measure, against, None, None, len(runs))
    x, y = [mine[r] for r in runs], [theirs[r] for r in runs]
    if len(set(x)) == 1 or len(set(y)) == 1:  # scipy warns and returns NaN: say so directly
        return Agreement(measure, against, math.nan, math.nan, len(runs))
    from scipy import stats

    res = stats.kendalltau(x, y, variant="b")
    return Agreement(measure, against, float(res.statistic), float(res.pvalue), len(runs))


@dataclass
class Leaderboard:
    task: str
    measures: list[MeasureInfo]
    primary: str
    rows: list[tuple[str, dict[str, float]]]  # (run, scores), best first
    test: str | None = None
    alpha: float = 0.05
    best: dict[str, str] = field(default_factory=dict)  # measure key -> best run
    p_values: dict[str, dict[str, tuple[float, int]]] = field(default_factory=dict)  # run -> key -> (p, pairs)
    correction: str = "holm"
    pairs: list[PairTest] = field(default_factory=list)  # all pairs of runs, every measure
    agreement: list[Agreement] = field(default_factory=list)  # each non-official measure against the primary
    pipelines: dict[str, str] = field(default_factory=dict)  # re-ranker's run -> the first stage it re-ranked

    def label(self, run: str) -> str:
        """How a run is shown: a re-ranker as "run ← first stage" (TIREx's pipelines)."""
        first = self.pipelines.get(run)
        return f"{run} ← {first}" if first else run

    def survives(self, pair: PairTest) -> bool:
        """The difference is significant after the correction for all pairs of its measure."""
        return pair.p_adjusted < self.alpha

    def pairs_of(self, key: str) -> list[PairTest]:
        return [pair for pair in self.pairs if pair.measure == key]

    @property
    def ranks(self) -> list[int | None]:
        """Rank of each row (ties share a rank; see :func:`competition_ranks`)."""
        return competition_ranks([scores.get(self.primary) for _, scores in self.rows])

    def significant(self, run: str, key: str) -> bool:
        p = self.p_values.get(run, {}).get(key)
        return p is not None and p[0] < self.alpha

    def to_json(self) -> dict[str, Any]:
        def clean(v: float) -> float | None:
            return None if v is None or math.isnan(v) else v

        return {
            "task": self.task,
            "primary_measure": self.primary,
            "measures": [{"key": m.key, "label": m.label, "procedure": m.procedure} for m in self.measures],
            "significance": None if not self.test else {
                "test": self.test, "alpha": self.alpha, "against": "the best run of each measure",
                "pairs": "topics both runs were averaged over", "best": dict(self.best),
                "all_pairs": {"correction": self.correction, "family": "all pairs of runs of one measure",
                              "tests": [dict(p.to_json(), survives=self.survives(p)) for p in self.pairs]}},
            "ranking": "standard competition ranking: equal primary scores share a rank (1, 1, 3)",
            "agreement": [a.to_json() for a in self.agreement],
            "runs": [
                {
                    "rank": rank,
                    "run": run,
                    **({"input_run": self.pipelines[run]} if run in self.pipelines else {}),
                    "scores": {m.key: clean(scores.get(m.key)) for m in self.measures},
                    **({"p_values": {k: {"p": p, "topics": n} for k, (p, n) in self.p_values.get(run, {}).items()}}
                       if self.test else {}),
                }
                for rank, (run, scores) in zip(self.ranks, self.rows)
            ],
        }

    def to_csv(self) -> str:
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        header = ["rank", "run"] + [m.key for m in self.measures]
        if self.test:
            header += [f"p_{m.key}" for m in self.measures]
        writer.writerow(header)
        for rank, (run, scores) in zip(self.ranks, self.rows):
            row = ["" if rank is None else rank, run] + [_fmt(scores.get(m.key)) for m in self.measures]
            if self.test:
                row += [("" if (p := self.p_values.get(run, {}).get(m.key)) is None else f"{p[0]:.6g}")
                        for m in self.measures]
            writer.writerow(row)
        return out.getvalue()

    def table(self) -> KeyedTable:
        title = f"{self.task}: sorted by {self._label(self.primary)}"
        caption = None
        if self.test and any(self.significant(run, m.key) for run, _ in self.rows for m in self.measures):
            caption = (f"{MARK} differs from the best run of that measure (paired {self.test}, "
                       f"p < {self.alpha})")
        from sharedtask.tables import Column, KeyedTable

        # the run name whole at any width (sharedtask.tables): two runs must never read alike
        table = KeyedTable([Column("#", "right", whole=True), Column("run")]
                           + [Column(m.label + (" *" if m.key == self.primary else ""), "right", whole=True)
                              for m in self.measures], key=1, title=title, caption=caption)
        for rank, (run, scores) in zip(self.ranks, self.rows):
            cells = []
            for m in self.measures:
                cell = _fmt(scores.get(m.key), 4)
                if self.test and self.significant(run, m.key):
                    cell += MARK
                cells.append(cell)
            table.add_row("" if rank is None else str(rank), self.label(run), *cells)
        return table

    def agreement_table(self) -> KeyedTable | None:
        """Kendall's tau-b of each non-official measure against the official primary one (the
        measure's label whole at any width)."""
        if not self.agreement:
            return None
        from sharedtask.tables import Column, KeyedTable

        table = KeyedTable([Column("measure"), Column("tau-b", "right"), Column("p", "right", whole=True),
                            Column("runs", "right", whole=True)],
                           title=f"agreement with {self._label(self.primary)} (official): Kendall's tau-b",
                           title_justify="left")
        for a in self.agreement:
            defined = a.tau is not None and not math.isnan(a.tau)
            table.add_row(self._label(a.measure), f"{a.tau:+.3f}" if defined else a.describe(),
                          f"{a.p:.3g}" if defined else "", str(a.runs))
        return table

    def _label(self, key: str) -> str:
        return next((m.label for m in self.measures if m.key == key), key)


def _fmt(value: float | None, digits: int = 6) -> str:
    if value is None or math.isnan(value):
        return ""
    return f"{value:.{digits}f}"


def leaderboard(results: dict[str, EvaluationResult], task=None, *, test: str | None = None,
                alpha: float = 0.05, correction: str = "holm") -> Leaderboard:
    """Build the leaderboard of ``results`` (run name -> result of the same task).

    With ``test``, every run is compared with the best run of each measure, paired
    over the topics both were averaged over, and every pair of runs with every other,
    p-values adjusted by ``correction`` (``holm`` or ``bonferroni``) per measure; this
    needs results computed with ``per_topic=True``.
    """
    if not results:
        raise SharedTaskError("no runs to rank")
    if test is not None and test not in TESTS:
        raise SharedTaskError(f"unknown significance test {test!r}", hint=f"choose one of {', '.join(TESTS)}")
    if correction not in CORRECTIONS:
        raise SharedTaskError(f"unknown correction {correction!r}", hint=f"choose one of {', '.join(CORRECTIONS)}")
    first = next(iter(results.values()))
    task_id = getattr(task, "id", task) or first.task
    for name, res in results.items():
        if res.task != task_id:
            raise SharedTaskError(f"run {name} was evaluated for {res.task}, not {task_id}")
    keys = [m.key for m in first.measures if all(m.key in r.scores for r in results.values())]
    measures = [first.measure(k) for k in keys]
    primary = first.primary.key if first.primary.key in keys else keys[0]
    rows = sorted(((name, dict(r.scores)) for name, r in results.items()),
                  key=lambda item: (-_sort_value(item[1].get(primary)), item[0]))
    board = Leaderboard(task=task_id, measures=measures, primary=primary, rows=rows, test=test, alpha=alpha,
                        correction=correction)
    for key in keys:
        board.best[key] = max(rows, key=lambda item: _sort_value(item[1].get(key)))[0]
    if first.measure(primary).official:
        scores = dict(rows)
        board.agreement = [kendall({r: s.get(m.key) for r, s in scores.items()},
                                   {r: s.get(primary) for r, s in scores.items()}, m.key, primary)
                           for m in measures if not m.official]
    if test:
        for name, res in results.items():
            for key in keys:
                best = board.best[key]
                if name == best:
                    continue
                if key not in res.per_topic or key not in results[best].per_topic:
                    raise SharedTaskError("a significance test needs per-topic values",
                                          hint="evaluate with per_topic=True")
                board.p_values.setdefault(name, {})[key] = paired_p_value(
                    res.per_topic[key], results[best].per_topic[key], test)
        for key in keys:
            board.pairs.extend(_all_pairs(rows, results, key, test, correction))
    return board


def _all_pairs(rows: list[tuple[str, dict[str, float]]], results: dict[str, EvaluationResult], key: str,
               test: str, correction: str) -> list[PairTest]:
    """Every pair of runs on one measure, the better mean first; p adjusted within the measure."""
    order = sorted(rows, key=lambda item: (-_sort_value(item[1].get(key)), item[0]))
    raw: list[tuple[str, str, float, float, int]] = []
    for i, (a, scores_a) in enumerate(order):
        for b, scores_b in order[i + 1:]:
            p, n = paired_p_value(results[a].per_topic[key], results[b].per_topic[key], test)
            raw.append((a, b, scores_a.get(key, math.nan) - scores_b.get(key, math.nan), p, n))
    adjusted = adjust([r[3] for r in raw], correction)
    return [PairTest(key, a, b, diff, p, padj, n) for (a, b, diff, p, n), padj in zip(raw, adjusted)]
