"""Render report sections as one self-contained HTML page and write it atomically.

The page has inline CSS and inline SVG only: no JavaScript, no external URL, so it
opens offline and can be mailed or archived as a single file. Every string that
comes from a run (names, images, commands, findings, logs, notes) is escaped with
:func:`html.escape`: submissions are untrusted.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections import defaultdict
from datetime import datetime, timezone
from html import escape
from importlib.resources import files
from pathlib import Path
from typing import Any

from sharedtask import __version__
from sharedtask.findings import Severity
from sharedtask.findings.output import group_findings
from sharedtask.report.chart import Series, color, grouped_bars, natural_key
from sharedtask.report.model import RunEntry, TaskSection, leaderboard
from sharedtask.report.agreement import agreement_table
from sharedtask.report.pairs import pairs_table
from sharedtask.report.reproduction import reproduction_part
from sharedtask.untrusted import printable

MAX_EXAMPLES = 3  # example locations shown per finding code
LOG_TAIL_LINES = 40  # per stream, when the tail is read from the sandbox's log files
LOG_TAIL_BYTES = 16 * 1024

# Record keys the sandbox may use for the same fact; the first present one wins.
_FIRST_KEYS = ("status", "exit_code", "wall_seconds", "peak_memory", "limits", "image", "command")


def e(value: object) -> str:
    """Escape anything for HTML text and attribute values."""
    return escape(str(value), quote=True)


def fmt_score(value: float | None) -> str:
    if value is None:
        return "—"
    if value != value:
        return "nan"
    return f"{value:.4f}"


def fmt_when(value: datetime | None, zone: Any = None) -> str:
    """A time as ``<time>``, to the second: UTC, and the reader's ``zone`` (a ``ZoneInfo``) beside it
    when one is chosen, so a date is never ambiguous. A naive ``value`` is UTC (as the service stores it)."""
    if value is None:
        return "—"
    utc = (value.replace(tzinfo=timezone.utc) if value.tzinfo is None else value.astimezone(timezone.utc))
    utc = utc.replace(microsecond=0)
    text = utc.strftime("%Y-%m-%d %H:%M:%S UTC")
    if zone is not None:
        local = utc.astimezone(zone)
        text += f" ({local.strftime('%Y-%m-%d %H:%M:%S')} {getattr(zone, 'key', None) or local.tzname()})"
    return f'<time datetime="{utc.isoformat()}">{e(text)}</time>'


def fmt_bytes(value: float) -> str:
    """Sizes in one style across the CLI and the report (binary units, :func:`units.format_size`)."""
    from sharedtask.units import format_size

    return format_size(int(value))


def fmt_seconds(value: float) -> str:
    value = float(value)
    if value < 60:
        return f"{value:.2f} s"
    if value < 3600:
        minutes, seconds = divmod(round(value), 60)
        return f"{minutes} min {seconds} s" if seconds else f"{minutes} min"
    hours, rest = divmod(round(value), 3600)
    return f"{hours} h {rest // 60} min" if rest // 60 else f"{hours} h"


def wall_time(record: dict[str, Any]) -> float | None:
    """The run's wall time (``wall_seconds`` in run-record.json), None when the record has none."""
    value = record.get("wall_seconds")
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


# --------------------------------------------------------------------------- sections


def _measure_columns(section: TaskSection) -> list[tuple[str, str, str]]:
    """(key, label, procedure) of the declared measures plus any extra score keys."""
    cols = [(m.key, m.label, m.procedure) for m in section.task.measures]
    known = {c[0] for c in cols}
    extra = sorted({k for r in section.runs for k in (*r.scores, *r.per_topic)} - known)
    return cols + [(k, k, "reported by the evaluator") for k in extra]


def _measure_description(spec: Any) -> str:
    """A declared measure: its procedure, the official source and the averaging (sharedtask.measures)."""
    from sharedtask import measures

    entry = measures.get(spec.id)
    return (f"<dt>{e(spec.label)}</dt><dd>{e(spec.procedure)}<br><span class=\"sub\">source: {e(entry.source)} · "
            f"averaging: {e(measures.AVERAGING[entry.averaging])}</span></dd>")


