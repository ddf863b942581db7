"""Reproduction measures: how close a re-run came to the original run.

The measures of repro_eval (Breuer et al., "How to Measure the Reproducibility of
System-oriented IR Experiments", SIGIR 2020, https://doi.org/10.1145/3397271.3401036;
the authors' package ``repro-eval`` on PyPI is the reference implementation):

* document order, per topic: Kendall's tau Union (KTU) and rank-biased overlap (RBO);
* effectiveness, per measure: root mean square error (RMSE) of the per-topic scores;
* overall effects, with a baseline: effect ratio (ER) and delta relative improvement (ΔRI);
* a paired two-sided t-test of the per-topic scores.

Why our own lines and not ``repro_eval`` at run time: it imports pandas (undeclared),
GitPython and ir_measures for a few arithmetic lines, and its KTU raises on rankings of
different lengths; ``tests/test_reproduction.py`` checks that these functions agree with
``repro_eval`` on random runs wherever it is defined, and with values computed by hand.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from sharedtask.evaluate.trec import as_float32

#: RBO persistence ``p`` and depth: repro_eval's defaults (``RBO_P``, ``RUN_LENGTH``).
RBO_P = 0.95
DEPTH = 1000


def ranking(docs: Mapping[str, float], depth: int = DEPTH) -> list[str]:
    """A topic's documents in trec_eval's order (score descending as C float, docno descending).

    The order in which trec_eval, and so every official measure, reads the run; repro_eval's
    ``break_ties`` sorts ties the same way (docs/evaluation.md, "How trec_eval reads a run").
    """
    ordered = sorted(docs.items(), key=lambda item: (as_float32(item[1]), item[0]), reverse=True)
    return [doc for doc, _ in ordered[:depth]]


def ktu(original: Sequence[str], reproduced: Sequence[str]) -> float | None:
    """Kendall's tau Union of two rankings of one topic; None when undefined (< 2 positions).

    As repro_eval computes it (``measure/document_order.py``): the documents of both
    rankings are numbered by their position in the sorted union, and tau is taken between
    the two sequences of numbers, rank by rank. Rankings of different lengths are compared
    over their common length (repro_eval raises there).
    """
    n = min(len(original), len(reproduced))
    if n < 2:
        return None
    union = {doc: i for i, doc in enumerate(sorted(set(original[:n]) | set(reproduced[:n])))}
    from scipy.stats import kendalltau  # heavy import, only when orders differ

    x = [union[d] for d in original[:n]]
    y = [union[d] for d in reproduced[:n]]
    if x == y:
        return 1.0
    tau = float(kendalltau(x, y).statistic)
    return None if math.isnan(tau) else round(tau, 14)


def rbo(original: Sequence[str], reproduced: Sequence[str], p: float = RBO_P, depth: int = DEPTH) -> float:
    """Rank-biased overlap of two rankings, truncated at ``depth`` and normalised.

    ``sum_d p^(d-1) |A_d ∩ B_d| / d  /  sum_d p^(d-1)`` for d = 1..k (Webber et al., TOIS 2010,
    the truncated sum; normalised by the weights as Clarke et al., TOIS 2021, and repro_eval
    0.5 do). ``k`` is ``depth`` cut to the longer ranking, so that identical rankings score
    exactly 1 (repro_eval always sums to depth 1000, where two identical 10-document
    rankings score below 1).
    """
    k = min(depth, max(len(original), len(reproduced)))
    if k == 0:
        return 1.0
    seen_a: set[str] = set()
    seen_b: set[str] = set()
    overlap = 0
    score = norm = 0.0
    weight = 1.0
    for d in range(k):
        a = original[d] if d < len(original) else None
        b = reproduced[d] if d < len(reproduced) else None
        if a is not None and a == b:
            overlap += 1
        else:  # rankings hold each document once: a new one overlaps iff the other side had it
            overlap += (a is not None and a in seen_b) + (b is not None and b in seen_a)
        if a is not None:
            seen_a.add(a)
        if b is not None:
            seen_b.add(b)
        score += weight * overlap / (d + 1)
        norm += weight
        weight *= p
    return score / norm


def _paired(original: Mapping[str, float], reproduced: Mapping[str, float]) -> list[tuple[float, float]]:
    """Per-topic pairs over the union of topics; a topic one side lacks scores 0 there.

    A topic missing from a run's per-topic values means the run retrieved nothing judged
    for it: for a reproduction that is a difference, not a topic to leave out.
    """
    topics = sorted(set(original) | set(reproduced))
    return [(original.get(t, 0.0), reproduced.get(t, 0.0)) for t in topics]


def rmse(original: Mapping[str, float], reproduced: Mapping[str, float]) -> float:
    """Root mean square error of the per-topic scores (Breuer et al. 2020, Eq. 4)."""
    pairs = _paired(original, reproduced)
    if not pairs:
        return float("nan")
    return math.sqrt(sum((a - b) ** 2 for a, b in pairs) / len(pairs))


def _mean(values: Mapping[str, float], topics: set[str]) -> float:
    return sum(values.get(t, 0.0) for t in topics) / len(topics) if topics else float("nan")


def effect_ratio(orig_adv: Mapping[str, float], orig_base: Mapping[str, float],
                 rep_adv: Mapping[str, float], rep_base: Mapping[str, float]) -> float | None:
    """ER: mean per-topic improvement of the reproduction over that of the original (Eq. 5).

    1 means the same effect; below 1 a smaller one; None when the original had no effect.
    """
    orig_topics = set(orig_adv) | set(orig_base)
    rep_topics = set(rep_adv) | set(rep_base)
    orig_effect = _mean(orig_adv, orig_topics) - _mean(orig_base, orig_topics)
    rep_effect = _mean(rep_adv, rep_topics) - _mean(rep_base, rep_topics)
    if orig_effect == 0 or math.isnan(orig_effect):
        return None
    return rep_effect / orig_effect


def delta_ri(orig_adv: Mapping[str, float], orig_base: Mapping[str, float],
             rep_adv: Mapping[str, float], rep_base: Mapping[str, float]) -> float | None:
    """ΔRI = RI(original) - RI(reproduction), RI = (mean advanced - mean baseline) / mean baseline (Eq. 6).

    0 means the same relative improvement; None when a baseline's mean is 0.
    """
    def relative(adv: Mapping[str, float], base: Mapping[str, float]) -> float | None:
        topics = set(adv) | set(base)
        b = _mean(base, topics)
        return None if b == 0 or math.isnan(b) else (_mean(adv, topics) - b) / b

    ri_orig, ri_rep = relative(orig_adv, orig_base), relative(rep_adv, rep_base)
    return None if ri_orig is None or ri_rep is None else ri_orig - ri_rep


def paired_ttest(original: Mapping[str, float], reproduced: Mapping[str, float]) -> tuple[float, int]:
    """Two-sided paired t-test over the union of topics (missing = 0); (p, topics).

    The leaderboard's test (``leaderboard.paired_p_value``) on the filled-in pairs: p = 1
    when the two are equal on every topic (no difference to test).
    """
    from sharedtask.evaluate.leaderboard import paired_p_value

    topics = sorted(set(original) | set(reproduced))
    return paired_p_value({t: original.get(t, 0.0) for t in topics},
                          {t: reproduced.get(t, 0.0) for t in topics}, "ttest")


@dataclass(frozen=True)
class Thresholds:
    """When a reproduction that is not byte-identical still counts as reproduced.

    Ours, not the paper's (repro_eval reports the measures and leaves the judgement to the
    reader); each is named in the verdict line and can be changed on the command line.
    """

    min_ktu: float = 0.9  # mean KTU over the topics
    min_rbo: float = 0.9  # mean RBO over the topics
    max_rmse: float = 0.05  # RMSE of every official measure
    alpha: float = 0.05  # the paired t-test must not find a difference at this level

    def __post_init__(self) -> None:
        """A bound no comparison can meet (or always meets) is a typo: refused, naming the option."""
        from sharedtask.errors import SharedTaskError

        for option, value, low, high in (("--min-ktu", self.min_ktu, -1.0, 1.0), ("--min-rbo", self.min_rbo, 0.0, 1.0),
                                         ("--max-rmse", self.max_rmse, 0.0, math.inf), ("--alpha", self.alpha, 0.0, 1.0)):
            if not low <= value <= high:  # also NaN
                bounds = f"at least {low:g}" if high == math.inf else f"between {low:g} and {high:g}"
                raise SharedTaskError(f"{option} {value:g}: must be {bounds}")

    def describe(self) -> str:
        return (f"mean KTU >= {self.min_ktu:g}, mean RBO >= {self.min_rbo:g}, RMSE <= {self.max_rmse:g} "
                f"for every measure, paired t-test p >= {self.alpha:g}")
