"""trec_eval through pytrec_eval, and how trec_eval orders a run.

Scores come from pytrec_eval (trec_eval 9.0.8's own C code), never from a
hand-written nDCG/AP; the aggregate is pytrec_eval's ``compute_aggregated_measure``
(trec_eval's own averaging). Facts: docs/evaluation.md, "How trec_eval reads a run".
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Mapping, Sequence
from itertools import compress, islice, starmap
from operator import eq, itemgetter, lt

# pytrec_eval (and numpy with it, ~0.1 s) is imported where a measure is computed:
# as_float32 serves the CLI's option parsing, which must start fast.

Run = Mapping[str, Mapping[str, float]]
Qrels = Mapping[str, Mapping[str, int]]

_F32 = struct.Struct("f")


def as_float32(value: float) -> float:
    """The score as trec_eval 9.0.8 stores it (C float): scores equal in ~7 digits tie there."""
    try:
        return _F32.unpack(_F32.pack(value))[0]
    except OverflowError:
        return value  # +-inf beyond float range; same ordering either way


def per_topic(qrels: Qrels, run: Run, measures: Iterable[str], relevance_level: int = 1
              ) -> dict[str, dict[str, float]]:
    """pytrec_eval per-topic values, ``{topic: {measure: value}}`` (trec_eval ``-q``).

    ``relevance_level`` is trec_eval's ``-l``; measure names are pytrec_eval's
    (``ndcg``, ``map``, ``P_10``, ``bpref``, ``ndcg_cut_5``). Topics are those of
    the run that the qrels know (trec_eval 9.0.8 without ``-c``).
    """
    import pytrec_eval

    measures = set(measures)
    if not run:
        return {}
    evaluator = pytrec_eval.RelevanceEvaluator(safe_qrels(qrels), measures, relevance_level=relevance_level)
    return evaluator.evaluate(run)


def safe_qrels(qrels: Qrels) -> dict[str, dict[str, int]]:
    """Qrels trec_eval cannot crash on: grades below 0 read as 0 (judged, not relevant).

    trec_eval 9.0.8 (inside pytrec_eval) segfaults in ndcg/ndcg_cut on some qrels with
    negative grades (Touché's -2 for spam, in two topics); it uses negative values itself
    as markers of unjudged documents. For the gain-based measures the tasks declare, a
    negative grade and 0 give the same numbers wherever trec_eval does not crash
    (tests/test_evaluate_fidelity.py checks that in child processes).
    """
    return {t: {d: (r if r >= 0 else 0) for d, r in docs.items()} for t, docs in qrels.items()}


def integer_gains(gains: Mapping[str, float], limit: int = 1000) -> dict[int, int]:
    """A task's gain table (grade -> gain, e.g. LeanSearch's 1 / 0.3 / 0) as integer gains.

    trec_eval reads relevance as integers and uses it as the gain of nDCG; nDCG is a ratio
    of two sums of gains, so multiplying every gain by one constant leaves it unchanged.
    The smallest such multiplier that makes every gain whole lets trec_eval itself compute
    nDCG with the task's gains (1 / 0.3 / 0 -> 10 / 3 / 0).
    """
    for factor in range(1, limit + 1):
        scaled = {int(grade): gain * factor for grade, gain in gains.items()}
        if all(abs(v - round(v)) < 1e-9 for v in scaled.values()):
            return {grade: round(v) for grade, v in scaled.items()}
    raise ValueError(f"gains {dict(gains)} need more than {limit} steps to become whole numbers; "
                     "give gains with at most three decimals")


def apply_gains(qrels: Qrels, gains: Mapping[str, float]) -> dict[str, dict[str, int]]:
    """Qrels whose values are the task's integer-scaled gains; a grade the table omits gains 0."""
    table = integer_gains(gains)
    return {t: {d: table.get(r, 0) for d, r in docs.items()} for t, docs in qrels.items()}


def aggregate(measure: str, values: list[float]) -> float:
    """trec_eval's summary value over the evaluated topics (arithmetic mean for these measures)."""
    import pytrec_eval

    if not values:
        return float("nan")
    return float(pytrec_eval.compute_aggregated_measure(measure, values))


def count_order_changes(entries: Mapping[str, list[tuple[int, float, str]]]) -> tuple[int, int]:
    """Compare the rank column with trec_eval's order, per topic.

    ``entries`` maps a topic to its (rank, score, doc) rows. Returns (topics whose
    order changed because of tied scores, topics whose scores contradict the rank
    column); :func:`order_flags` says when a topic counts.
    """
    tie_topics = 0
    score_topics = 0
    for rows in entries.values():
        by_rank = sorted(rows, key=itemgetter(0))
        tie_changed, score_changed = order_flags([r[1] for r in by_rank], [r[2] for r in by_rank])
        tie_topics += tie_changed
        score_topics += score_changed
    return tie_topics, score_topics


def order_flags(scores: Sequence[float], docs: Sequence[str]) -> tuple[bool, bool]:
    """(tied scores reorder the topic, a score rises down the rank column) for one topic's
    scores and docs in rank-column order. trec_eval ignores the rank column and sorts by
    score descending, ties by docno descending (docs/evaluation.md); a tie is equal
    float32 scores. Whole-list conversions and C-level iterators: no Python per line."""
    if len(scores) < 2:
        return False, False
    try:
        stored = struct.unpack(f"{len(scores)}f", struct.pack(f"{len(scores)}f", *scores))
    except OverflowError:
        stored = tuple(map(as_float32, scores))
    following = islice(stored, 1, None)
    contradicts = any(map(lt, stored, following))
    equal = map(eq, stored, islice(stored, 1, None))
    reordered = any(starmap(lt, compress(zip(docs, islice(docs, 1, None)), equal)))
    return reordered, contradicts
