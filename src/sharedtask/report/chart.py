"""Grouped bar charts as inline SVG: topics on the x axis, one bar per run.

Hand-written because the report must be one offline file without JavaScript;
plotting libraries either need JS (plotly, vega) or a heavy dependency and an
image encoder (matplotlib). Every value is a ``<title>`` tooltip, so the exact
number is one hover away.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from html import escape

#: Okabe-Ito plus Tableau colours: distinguishable with common colour blindness.
PALETTE: tuple[str, ...] = (
    "#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00",
    "#F0E442", "#000000", "#8C564B", "#7F7F7F", "#BCBD22", "#17BECF",
)

CHAR_W = 6.6  # average glyph width at 11px, for layout estimates
PLOT_H = 220
MARGIN_L, MARGIN_R, MARGIN_T = 60, 16, 12
PLOT_MIN_W = 460.0
BAR_MAX_W = 26.0


@dataclass(frozen=True)
class Series:
    """One run's per-topic values for one measure."""

    name: str
    color: str
    values: dict[str, float]


def color(index: int) -> str:
    return PALETTE[index % len(PALETTE)]


def natural_key(text: str) -> list[object]:
    """Sort "A.9" before "A.10" and "2" before "10" (topic ids)."""
    return [(0, int(part), "") if part.isdigit() else (1, 0, part) for part in re.split(r"(\d+)", text) if part]


def nice_ceiling(value: float) -> float:
    """Smallest 1/2/2.5/5 x 10^k at or above ``value`` (axis maximum)."""
    if value <= 0:
        return 1.0
    exp = math.floor(math.log10(value))
    for step in (1, 2, 2.5, 5, 10):
        candidate = step * 10**exp
        if candidate >= value - 1e-12:
            return candidate
    return 10 ** (exp + 1)


def _fmt(value: float) -> str:
    return f"{value:.4f}".rstrip("0").rstrip(".") if math.isfinite(value) else str(value)


def _num(value: float) -> str:
    return f"{value:.1f}".rstrip("0").rstrip(".")


@dataclass(frozen=True)
class _Frame:
    """Where everything of one chart goes: bar and group widths, plot box, value scale."""

    bar_w: float
    group_w: float
    inset: float
    rotate: bool
    plot_w: float
    top: float
    width: float
    height: float
    y_min: float
    y_max: float
    legend: list[tuple[float, float, Series]]

    def y_of(self, v: float) -> float:
        return self.top + PLOT_H * (self.y_max - v) / (self.y_max - self.y_min)


def _frame(topics: list[str], series: list[Series]) -> _Frame:
    n = max(len(series), 1)
    bar_w = 14.0 if n <= 3 else max(3.0, 42.0 / n) if n <= 14 else 3.0
    group_gap = 10.0
    group_w = n * bar_w + group_gap
    if len(topics) * group_w < PLOT_MIN_W:  # few topics: widen the bars to fill the plot
        group_w = PLOT_MIN_W / max(len(topics), 1)
        bar_w = min(BAR_MAX_W, (group_w - group_gap) / n)
    longest = max((len(t) for t in topics), default=1)
    rotate = longest * CHAR_W > group_w - 2
    label_h = (longest * CHAR_W * 0.72 + 10) if rotate else 16
    plot_w = max(len(topics) * group_w, PLOT_MIN_W)
    legend: list[tuple[float, float, Series]] = []
    x, y = 0.0, 0.0
    for s in series:
        item_w = 16 + len(s.name) * CHAR_W + 18
        if x > 0 and x + item_w > plot_w:
            x, y = 0.0, y + 16
        legend.append((x, y, s))
        x += item_w
    top = MARGIN_T + ((y + 16 + 8) if series else 0)
    values = [v for s in series for v in s.values.values() if math.isfinite(v)]
    y_max = nice_ceiling(max(values, default=0.0))
    y_min = -nice_ceiling(-min(values)) if values and min(values) < 0 else 0.0
    return _Frame(bar_w, group_w, (group_w - n * bar_w) / 2, rotate, plot_w, top, MARGIN_L + plot_w + MARGIN_R,
                  top + PLOT_H + label_h + 30, y_min, y_max, legend)