def _task_anchor(section: TaskSection) -> str:
    return "task-" + "".join(c if c.isalnum() or c in "-_" else "-" for c in section.task.id)


#: statuses of a run that has not ended (the service's queue): neither failed nor ranked yet
WAITING = frozenset({"queued", "running"})


def _badge(kind: str, text: str | None = None) -> str:
    css = kind.replace(" ", "-")
    return f'<span class="badge {e(css)}">{e(text if text is not None else kind)}</span>'


def _outcome(run: RunEntry) -> str:
    parts = [_badge(run.verdict)]
    errors, warnings = run.count(Severity.ERROR), run.count(Severity.WARNING)
    if errors:
        parts.append(f'<span class="badge error n" title="validation errors">{errors} error{"s" * (errors != 1)}</span>')
    if warnings:
        parts.append(f'<span class="badge warning n" title="validation warnings">{warnings} warning{"s" * (warnings != 1)}</span>')
    return "".join(parts)


def _leaderboard(section: TaskSection, columns: list[tuple[str, str, str]], note_ids: dict[int, list[int]]) -> str:
    primary = section.task.primary_measure.key
    order = leaderboard(section)
    best: dict[str, float] = {}
    for _, run in order:
        if run.ranked:
            for key, _, _ in columns:
                v = run.scores.get(key)
                if v is not None and v == v and (key not in best or v > best[key]):
                    best[key] = v
    # "best" marks one row: a value shared by several ranked runs (all 0.0000, a tie) marks none
    shared = {key for key, top in best.items()
              if sum(1 for _, r in order if r.ranked and r.scores.get(key) == top) > 1}
    best = {key: top for key, top in best.items() if key not in shared}
    head = ['<th scope="col">#</th><th scope="col">run</th><th scope="col">outcome</th>']
    for key, label, procedure in columns:
        cls = "num primary" if key == primary else "num"
        head.append(f'<th scope="col" class="{cls}" title="{e(procedure)}">{e(label)}</th>')
    head.append('<th scope="col" class="num">wall time</th>')
    dated = any(run.submitted is not None for _, run in order)  # the service's boards: when each run came
    if dated:
        head.append('<th scope="col">submitted</th>')
    rows = []
    for rank, run in order:
        cells = [f'<td class="rank" data-label="#">{rank if rank is not None else "–"}</td>']
        # one mark with the numbers apart ("hybrid-rrf⁹¹⁰" read as note 910), each a link to its note
        anchor = _task_anchor(section)
        numbers = ", ".join(f'<a href="#{anchor}-note-{n}">{n}</a>' for n in note_ids.get(id(run), []))
        refs = f'<sup class="note-ref" title="notes below the table">[{numbers}]</sup>' if numbers else ""
        more = (f' <a class="more" href="{e(run.more[0])}">{e(run.more[1])}</a>' if run.more else "")
        cells.append(f'<td class="name">{e(run.label)}{refs}{more}<span class="image mono">{e(run.image)}</span></td>')
        cells.append(f'<td data-label="outcome">{_outcome(run)}</td>')
        for key, label, _ in columns:
            v = run.scores.get(key)
            cls = ["num"]
            if key == primary:
                cls.append("primary")
            if run.ranked and v is not None and best.get(key) == v:
                cls.append("best")
            cells.append(f'<td class="{" ".join(cls)}" data-measure="{e(key)}" data-label="{e(label)}">'
                         f'{fmt_score(v)}</td>')
        wall = wall_time(run.record)
        cells.append(f'<td class="num" data-label="wall time">{fmt_seconds(wall) if wall is not None else "—"}</td>')
        if dated:
            cells.append(f'<td class="submitted" data-label="submitted">{fmt_when(run.submitted, section.zone)}</td>')
        ranked = "yes" if run.ranked else "no"
        rank_attr = f' data-rank="{rank}"' if rank is not None else ""
        rows.append(f'<tr class="run" data-run="{e(run.name)}" data-ranked="{ranked}"{rank_attr} '
                    f'data-status="{e(run.status)}">{"".join(cells)}</tr>')
    return (f'<div class="scroll"><table class="leaderboard"><thead><tr>{"".join(head)}</tr></thead>'
            f'<tbody>{"".join(rows)}</tbody></table></div>')


