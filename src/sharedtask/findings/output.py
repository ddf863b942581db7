"""Rendering findings for people (rich, in the terminal) and machines (JSON).

Generic over :class:`sharedtask.findings.Finding` so that every checker (run
validator, input checker) prints the same way: findings are grouped by severity
and code, a few examples are shown per group and the rest summarized as
"1,234 more like this" (counting findings a checker kept only as a number).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from sharedtask.findings import Finding, Severity

if TYPE_CHECKING:
    from rich.console import Console

# rich is imported by the two render functions only: JSON output (``dumps``) never loads it.

_ORDER = {Severity.ERROR: 0, Severity.WARNING: 1, Severity.INFO: 2}
_STYLE = {Severity.ERROR: "bold red", Severity.WARNING: "yellow", Severity.INFO: "cyan"}


def group_findings(
    findings: Iterable[Finding], omitted: Mapping[str, int] | None = None
) -> list[tuple[Severity, str, list[Finding], int]]:
    """(severity, code, findings, total) per group, errors first, then by first position."""
    groups: dict[tuple[Severity, str], list[Finding]] = {}
    for f in findings:
        groups.setdefault((f.severity, f.code), []).append(f)
    extra = dict(omitted or {})
    out = []
    for (sev, code), items in groups.items():
        total = len(items) + extra.pop(code, 0)
        out.append((sev, code, items, total))
    out.sort(key=lambda g: (_ORDER[g[0]], g[2][0].line if g[2][0].line is not None else 0, g[1]))
    return out


def count_by_severity(findings: Iterable[Finding], omitted: Mapping[str, int] | None = None) -> dict[Severity, int]:
    counts = {s: 0 for s in Severity}
    for sev, _code, _items, total in group_findings(findings, omitted):
        counts[sev] += total
    return counts


def render_findings(
    console: Console,
    findings: Iterable[Finding],
    omitted: Mapping[str, int] | None = None,
    *,
    examples: int = 3,
    title: str | None = None,
) -> None:
    """Print grouped findings: up to ``examples`` per code, then "N more like this"."""
    from rich.markup import escape

    findings = list(findings)
    if title:
        console.print(f"[bold]{escape(title)}[/]")
    for sev, code, items, total in group_findings(findings, omitted):
        style = _STYLE[sev]
        for f in items[:examples]:
            where = f"{escape(f.location)}: " if f.location else ""
            console.print(f"[{style}]{sev.value}[/] [bold]{code}[/] {where}{escape(f.message)}", soft_wrap=True)
        if total > examples:
            console.print(f"    [dim]... {total - examples:,} more like this[/]")
        hint = items[0].hint
        if hint:
            console.print(f"    [dim]hint: {escape(hint)}[/]", soft_wrap=True)


def render_summary(console: Console, findings: Iterable[Finding], omitted: Mapping[str, int] | None = None,
                   *, subject: str = "run") -> None:
    from rich.markup import escape

    counts = count_by_severity(findings, omitted)
    errors, warnings, infos = counts[Severity.ERROR], counts[Severity.WARNING], counts[Severity.INFO]
    verdict = "[bold red]INVALID[/]" if errors else "[bold green]VALID[/]"
    console.print(f"{verdict} {escape(subject)}: {errors:,} error(s), {warnings:,} warning(s), {infos:,} note(s)",
                  soft_wrap=True)


def findings_json(findings: Iterable[Finding], omitted: Mapping[str, int] | None = None) -> dict[str, Any]:
    """JSON-ready form: every kept finding plus per-code totals."""
    findings = list(findings)
    groups = group_findings(findings, omitted)
    return {
        "counts": {s.value: n for s, n in count_by_severity(findings, omitted).items()},
        "groups": [{"severity": s.value, "code": c, "total": t} for s, c, _i, t in groups],
        "findings": [f.to_json() for f in findings],
    }


def dumps(data: Any) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False, default=str)
