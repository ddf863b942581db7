"""What a validation produces: capped findings, run statistics, the result object.

Findings are capped per code (a 10M-line run with a tie in every topic must not
keep millions of objects in memory); the number left out is counted so that the
renderer can still say "1,234 more like this" and validity is never lost.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

from sharedtask.findings.codes import code as catalogue_entry
from sharedtask.findings import Finding, Severity

#: Findings kept per code; the rest are only counted.
DEFAULT_LIMIT_PER_CODE = 200


class Collector:
    """Accumulates findings, keeping at most ``limit`` per code and counting the rest."""

    def __init__(self, path: str, limit: int = DEFAULT_LIMIT_PER_CODE) -> None:
        self.path = path
        self.limit = limit
        self.findings: list[Finding] = []
        self.kept: Counter[str] = Counter()
        self.omitted: Counter[str] = Counter()
        self.severities: dict[str, Severity] = {}

    def wants(self, code: str) -> bool:
        """False once ``code`` is at its cap: callers may then skip building the message."""
        return self.kept[code] < self.limit

    def add(
        self,
        severity: Severity,
        code: str,
        message: str,
        hint: str,
        line: int | None = None,
        column: int | None = None,
    ) -> None:
        self.severities.setdefault(code, severity)
        if self.kept[code] >= self.limit:
            self.omitted[code] += 1
            if severity is Severity.ERROR:
                self.severities[code] = Severity.ERROR
            return
        self.kept[code] += 1
        self.findings.append(Finding(severity, code, message, self.path, line, column, hint))

    def report(
        self,
        code: str,
        message: str | Callable[[], str],
        line: int | None = None,
        column: int | None = None,
        *,
        hint: str | None = None,
        severity: Severity | None = None,
    ) -> None:
        """Report one finding of ``code``: severity and hint come from the catalogue unless given;
        a callable ``message`` is only built when the finding is kept (not past the cap)."""
        entry = catalogue_entry(code)
        severity = severity or entry.severity
        if self.kept[code] >= self.limit:
            self.count_only(severity, code)
            return
        text = message() if callable(message) else message
        self.add(severity, code, text, hint or entry.hint, line, column)

    def room(self, code: str) -> int:
        """How many more findings of ``code`` are kept before the cap."""
        return max(self.limit - self.kept[code], 0)

    def report_each(
        self,
        by_code: dict[str, list[int]],
        finding: Callable[[str, int], tuple[str, int | None, int | None]],
    ) -> None:
        """Report many findings at once: ``by_code`` maps a code to the positions (ascending)
        where it applies; ``finding(code, k)`` gives (message, line, column) and is called only
        for the ones kept under the cap, reported in position order as a loop would; the rest
        are only counted. Why: a run whose every line is wrong costs a count per code, not a
        call per line."""
        kept: list[tuple[int, str]] = []
        for code, positions in by_code.items():
            room = self.room(code)
            kept += [(k, code) for k in positions[:room]]
            if len(positions) > room:
                self.count(code, len(positions) - room)
        for k, code in sorted(kept):
            message, line, column = finding(code, k)
            self.report(code, message, line, column)

    def count(self, code: str, n: int) -> None:
        """Count ``n`` findings of ``code`` past its cap, with the catalogue's severity."""
        self.count_only(catalogue_entry(code).severity, code, n)

    def count_only(self, severity: Severity, code: str, n: int = 1) -> None:
        """Record ``n`` findings that were not built because the code is at its cap."""
        self.severities.setdefault(code, severity)
        if severity is Severity.ERROR:
            self.severities[code] = Severity.ERROR
        self.omitted[code] += n

    def reset(self) -> None:
        self.findings.clear()
        self.kept.clear()
        self.omitted.clear()
        self.severities.clear()

    @property
    def has_errors(self) -> bool:
        if any(f.severity is Severity.ERROR for f in self.findings):
            return True
        return any(self.severities.get(code) is Severity.ERROR for code, n in self.omitted.items() if n)


@dataclass
class RunStats:
    """Figures about the run, for the report and the JSON output."""

    bytes: int = 0
    lines: int = 0  # physical lines
    data_lines: int = 0  # lines with the right number of columns
    topics: int = 0
    min_depth: int = 0
    max_depth: int = 0
    tags: list[str] = field(default_factory=list)
    layout: str = ""
    interleaved: bool = False
    gzip: bool = False
    topics_expected: int | None = None
    topics_missing: int | None = None


@dataclass
class ValidationResult:
    """The outcome of :func:`sharedtask.validate.validate`."""

    path: Path
    task_id: str
    run_format: str
    findings: list[Finding]
    omitted: dict[str, int]
    stats: RunStats
    valid: bool

    def count(self, severity: Severity) -> int:
        kept = sum(1 for f in self.findings if f.severity is severity)
        extra = sum(
            n
            for code, n in self.omitted.items()
            if any(f.code == code and f.severity is severity for f in self.findings)
        )
        return kept + extra

    def codes(self) -> set[str]:
        return {f.code for f in self.findings}

    def to_json(self) -> dict[str, Any]:
        return {
            "path": str(self.path),
            "task": self.task_id,
            "format": self.run_format,
            "valid": self.valid,
            "counts": {s.value: self.count(s) for s in Severity},
            "stats": asdict(self.stats),
            "findings": [f.to_json() for f in self.findings],
            "omitted": dict(self.omitted),
        }
