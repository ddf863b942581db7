"""Findings: what validators report instead of raising.

A rule yields :class:`Finding` objects; renderers (rich, JSON) group and show them.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from enum import Enum
from typing import Any, Iterable


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
