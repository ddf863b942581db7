"""Agreement between assessors on the items they both judged (docs/assessment.md).

- Cohen's kappa, graded (unweighted, each grade a category) and binarized by the task's
  ``pooling.relevant_from`` (ARQMath: H+M, grades 2-3 relevant), as the ARQMath overviews
  report it (ARQMath-3 §4.5, §5.4: "four-way" and "H+M binarized" kappa), with the
  confusion matrix of the two assessors.
- With more than two assessors: kappa per pair and their mean (ARQMath averaged over
  assessor pairs), and Krippendorff's alpha over everyone's grades (the ``krippendorff``
  package) at the *ordinal* level: the grades are ordered (0 < 1 < 2 < 3) but nothing says
  that the step from 0 to 1 equals the step from 2 to 3, which the interval level assumes;
  the nominal level would throw the order away. Alpha also copes with items only some
  assessors judged, which kappa cannot.

Kappa is undefined (NaN, ``null`` in JSON) when chance agreement is 1 (both assessors gave
one and the same grade to everything).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path

from sharedtask.errors import FormatError, SharedTaskError
from sharedtask.formats.trec import read_qrels

#: (topic, item) -> grade, one assessor's judgments
Grades = Mapping[tuple[str, str], int]


def cohen_kappa(a: Sequence[int], b: Sequence[int]) -> float:
    """Unweighted Cohen's kappa of two equally long label lists: (po - pe) / (1 - pe)."""
    if len(a) != len(b):
        raise ValueError("both assessors must label the same items")
    n = len(a)
    if n == 0:
        return math.nan
    po = sum(x == y for x, y in zip(a, b)) / n
    count_a: dict[int, int] = {}
    count_b: dict[int, int] = {}
    for x in a:
        count_a[x] = count_a.get(x, 0) + 1
    for y in b:
        count_b[y] = count_b.get(y, 0) + 1
    pe = sum(count_a[k] * count_b.get(k, 0) for k in count_a) / (n * n)
    if pe == 1:
        return math.nan
    return (po - pe) / (1 - pe)


def confusion(a: Sequence[int], b: Sequence[int], labels: Sequence[int]) -> list[list[int]]:
    """Rows: the first assessor's grade; columns: the second's (in ``labels`` order)."""
    index = {label: i for i, label in enumerate(labels)}
    matrix = [[0] * len(labels) for _ in labels]
    for x, y in zip(a, b):
        matrix[index[x]][index[y]] += 1
    return matrix


def krippendorff_alpha(grades: Sequence[Grades], level: str = "ordinal") -> float:
    """Krippendorff's alpha over several assessors (items anyone judged; gaps allowed)."""
    import krippendorff
    import numpy as np

    items = sorted({key for g in grades for key in g})
    if not items:
        return math.nan
    data = np.array([[g.get(key, np.nan) for key in items] for g in grades], dtype=float)
    if len({v for v in data.flatten().tolist() if not math.isnan(v)}) < 2:
        return math.nan  # one value only: alpha is undefined (the package raises)
    return float(krippendorff.alpha(reliability_data=data, level_of_measurement=level))


@dataclass
class PairAgreement:
    """Two assessors on the items both judged."""

    a: str
    b: str
    judged_by_both: int
    cohen_kappa: float
    cohen_kappa_binary: float
    labels: list[int]
    confusion: list[list[int]]
    confusion_binary: list[list[int]]  # labels [0, 1]: not relevant, relevant

    def as_json(self) -> dict[str, object]:
        return {"assessors": [self.a, self.b], "judged_by_both": self.judged_by_both,
                "cohen_kappa": _num(self.cohen_kappa), "cohen_kappa_binary": _num(self.cohen_kappa_binary),
                "confusion": {"labels": self.labels, "matrix": self.confusion},
                "confusion_binary": {"labels": [0, 1], "matrix": self.confusion_binary}}


@dataclass
class Agreement:
    """Agreement of two or more assessors; with two, the top-level figures are the pair's."""

    assessors: list[str]
    relevant_from: int
    pairs: list[PairAgreement]
    krippendorff_alpha: float | None = None  # more than two assessors only
    alpha_level: str = "ordinal"
    judged: dict[str, int] = field(default_factory=dict)  # items per assessor

    @property
    def judged_by_both(self) -> int:
        """Two assessors: items both judged; more: items at least two judged, summed over pairs."""
        return sum(p.judged_by_both for p in self.pairs)

    @property
    def cohen_kappa(self) -> float:
        return _mean([p.cohen_kappa for p in self.pairs])

    @property
    def cohen_kappa_binary(self) -> float:
        return _mean([p.cohen_kappa_binary for p in self.pairs])

    def as_json(self) -> dict[str, object]:
        out: dict[str, object] = {
            "assessors": self.assessors, "judged": self.judged,
            "judged_by_both": self.judged_by_both, "cohen_kappa": _num(self.cohen_kappa),
            "cohen_kappa_binary": _num(self.cohen_kappa_binary), "relevant_from": self.relevant_from,
        }
        if len(self.pairs) == 1:
            first = self.pairs[0].as_json()
            out["confusion"], out["confusion_binary"] = first["confusion"], first["confusion_binary"]
        else:
            out["pairs"] = [p.as_json() for p in self.pairs]
            out["krippendorff_alpha"] = _num(self.krippendorff_alpha)
            out["alpha_level"] = self.alpha_level
        return out


def _mean(values: list[float]) -> float:
    finite = [v for v in values if not math.isnan(v)]
    return sum(finite) / len(finite) if finite else math.nan


def _num(value: float | None) -> float | None:
    return None if value is None or math.isnan(value) else round(value, 6)


def pair_agreement(a_name: str, a: Grades, b_name: str, b: Grades, relevant_from: int,
                   labels: Sequence[int] | None = None) -> PairAgreement:
    both = sorted(set(a) & set(b))
    xs = [a[k] for k in both]
    ys = [b[k] for k in both]
    grades = sorted(set(labels or ()) | set(xs) | set(ys))
    bx = [int(x >= relevant_from) for x in xs]
    by = [int(y >= relevant_from) for y in ys]
    return PairAgreement(a_name, b_name, len(both), cohen_kappa(xs, ys), cohen_kappa(bx, by), grades,
                         confusion(xs, ys, grades), confusion(bx, by, [0, 1]))


def agreement(assessors: Mapping[str, Grades], relevant_from: int,
              labels: Sequence[int] | None = None) -> Agreement:
    """Agreement of the named assessors' judgments (``{name: {(topic, item): grade}}``)."""
    names = list(assessors)
    if len(names) < 2:
        raise SharedTaskError("agreement needs the judgments of at least two assessors")
    pairs = [pair_agreement(x, assessors[x], y, assessors[y], relevant_from, labels)
             for x, y in combinations(names, 2)]
    out = Agreement(names, relevant_from, pairs, judged={n: len(assessors[n]) for n in names})
    if len(names) > 2:
        out.krippendorff_alpha = krippendorff_alpha([assessors[n] for n in names])
    return out


def read_grades(path: Path) -> dict[tuple[str, str], int]:
    """One assessor's qrels-format file as {(topic, item): grade}; an item twice is an error."""
    out: dict[tuple[str, str], int] = {}
    first: dict[tuple[str, str], int] = {}
    for row in read_qrels(path):
        key = (row.topic, row.doc)
        if key in out:
            raise FormatError(path, f"item {row.doc} of topic {row.topic} is judged twice (first on line "
                              f"{first[key]})", line=row.line, hint="one line per judged item and assessor")
        out[key] = row.rel
        first[key] = row.line
    return out
