"""The report's table of agreement: how each measure that is not official (EXAM, EXAM Cover,
EXAM qrels, our variants) orders the runs compared with the official primary measure
(Kendall's tau-b, ``sharedtask.evaluate.leaderboard.kendall``)."""

from __future__ import annotations

import math
from html import escape
from typing import Any


def agreement_table(board: Any) -> str:
    """HTML for ``board.agreement`` ('' when there is nothing to compare)."""
    if board is None or not getattr(board, "agreement", None):
        return ""
    labels = {m.key: m.label for m in board.measures}
    rows = []
    for a in board.agreement:
        defined = a.tau is not None and not math.isnan(a.tau)
        tau = f"{a.tau:+.3f}" if defined else escape(a.describe())
        p = f"{a.p:.3g}" if defined else ""
        rows.append(f'<tr class="agreement" data-measure="{escape(a.measure)}"><td>{escape(labels.get(a.measure, a.measure))}'
                    f'</td><td class="num">{tau}</td><td class="num">{p}</td><td class="num">{a.runs}</td></tr>')
    against = escape(labels.get(board.primary, board.primary))
    caption = (f"Kendall's tau-b between the order of the runs by each measure that is not official and by "
               f"{against} (official); 1 = the same order, 0 = unrelated, -1 = reversed.")
    return (f'<p class="pairs-caption">{caption}</p><div class="scroll"><table class="pairs"><thead><tr>'
            f'<th>measure</th><th class="num">tau-b</th><th class="num">p</th><th class="num">runs</th></tr></thead>'
            f'<tbody>{"".join(rows)}</tbody></table></div>')
