"""The report's table of all-pairs tests: which differences survive the correction.

One table per task for its primary measure (the measure the leaderboard ranks by);
the JSON of the leaderboard has the pairs of every measure.
"""

from __future__ import annotations

from html import escape
from typing import Any


def pairs_table(board: Any) -> str:
    """HTML for ``board.pairs`` of the primary measure ('' when no tests were run)."""
    if board is None or not getattr(board, "pairs", None):
        return ""
    label = next((m.label for m in board.measures if m.key == board.primary), board.primary)
    rows = []
    for pair in board.pairs_of(board.primary):
        survives = board.survives(pair)
        rows.append(
            f'<tr class="pair" data-a="{escape(pair.run_a)}" data-b="{escape(pair.run_b)}" '
            f'data-survives="{"yes" if survives else "no"}"><td>{escape(pair.run_a)}</td><td>{escape(pair.run_b)}</td>'
            f'<td class="num">{pair.difference:+.4f}</td><td class="num">{pair.p:.3g}</td>'
            f'<td class="num">{pair.p_adjusted:.3g}</td>'
            f'<td>{"<strong>yes</strong>" if survives else "no"}</td></tr>')
    caption = (f"All pairs of runs on {escape(label)}: paired {escape(board.test)}, p-values adjusted by "
               f"{escape(board.correction)} over the {len(rows)} pair(s) of this measure; a difference survives "
               f"when its adjusted p is below {board.alpha:g}.")
    return (f'<p class="pairs-caption">{caption}</p><div class="scroll"><table class="pairs"><thead><tr>'
            f'<th>run A</th><th>run B</th><th class="num">A − B</th><th class="num">p</th>'
            f'<th class="num">p ({escape(board.correction)})</th><th>survives</th></tr></thead>'
            f'<tbody>{"".join(rows)}</tbody></table></div>')