def _notes(section: TaskSection) -> tuple[dict[int, list[int]], str]:
    """Numbered evaluator notes: footnote numbers per run, and the list itself."""
    ids: dict[int, list[int]] = defaultdict(list)
    items = []
    for _, run in leaderboard(section):
        for note in run.notes:
            items.append(f'<li id="{_task_anchor(section)}-note-{len(items) + 1}"><strong>{e(run.name)}</strong>: '
                         f'{e(note)}</li>')
            ids[id(run)].append(len(items))
    return ids, (f'<ol class="notes">{"".join(items)}</ol>' if items else "")


def _cards(section: TaskSection) -> str:
    runs = section.runs
    ranked = sum(r.ranked for r in runs)
    invalid = sum(r.status == "success" and r.valid is False for r in runs)
    waiting = sum(r.status in WAITING for r in runs)  # a queued run has not failed (it showed "1 FAILED")
    failed = sum(r.status != "success" and r.status not in WAITING for r in runs)
    order = leaderboard(section)
    key = section.task.primary_measure.key
    best = next((r for rank, r in order if rank == 1), None)
    cards = [
        f'<div class="card"><span class="n">{len(runs)}</span><span class="l">runs</span></div>',
        f'<div class="card good"><span class="n">{ranked}</span><span class="l">ranked</span></div>',
        f'<div class="card{" bad" if invalid else ""}"><span class="n">{invalid}</span><span class="l">invalid</span></div>',
        f'<div class="card{" bad" if failed else ""}"><span class="n">{failed}</span><span class="l">failed</span></div>',
    ]
    if waiting:
        cards.append(f'<div class="card"><span class="n">{waiting}</span><span class="l">queued or running</span></div>')
    if best is not None:
        cards.append(f'<div class="card best"><span class="n">{fmt_score(best.scores.get(key))}</span>'
                     f'<span class="l">best {e(section.task.primary_measure.label)}</span>'
                     f'<span class="who">{e(best.name)}</span></div>')
    return f'<div class="cards">{"".join(cards)}</div>'


def _charts(section: TaskSection, columns: list[tuple[str, str, str]]) -> str:
    order = [r for _, r in leaderboard(section)]
    colors = {id(r): color(i) for i, r in enumerate(order)}
    out = []
    for key, label, procedure in columns:
        runs = [r for r in order if r.per_topic.get(key)]
        if not runs:
            continue
        topics = sorted({t for r in runs for t in r.per_topic[key]}, key=natural_key)
        series = [Series(r.name, colors[id(r)], dict(r.per_topic[key])) for r in runs]
        title = f"{label} per topic ({section.task.id})"
        svg = grouped_bars(title, label, topics, series)
        caption = f'{e(label)} <span>per topic · {len(topics)} topics × {len(runs)} runs · {e(procedure)}</span>'
        if all(v == 0 for r in runs for v in r.per_topic[key].values()):
            # a chart of empty bars takes a screen to say "0 everywhere": one line, opened on demand
            out.append(f'<details class="chart-box folded" data-measure="{e(key)}"><summary>{caption} '
                       f'<span class="zero">· 0 on every topic for every run</span></summary>'
                       f'<div class="scroll">{svg}</div></details>')
            continue
        out.append(f'<figure class="chart-box" data-measure="{e(key)}"><figcaption>{caption}</figcaption>'
                   f'<div class="scroll">{svg}</div></figure>')
    if out:
        return f'<div class="charts">{"".join(out)}</div>'
    if any(r.scores for r in order):  # scored, but per topic not shown to this viewer (a blind service)
        return '<p class="empty">Per-topic scores are not shown here.</p>'
    return '<p class="empty">No per-topic scores: no run has been scored yet.</p>'


