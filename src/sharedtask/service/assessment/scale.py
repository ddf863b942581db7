"""A task's judging scales, as its spec declares them (``assessment: scales:``).

Why in the spec: the organizers' definitions are part of the task, like its measures; the pages
show them beside every item and the API refuses a grade that is not on the scale.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sharedtask.errors import SharedTaskError


@dataclass(frozen=True)
class Grade:
    grade: int
    label: str
    definition: str


@dataclass(frozen=True)
class Scales:
    """``relevance`` always; ``quality`` for tasks that judge it too (Touché: rhetorical quality)."""

    relevance: tuple[Grade, ...]
    quality: tuple[Grade, ...] | None = None

    def check(self, grade: int, quality: int | None) -> None:
        """A grade (and quality) on the scales, else a user error naming the allowed values."""
        allowed = {g.grade for g in self.relevance}
        if grade not in allowed:
            raise SharedTaskError(f"grade {grade} is not on the relevance scale",
                                  hint=f"use one of {sorted(allowed)}")
        if self.quality is None:
            if quality is not None:
                raise SharedTaskError("this task judges no quality", hint="send the grade only")
            return
        if quality is None:
            raise SharedTaskError("this task judges quality too", hint="send quality with the grade")
        allowed_q = {g.grade for g in self.quality}
        if quality not in allowed_q:
            raise SharedTaskError(f"quality {quality} is not on the quality scale",
                                  hint=f"use one of {sorted(allowed_q)}")


def _grades(entries: list[dict[str, Any]]) -> tuple[Grade, ...]:
    return tuple(sorted((Grade(int(e["grade"]), str(e["label"]), str(e["definition"])) for e in entries),
                        key=lambda g: -g.grade))


#: read once per spec file: every save checks its grade against them
_KEPT: dict[tuple[str, str], Scales] = {}


def scales_of(task: Any) -> Scales:
    """The task's scales; a task without an ``assessment:`` block cannot be judged in the service."""
    key = (task.id, str(task.source_path))
    if key not in _KEPT:
        _KEPT[key] = _scales(task)
    return _KEPT[key]


def _scales(task: Any) -> Scales:
    block = (task.raw or {}).get("assessment")
    if not block:
        raise SharedTaskError(f"task {task.id} declares no judging scale",
                              hint="add an assessment: scales: block to its spec (docs/assessment-service.md)")
    scales = block["scales"]
    quality = scales.get("quality")
    return Scales(relevance=_grades(scales["relevance"]), quality=_grades(quality) if quality else None)
