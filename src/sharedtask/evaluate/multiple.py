"""Multiple-comparison corrections for the leaderboard's all-pairs tests.

With k runs a leaderboard makes k(k-1)/2 paired tests per measure; at alpha = 0.05
some of them come out "significant" by chance alone. Each measure's pairs are one
family, and the family-wise error rate is held at alpha by adjusting the p-values:

* ``holm`` (default): Holm, "A simple sequentially rejective multiple test procedure",
  Scand. J. Statist. 6 (1979): sort the m p-values ascending, p_(i) becomes
  max over j <= i of min(1, (m - j + 1) p_(j)); never rejects less than Bonferroni.
* ``bonferroni``: min(1, m p).

A difference survives correction when its adjusted p-value is below alpha.
"""

from __future__ import annotations

from collections.abc import Sequence

CORRECTIONS = ("holm", "bonferroni")


def bonferroni(p_values: Sequence[float]) -> list[float]:
    m = len(p_values)
    return [min(1.0, m * p) for p in p_values]


def holm(p_values: Sequence[float]) -> list[float]:
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted = [0.0] * m
    running = 0.0
    for position, i in enumerate(order):
        running = max(running, min(1.0, (m - position) * p_values[i]))
        adjusted[i] = running
    return adjusted


def adjust(p_values: Sequence[float], method: str) -> list[float]:
    """Adjusted p-values in the input order."""
    if method == "holm":
        return holm(p_values)
    if method == "bonferroni":
        return bonferroni(p_values)
    from sharedtask.errors import SharedTaskError

    raise SharedTaskError(f"unknown correction {method!r}", hint=f"choose one of {', '.join(CORRECTIONS)}")