def _findings(section: TaskSection) -> str:
    out = []
    for _, run in leaderboard(section):
        groups = group_findings(run.findings)
        errors, warnings = run.count(Severity.ERROR), run.count(Severity.WARNING)
        if run.valid is None and not run.findings:
            summary = "not validated"
        else:
            summary = f"{errors} error(s), {warnings} warning(s), {len(run.findings) - errors - warnings} info"
        rows = []
        for sev, code, items, total in groups:
            first = items[0]
            examples = []
            for f in items[:MAX_EXAMPLES]:
                where = f'<code>{e(f.location)}</code> ' if f.location else ""
                examples.append(f"<li>{where}{e(f.message)}</li>")
            more = f"<li>… and {total - MAX_EXAMPLES:,} more</li>" if total > MAX_EXAMPLES else ""
            hint = f'<div class="hint">hint: {e(first.hint)}</div>' if first.hint else ""
            rows.append(f'<tr class="finding" data-code="{e(code)}"><td>{_badge(sev.value)}</td>'
                        f'<td class="code mono">{e(code)}</td><td class="num">{total:,}</td>'
                        f'<td>{e(first.message)}{hint}<ul class="examples">{"".join(examples)}{more}</ul></td></tr>')
        body = (f'<table class="findings"><thead><tr><th>severity</th><th>code</th><th class="num">count</th>'
                f'<th>message and first examples</th></tr></thead><tbody>{"".join(rows)}</tbody></table>'
                if rows else '<p class="empty">No findings.</p>')
        is_open = " open" if errors else ""
        out.append(f'<details class="run-findings" data-run="{e(run.name)}"{is_open}><summary>{e(run.name)} '
                   f'{_badge(run.verdict)}<span class="sub">{e(summary)}</span></summary>'
                   f'<div class="body">{body}</div></details>')
    return "".join(out)


def _value(key: str, value: Any) -> str:
    """One record value as HTML: sizes and durations readable, logs as pre blocks."""
    lowered = key.lower()
    if isinstance(value, bool) or value is None:
        return e(value)
    if isinstance(value, (int, float)):
        if "bytes" in lowered or "memory" in lowered or lowered in ("max_output", "output_size"):
            return f"{fmt_bytes(value)} <span class=\"sub mono\">({e(value)})</span>"
        if "seconds" in lowered or lowered in ("timeout", "wall_time", "duration", "elapsed"):
            return fmt_seconds(value)
        return e(value)
    if isinstance(value, dict):
        return _kv(value)
    if isinstance(value, list) and all(isinstance(v, str) for v in value) and "tail" in lowered:
        return f'<pre class="log">{e(printable(chr(10).join(value), None, keep_newlines=True))}</pre>'
    if isinstance(value, str):
        value = printable(value, None, keep_newlines=True)  # a record quotes the container: no terminal controls
        if "\n" in value or "tail" in lowered:
            return f'<pre class="log">{e(value)}</pre>'
        return f'<span class="mono">{e(value)}</span>'
    return f'<span class="mono">{e(json.dumps(value, default=str, ensure_ascii=False))}</span>'


def _is_log(key: str, value: Any) -> bool:
    lowered = key.lower()
    return isinstance(value, (str, list)) and "tail" in lowered


def _kv(record: dict[str, Any]) -> str:
    keys = [k for k in _FIRST_KEYS if k in record]
    rest = sorted(k for k in record if k not in keys)
    keys += [k for k in rest if not _is_log(k, record[k])] + [k for k in rest if _is_log(k, record[k])]
    rows = "".join(f"<tr><th>{e(k.replace('_', ' '))}</th><td>{_value(k, record[k])}</td></tr>" for k in keys)
    return f'<table class="kv">{rows}</table>'


def tail_of_files(logs: Any, lines: int = LOG_TAIL_LINES) -> list[str]:
    """The last lines of the sandbox's stdout/stderr logs when the record names them.

    Why: a sandbox run record stores log paths, not log text; the report must stay
    one file, so the tail is copied in at render time (bounded, never the whole log).
    """
    if not isinstance(logs, dict):
        return []
    out: list[str] = []
    for stream in ("stdout", "stderr"):
        name = logs.get(stream)
        if not isinstance(name, str):
            continue
        path = Path(name)
        try:
            with path.open("rb") as fh:
                fh.seek(0, os.SEEK_END)
                fh.seek(max(0, fh.tell() - LOG_TAIL_BYTES))
                text = fh.read().decode("utf-8", "replace")
        except OSError:
            continue
        prefix = "" if stream == "stdout" else "[stderr] "
        out.extend(prefix + line for line in text.splitlines()[-lines:])
    return out


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _dig(record: dict[str, Any], *paths: str) -> Any:
    """The first value found under one of the dotted paths (record layouts differ)."""
    for dotted in paths:
        node: Any = record
        for part in dotted.split("."):
            node = node.get(part) if isinstance(node, dict) else None
        if node is not None:
            return node
    return None


