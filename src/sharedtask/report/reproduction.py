"""The report's "Reproduction" part: for each re-run run, the verdict and a chart of the
per-topic differences (reproduced − original) of the primary measure, plus KTU and RBO.

Shown only when some run of the task carries a comparison (``RunEntry.reproduction``,
the JSON of ``sharedtask.evaluate.compare.Comparison``), e.g. after ``sharedtask
reproduce --all --report FILE``.
"""

from __future__ import annotations

from html import escape
from typing import Any

from sharedtask.report.chart import Series, color, grouped_bars, natural_key
from sharedtask.report.model import TaskSection


def _num(value: Any) -> str:
    return "—" if value is None else f"{value:.4f}"


def _primary(data: dict[str, Any]) -> dict[str, Any] | None:
    measures = data.get("measures") or []
    return next((m for m in measures if m.get("primary")), measures[0] if measures else None)


def reproduction_part(section: TaskSection) -> str:
    """HTML of the reproduction part ('' when no run of the section was re-run)."""
    runs = [r for r in section.runs if r.reproduction]
    if not runs:
        return ""
    items = []
    for index, run in enumerate(runs):
        data = run.reproduction or {}
        order = data.get("order") or {}
        verdict = str(data.get("verdict", ""))
        head = (f'<p class="verdict" data-verdict="{escape(verdict)}"><strong>{escape(run.name)}</strong>: '
                f'{escape(str(data.get("verdict_line", verdict)))}</p>')
        facts = (f'<p class="repro-facts">mean KTU {_num(order.get("mean_ktu"))} · mean RBO '
                 f'{_num(order.get("mean_rbo"))} (p = {order.get("rbo_p")}, depth {order.get("depth")})</p>')
        measure = _primary(data)
        chart = ""
        if measure is not None:
            diffs = {t: v for t, v in (measure.get("per_topic_difference") or {}).items() if v is not None}
            topics = sorted(diffs, key=natural_key)
            label = str(measure.get("label", measure.get("key")))
            series = [Series(f"{label}: reproduced − original", color(index), diffs)]
            svg = grouped_bars(f"{label}: reproduced − original per topic", f"Δ {label}", topics, series)
            chart = (f'<figure class="chart-box repro-chart" data-run="{escape(run.name)}"><figcaption>'
                     f'{escape(label)} <span>reproduced − original · {len(topics)} topics · RMSE '
                     f'{_num(measure.get("rmse"))}</span></figcaption><div class="scroll">{svg}</div></figure>')
        items.append(f'<div class="reproduction" data-run="{escape(run.name)}">{head}{facts}{chart}</div>')
    return f'<h3>Reproduction</h3>{"".join(items)}'
