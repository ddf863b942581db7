"""Findings: what validators report instead of raising.

A rule yields :class:`Finding` objects; renderers (rich, JSON) group and show them.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from enum import Enum
from typing import Any, Iterable

from sharedtask.untrusted import printable

#: Characters of a finding's message kept (the rest is cut with a marker).
MESSAGE_LIMIT = 400


class Severity(str, Enum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


@dataclass(frozen=True)
class Finding:
    severity: Severity
    code: str  # stable, e.g. "RUN-DUPLICATE-DOC"
    message: str
    path: str | None = None
    line: int | None = None
    column: int | None = None
    hint: str | None = None

    def __post_init__(self) -> None:
        # Messages quote run lines, which a submission wrote: bounded and without control
        # characters before they reach a terminal, a run record or a report.
        object.__setattr__(self, "message", printable(self.message, MESSAGE_LIMIT, keep_newlines=True))

    @property
    def location(self) -> str:
        if self.path is None:
            return ""
        out = self.path
        if self.line is not None:
            out += f":{self.line}"
            if self.column is not None:
                out += f":{self.column}"
        return out

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["severity"] = self.severity.value
        return data


def has_errors(findings: Iterable[Finding]) -> bool:
    return any(f.severity is Severity.ERROR for f in findings)