def _summary_rows(run: RunEntry) -> list[tuple[str, str]]:
    """The facts a person looks for first, from a sandbox record or a flat one."""
    rec = run.record
    rows: list[tuple[str, str]] = [("status", f"{_badge(run.status)} {e(rec.get('message') or '')}")]
    exit_code = rec.get("exit_code")
    rows.append(("exit code", e(exit_code) if exit_code is not None else "—"))
    limits = _dig(rec, "policy.limits", "limits")
    limits = limits if isinstance(limits, dict) else {}
    wall = wall_time(rec)
    timeout = _number(limits.get("timeout"))
    rows.append(("wall time", (fmt_seconds(wall) if wall is not None else "—")
                 + (f" <span class=\"sub\">of {fmt_seconds(timeout)}</span>" if timeout else "")))
    peak = _number(_dig(rec, "peak_memory.bytes", "peak_memory_bytes", "peak_memory"))
    memory = _number(limits.get("memory"))
    rows.append(("peak memory", (fmt_bytes(peak) if peak is not None else "—")
                 + (f" <span class=\"sub\">of {fmt_bytes(memory)}</span>" if memory else "")))
    if limits:
        parts = []
        for key, label, fmt in (("memory", "memory", fmt_bytes), ("cpus", "cpus", lambda v: f"{v:g}"),
                                ("timeout", "timeout", fmt_seconds), ("pids", "pids", lambda v: f"{v:g}"),
                                ("max_output", "output", fmt_bytes)):
            value = _number(limits.get(key))
            if value is not None:
                parts.append(f"{label} {fmt(value)}")
        network = _dig(rec, "policy.network", "network")
        if network is not None:
            parts.append(f"network {network}")
        rows.append(("limits", e(" · ".join(parts))))
    out_bytes = _number(_dig(rec, "output.bytes", "output_bytes"))
    if out_bytes is not None:
        rows.append(("output size", fmt_bytes(out_bytes)))
    rows.append(("image", f'<span class="mono">{e(run.image)}</span>'))
    rows.append(("command", f'<span class="mono">{e(run.command)}</span>' if run.command is not None
                 else '<span class="sub">(image default: ENTRYPOINT/CMD)</span>'))
    reproduce = rec.get("reproduce")
    if isinstance(reproduce, str):
        rows.append(("reproduce", f'<pre class="log">{e(reproduce)}</pre>'))
    return rows


def _log_tail(record: dict[str, Any]) -> list[str]:
    """The last log lines, terminal controls shown as ``\\xNN`` (a page must not carry ANSI sequences)."""
    for key, value in record.items():
        if _is_log(key, value):
            lines = value.splitlines() if isinstance(value, str) else [str(v) for v in value]
            break
    else:
        lines = tail_of_files(record.get("logs"))
    return [printable(line, None) for line in lines]


def _records(section: TaskSection) -> str:
    out = []
    for _, run in leaderboard(section):
        record = dict(run.record)
        validation = record.get("validation")
        if isinstance(validation, dict):  # the findings have their own part of the page
            record["validation"] = " ".join(str(validation[k]) for k in ("status", "reason") if validation.get(k))
        summary = "".join(f"<tr><th>{e(k)}</th><td>{v}</td></tr>" for k, v in _summary_rows(run))
        tail = _log_tail(run.record)
        tail_html = (f'<div class="tail-title">log tail</div><pre class="log">{e(chr(10).join(tail))}</pre>'
                     if tail else '<p class="empty">No log output.</p>')
        full = (f'<details class="full-record"><summary>full run record</summary><div class="body">{_kv(record)}'
                f"</div></details>" if record else "")
        wall = wall_time(run.record)
        sub = f"exit code {run.record.get('exit_code', '—')}" + (f" · {fmt_seconds(wall)}" if wall is not None else "")
        out.append(f'<details class="record" data-run="{e(run.name)}"><summary>{e(run.name)} {_badge(run.status)}'
                   f'<span class="sub">{e(sub)}</span></summary><div class="body"><table class="kv">{summary}</table>'
                   f"{tail_html}{full}</div></details>")
    return "".join(out)


