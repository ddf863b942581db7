"""Selected runs and a phase's leaderboard.

A team marks up to ``max_selected`` of its runs of a phase as final, as TIRA and Codabench let
teams choose their final runs and as ARQMath and Touché ranked a bounded number of runs per
team (the official overview papers: five runs per team and task). The bound is checked in a
transaction serialised per team, the same lock as admission (the team's row ``FOR UPDATE`` on
PostgreSQL, the write lock from ``BEGIN IMMEDIATE`` on SQLite), so parallel clicks cannot
select one run too many.

A phase's leaderboard shows per team: its selected runs when the phase asks for a selection
(a team that selected none: its latest valid run), else its best run by the task's primary
measure. Failed and invalid runs are not on the public board (a team sees its own on its page);
the organizer's view lists every run of the phase.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from fastapi import HTTPException
from sqlalchemy import case, func, or_, select
from sqlalchemy.orm import Session

from sharedtask.service import phases
from sharedtask.service.db import is_sqlite
from sharedtask.service.models import Phase, Submission, Team, aware, utcnow


def set_selected(session: Session, who: Team, submission_id: int, value: bool) -> Submission:
    """Mark (or unmark) a run as one of the team's final runs of its phase; 409 saying why not.

    ``session``: a writer's (on SQLite its transaction holds the write lock from its BEGIN).
    """
    now = utcnow()
    sub = session.get(Submission, submission_id)
    if sub is None or (not who.organizer and sub.team_id != who.id):
        raise HTTPException(404, f"no submission {submission_id}")
    if not is_sqlite(session):  # the team's row lock: one selection of a team at a time
        session.execute(select(Team.id).where(Team.id == sub.team_id).with_for_update())
        session.refresh(sub)
    phase = sub.phase
    if phase is None or phase.max_selected is None:
        where = f"phase {phase.name}" if phase else f"task {sub.task_id}"
        raise HTTPException(409, f"{where} ranks each team's best run: there is nothing to select")
    if not who.organizer and phases.state(phase, now) == "closed":
        raise HTTPException(403, f"phase {phase.name} closed at {aware(phase.closes)}: its selection is final")
    if value and sub.selected is not True:
        if sub.status != "done" or sub.valid is False:
            raise HTTPException(409, f"submission {sub.id} is {sub.status}"
                                     f"{' and invalid' if sub.valid is False else ''}: only a finished, valid "
                                     "run can be selected")
        count = int(session.scalar(select(func.count(Submission.id)).where(
            Submission.team_id == sub.team_id, Submission.phase_id == phase.id,
            Submission.selected.is_(True))) or 0)
        if count >= phase.max_selected:
            raise HTTPException(409, f"{phase.max_selected} run(s) of phase {phase.name} are selected already "
                                     "(the phase's limit): unselect one first")
    sub.selected = value
    session.commit()
    return sub


#: the columns a leaderboard (a phase's, or the task's JSON board: submissions.board_rows) shows or
#: ranks by: never the record, the validation or the per-topic scores, which are most of a row
#: (benchmarks/service_phases.py)
BOARD_COLUMNS = (Submission.id, Submission.team_id, Submission.tag, Submission.image_name, Submission.command,
                 Submission.status, Submission.run_status, Submission.valid, Submission.scores,
                 Submission.hidden_reason, Submission.created, Submission.selected, Submission.task_id,
                 Submission.input_run, Submission.phase_id)


def board_runs(session: Session, phase: Phase, primary: str, *, organizer_view: bool) -> list[Any]:
    """The phase's runs on its leaderboard, in submission order (see the module's rules), as rows
    of :data:`BOARD_COLUMNS`: the board shows no record, so none is loaded.

    With a selection the database picks the rows (the selected ones, and the latest valid run of
    each team that selected none: one grouped query), so only the shown rows are read; with
    10,000 runs in a phase, reading every run's scores took most of the board's time
    (benchmarks/service_phases.py). The best-run rule compares the primary score, kept in JSON,
    in Python, over the id, team and scores of the phase's valid runs.
    """
    finished = (Submission.phase_id == phase.id, Submission.status.in_(("done", "failed")))
    if organizer_view:
        return list(session.execute(select(*BOARD_COLUMNS).where(*finished).order_by(Submission.id)))
    shown = (*finished, Submission.status == "done", Submission.valid.isnot(False),
             Submission.hidden_reason.is_(None))
    if phase.max_selected is not None:
        chosen = select(Submission.id).where(*shown, Submission.selected.is_(True))
        # a team that selected none: its latest valid run
        latest = (select(func.max(Submission.id)).where(*shown).group_by(Submission.team_id)
                  .having(func.sum(case((Submission.selected.is_(True), 1), else_=0)) == 0))
        return list(session.execute(select(*BOARD_COLUMNS).where(or_(Submission.id.in_(chosen),
                                                                     Submission.id.in_(latest)))
                                    .order_by(Submission.id)))
    def rank(row: Any) -> tuple[float, int]:  # the higher primary score; a tie: the later run
        return _score(row.scores, primary), row.id

    best: dict[int, Any] = {}
    for row in session.execute(select(Submission.id, Submission.team_id, Submission.scores).where(*shown)):
        if row.team_id not in best or rank(row) > rank(best[row.team_id]):
            best[row.team_id] = row
    if not best:
        return []
    ids = [row.id for row in best.values()]
    return list(session.execute(select(*BOARD_COLUMNS).where(Submission.id.in_(ids)).order_by(Submission.id)))


def _score(scores: dict[str, Any] | None, key: str) -> float:
    value = (scores or {}).get(key)
    return float(value) if isinstance(value, (int, float)) and value == value else float("-inf")


def may_see(phase: Phase, organizer: bool, now: dt.datetime) -> bool:
    """The organizer always; anyone when the phase's board is public and its scores may be seen."""
    return organizer or (phase.leaderboard_public and not phases.withheld(phase, now))


def board_opens(phase: Phase, now: dt.datetime) -> dt.datetime | None:
    """When a public board the phase keeps back opens to the public: its closing (its scores are
    withheld until then); None when it is open now, never public, or keeps them back with no end."""
    if not phase.leaderboard_public or not phases.withheld(phase, now):
        return None
    return phase.closes