def _legend(f: _Frame) -> list[str]:
    out = [f'<g class="legend" transform="translate({MARGIN_L},{MARGIN_T})">']
    for lx, ly, s in f.legend:
        out.append(
            f'<g class="legend-item"><rect x="{_num(lx)}" y="{_num(ly)}" width="11" height="11" rx="2" fill="{s.color}"/>'
            f'<text x="{_num(lx + 16)}" y="{_num(ly + 10)}">{escape(s.name)}</text></g>'
        )
    out.append("</g>")
    return out


def _y_axis(f: _Frame, axis_label: str) -> list[str]:
    out = ['<g class="axis y-axis">']
    ticks = 5
    for i in range(ticks + 1):
        v = f.y_min + (f.y_max - f.y_min) * i / ticks
        ty = f.y_of(v)
        out.append(f'<line class="grid" x1="{MARGIN_L}" x2="{_num(MARGIN_L + f.plot_w)}" y1="{_num(ty)}" y2="{_num(ty)}"/>')
        out.append(f'<text x="{MARGIN_L - 6}" y="{_num(ty + 4)}" text-anchor="end">{_fmt(v)}</text>')
    mid = f.top + PLOT_H / 2
    out.append(
        f'<text class="axis-label" x="14" y="{_num(mid)}" text-anchor="middle" '
        f'transform="rotate(-90 14 {_num(mid)})">{escape(axis_label)}</text>'
    )
    out.append("</g>")
    return out


def _bars(f: _Frame, topics: list[str], series: list[Series]) -> list[str]:
    out = ['<g class="bars">']
    zero_y = f.y_of(0.0)
    for ti, topic in enumerate(topics):
        gx = MARGIN_L + ti * f.group_w + f.inset
        for si, s in enumerate(series):
            if topic not in s.values:
                continue
            v = s.values[topic]
            vy = f.y_of(v) if math.isfinite(v) else zero_y  # nan/inf: a stub at zero, the tooltip tells
            y0, h = (vy, zero_y - vy) if vy <= zero_y else (zero_y, vy - zero_y)
            if h < 1.5:  # keep zero bars visible (and hoverable) as a thin stub
                y0, h = zero_y - 1.5, 1.5
            out.append(
                f'<rect class="bar" x="{_num(gx + si * f.bar_w)}" y="{_num(y0)}" width="{_num(max(f.bar_w - 1, 1.5))}" '
                f'height="{_num(h)}" fill="{s.color}"><title>{escape(s.name)} · topic {escape(topic)}: '
                f"{_fmt(v)}</title></rect>"
            )
    out.append("</g>")
    return out


def _x_axis(f: _Frame, topics: list[str]) -> list[str]:
    base = f.top + PLOT_H
    zero_y = f.y_of(0.0)
    out = ['<g class="axis x-axis">',
           f'<line class="baseline" x1="{MARGIN_L}" x2="{_num(MARGIN_L + f.plot_w)}" y1="{_num(zero_y)}" y2="{_num(zero_y)}"/>']
    for ti, topic in enumerate(topics):
        cx = MARGIN_L + ti * f.group_w + f.group_w / 2
        if f.rotate:
            out.append(
                f'<text x="{_num(cx)}" y="{_num(base + 12)}" text-anchor="end" '
                f'transform="rotate(-45 {_num(cx)} {_num(base + 12)})">{escape(topic)}</text>'
            )
        else:
            out.append(f'<text x="{_num(cx)}" y="{_num(base + 14)}" text-anchor="middle">{escape(topic)}</text>')
    out.append(
        f'<text class="axis-label" x="{_num(MARGIN_L + f.plot_w / 2)}" y="{_num(f.height - 8)}" '
        f'text-anchor="middle">topic</text>'
    )
    out.append("</g>")
    return out


def grouped_bars(title: str, axis_label: str, topics: list[str], series: list[Series]) -> str:
    """SVG markup of a grouped bar chart (class "chart", one ``rect.bar`` per value)."""
    f = _frame(topics, series)
    head = [
        f'<svg class="chart" xmlns="http://www.w3.org/2000/svg" width="{_num(f.width)}" height="{_num(f.height)}" '
        f'viewBox="0 0 {_num(f.width)} {_num(f.height)}" role="img" aria-label="{escape(title)}">',
        f"<title>{escape(title)}</title>",
    ]
    return "".join([*head, *_legend(f), *_y_axis(f, axis_label), *_bars(f, topics, series), *_x_axis(f, topics), "</svg>"])
