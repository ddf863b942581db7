"""The retrievable formulae of an ARQMath formula index, one per visually distinct formula.

Task 2 is scored per visual id: the evaluation keeps only the best-ranked instance
of each visual id (docs/evaluation.md, "ARQMath Task 2"), so returning two
instances of one visual formula only wastes result slots. We therefore index one
representative instance per visual id (the first in file order; the formula files
are read sorted, so the choice is stable) and fall back to the LaTeX string as the
key where a v2-style file has no visual id. Instances flagged ``d``/``dv`` are no
longer in the posts and comment formulae are not part of the task: both are skipped.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import NamedTuple

from sharedtask.formats.formulas import read_formula_index

log = logging.getLogger("baseline")

SKIPPED_TYPES = frozenset({"comment"})
NOT_RETRIEVABLE = frozenset({"d", "dv"})


class Formula(NamedTuple):
    formula_id: str
    post_id: str
    latex: str


def representatives(formulas_dir: Path) -> list[Formula]:
    """One :class:`Formula` per visual id, in file order."""
    seen: set[str] = set()
    out: list[Formula] = []
    total = 0
    for rec in read_formula_index(formulas_dir):
        total += 1
        if rec.type in SKIPPED_TYPES or (rec.issue or "") in NOT_RETRIEVABLE:
            continue
        latex = rec.formula.strip()
        if not latex:
            continue
        key = f"v:{rec.visual_id}" if rec.visual_id else "t:" + " ".join(latex.split())
        if key in seen:
            continue
        seen.add(key)
        out.append(Formula(rec.id, rec.post_id, latex))
    log.info("%d formula instances, %d visually distinct retrievable formulae", total, len(out))
    return out
