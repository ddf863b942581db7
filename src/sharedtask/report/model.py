"""The data a report shows: one section per task, one entry per run, and their order.

The demo and the organizer flow fill these objects; :mod:`sharedtask.report.html`
turns them into HTML. Everything in a :class:`RunEntry` may come from an untrusted
submission (names, findings, logs): renderers must escape it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, tzinfo
from typing import Any

from sharedtask.evaluate.leaderboard import competition_ranks
from sharedtask.findings import Finding, Severity
from sharedtask.spec import Task

#: Statuses of a sandboxed run (sandbox run record); only "success" can be ranked.
STATUSES: tuple[str, ...] = ("success", "failed", "timeout", "oom", "output-limit", "error")


@dataclass
class RunEntry:
    """One run of one task: what ran, how it ended, what the validator and evaluator said."""

    name: str
    image: str
    command: str | None
    status: str
    valid: bool | None
    findings: list[Finding]
    scores: dict[str, float]
    per_topic: dict[str, dict[str, float]]
    record: dict[str, Any]
    notes: list[str] = field(default_factory=list)
    #: when the run was re-run: ``sharedtask.evaluate.compare.Comparison.to_json()``
    reproduction: dict[str, Any] | None = None
    #: a re-ranker's first stage (docs/pipelines.md): shown as "name ← first_stage"
    first_stage: str | None = None
    #: when the run was submitted (UTC; the service's boards): a leaderboard column when any run has one
    submitted: datetime | None = None
    #: a further page of this row as (address, text), e.g. every run of the row's team (the service's boards)
    more: tuple[str, str] | None = None

    @property
    def label(self) -> str:
        return f"{self.name} ← {self.first_stage}" if self.first_stage else self.name

    @property
    def ranked(self) -> bool:
        """A run is ranked when it finished and the validator did not reject it."""
        return self.status == "success" and self.valid is not False

    @property
    def verdict(self) -> str:
        """Short outcome label for the leaderboard: the status, or the validation verdict."""
        if self.status != "success":
            return self.status
        if self.valid is False:
            return "invalid"
        return "valid" if self.valid else "not validated"

    def count(self, severity: Severity) -> int:
        return sum(1 for f in self.findings if f.severity == severity)


@dataclass
class TaskSection:
    """One task's part of the report: the task spec and its runs (any order)."""

    task: Task
    runs: list[RunEntry]
    #: the leaderboard with its all-pairs tests (``sharedtask.evaluate.Leaderboard``), when tests were run
    board: Any = None
    #: the reader's time zone: times are shown in UTC and, when set, in this zone too (the service's pages)
    zone: tzinfo | None = None


def leaderboard(section: TaskSection) -> list[tuple[int | None, RunEntry]]:
    """Runs in leaderboard order with their rank (None for unranked runs).

    Ranked runs come first, by the task's primary measure (higher is better for
    every measure the tasks declare: nDCG, MAP, P, bpref, LO, AR), ties sharing a
    rank by the leaderboard's one rule (``evaluate.leaderboard.competition_ranks``)
    and ordered by name for determinism; ranked runs without a
    primary score follow them. Invalid and failed runs go to the bottom.
    """
    key = section.task.primary_measure.key
    ranked = [r for r in section.runs if r.ranked and _finite(r.scores.get(key))]
    unscored = [r for r in section.runs if r.ranked and not _finite(r.scores.get(key))]
    unranked = [r for r in section.runs if not r.ranked]
    ranked.sort(key=lambda r: (-r.scores[key], r.name))
    unscored.sort(key=lambda r: r.name)
    out: list[tuple[int | None, RunEntry]] = list(zip(competition_ranks([r.scores[key] for r in ranked]), ranked))
    out.extend((None, r) for r in unscored)
    # invalid (status success) before crashed runs: they produced output
    out.extend((None, r) for r in sorted(unranked, key=lambda r: (r.status != "success", r.status, r.name)))
    return out


def _finite(value: float | None) -> bool:
    return value is not None and value == value and value not in (float("inf"), float("-inf"))