def _section(section: TaskSection) -> str:
    task = section.task
    columns = _measure_columns(section)
    note_ids, notes = _notes(section)
    measures = "".join(_measure_description(m) for m in task.measures)
    meta = (f"<code>{e(task.id)}</code> · {e(task.edition)} ({e(task.year)}) · run format "
            f"<code>{e(task.output.format)}</code> · ranked by <strong>{e(task.primary_measure.label)}</strong>")
    pairs = pairs_table(section.board)
    agreement = agreement_table(section.board)
    if not section.runs:
        body = '<p class="empty">No runs for this task.</p>'
    else:
        body = (f"{_cards(section)}<h3>Leaderboard</h3>{_leaderboard(section, columns, note_ids)}{notes}"
                f'<dl class="measures">{measures}</dl>'
                + (f"<h3>Significance</h3>{pairs}" if pairs else "")
                + (f"<h3>Agreement with the official measure</h3>{agreement}" if agreement else "")
                + f"<h3>Per-topic scores</h3>{_charts(section, columns)}"
                f"{reproduction_part(section)}"
                f"<h3>Validation findings</h3>{_findings(section)}"
                f"<h3>Run records</h3>{_records(section)}")
    return (f'<section class="task" id="{_task_anchor(section)}" data-task="{e(task.id)}"><h2>{e(task.title)}</h2>'
            f'<p class="task-meta">{meta}</p>{body}</section>')


# --------------------------------------------------------------------------- page


def stylesheet() -> str:
    """The report's CSS, which the service's pages share."""
    return files("sharedtask.report").joinpath("report.css").read_text(encoding="utf-8")


def render_html(sections: list[TaskSection], *, title: str = "sharedtask report",
                generated: datetime | None = None) -> str:
    """The whole report page as a string."""
    when = (generated or datetime.now(timezone.utc)).replace(microsecond=0)
    n_runs = sum(len(s.runs) for s in sections)
    toc = "".join(f'<a href="#{_task_anchor(s)}">{e(s.task.id)} <span>({len(s.runs)})</span></a>' for s in sections)
    body = "".join(_section(s) for s in sections) or '<p class="empty">No tasks in this report.</p>'
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<meta name="generator" content="sharedtask {e(__version__)}">'
        f'<meta name="sharedtask-tasks" content="{e(" ".join(s.task.id for s in sections))}">'
        f"<title>{e(title)}</title><style>{stylesheet()}</style></head><body>"
        f'<header class="page"><h1>{e(title)}</h1>'
        f'<p class="meta">{len(sections)} task(s) · {n_runs} run(s) · generated {e(when.isoformat(sep=" "))} '
        f"by sharedtask {e(__version__)}</p><nav class=\"toc\">{toc}</nav></header>"
        f"<main>{body}</main>"
        "<footer>Scores follow each task's declared procedure; hover a bar for its exact value. "
        "Unranked runs failed in the sandbox or were rejected by the validator.</footer>"
        "</body></html>\n"
    )


def report_tasks(path: Path) -> list[str] | None:
    """The task ids a report written by :func:`render_html` covers (None: no such report there).

    Why: a run of the demo on fewer tasks must not replace a report of more without saying so.
    """
    import re

    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            head = fh.read(8192)
    except OSError:
        return None
    found = re.search(r'<meta name="sharedtask-tasks" content="([^"]*)">', head)
    return found.group(1).split() if found else None


def write_report(path: Path, sections: list[TaskSection], *, title: str = "sharedtask report",
                 generated: datetime | None = None) -> Path:
    """Write the report atomically (temp file + rename) and return its path.

    Why atomic: a browser or CI artifact upload must never see half a page.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = render_html(sections, title=title, generated=generated)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path
