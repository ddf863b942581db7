"""A task's leaderboard one row per team, as Codabench and EvalAI show theirs, with every run of a
team one click away.

A team's row is its selected run(s) when it selected any (a phase that asks for a selection:
:mod:`sharedtask.service.selection`), else its best run by the task's primary measure: the
team's highest place on the board of every run (:func:`sharedtask.report.model.leaderboard`,
the one ranking rule). A team without a ranked run keeps one row too, its first unranked one
in that order, so it sees where it stands.

The rows are chosen among the report rows *as the viewer may see them* (the public, blind,
the organizer: :func:`sharedtask.service.submissions.board_pairs`): the choice reads only the
scores the viewer is shown, so it reveals nothing more than the board of every run would.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sharedtask.report.model import RunEntry, TaskSection, leaderboard


@dataclass
class TeamRow:
    """A row of the per-team board: the run (a ``Submission`` or a light row of it), its report
    row, its team's id and how many runs of the team the full board holds."""

    run: Any
    entry: RunEntry
    team_id: int
    runs: int


def per_team(task: Any, pairs: list[tuple[Any, RunEntry]]) -> list[TeamRow]:
    """Each team's row(s) of ``pairs`` ((run, report row) in any order), teams in order of first appearance."""
    order = leaderboard(TaskSection(task, [entry for _, entry in pairs]))
    run_of = {id(entry): run for run, entry in pairs}
    placed: dict[int, list[tuple[Any, RunEntry]]] = {}  # team id → its runs, best placed first
    for _, entry in order:
        run = run_of[id(entry)]
        placed.setdefault(run.team_id, []).append((run, entry))
    first_seen = {run.team_id: i for i, (run, _) in reversed(list(enumerate(pairs)))}
    out = []
    for team_id in sorted(placed, key=first_seen.__getitem__):
        runs = placed[team_id]
        chosen = [(run, entry) for run, entry in runs if getattr(run, "selected", False) and entry.ranked]
        for run, entry in chosen or runs[:1]:
            out.append(TeamRow(run, entry, team_id, len(runs)))
    return out


def of_team(pairs: list[tuple[Any, RunEntry]], team_id: int) -> list[tuple[Any, RunEntry]]:
    """Every run of one team on the board (the page a row's "all N runs" opens)."""
    return [(run, entry) for run, entry in pairs if run.team_id == team_id]
