"""Phases of a task: a development phase on public data, a test phase on hidden data, each with
its own dataset, dates and limits, and its own rules for what teams see.

The model is Codabench's and EvalAI's (a competition is a sequence of phases, each with a
start and an end, its own data and its own submission limits per day and in total). Rules:

- a task without phases behaves as before (the task's settings alone); once the organizer
  made a phase, every submission belongs to one: the phase named in the request, or else
  the one phase open at that moment;
- a phase's daily and total limits are checked in the same transaction that stores the
  submission (:func:`sharedtask.service.submissions.admit`: the team's row lock on PostgreSQL,
  the write lock from BEGIN on SQLite), so parallel submissions stop at exactly the limit;
- ``scores_visible=False``: a team sees no scores of the phase's runs until the phase closes
  (the organizer always does); ``leaderboard_public``: the phase's leaderboard is public,
  once its scores may be seen.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any, Iterable

from fastapi import HTTPException
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from sharedtask.errors import SharedTaskError
from sharedtask.service.models import Phase, Submission, Team, aware

PHASE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
#: what the organizer may set, with the type the API checks (see web.common.PhaseIn)
FIELDS = ("dataset", "opens", "closes", "daily_limit", "total_limit", "scores_visible", "leaderboard_public",
          "max_selected")


def state(phase: Phase, now: dt.datetime) -> str:
    """``upcoming``, ``open`` or ``closed`` at ``now`` (UTC, naive)."""
    if phase.opens is not None and now < phase.opens:
        return "upcoming"
    if phase.closes is not None and now >= phase.closes:
        return "closed"
    return "open"


def withheld(phase: Phase | None, now: dt.datetime) -> bool:
    """The phase keeps scores from teams right now."""
    return phase is not None and not phase.scores_visible and state(phase, now) != "closed"


def phase_json(phase: Phase, now: dt.datetime) -> dict[str, Any]:
    return {"task": phase.task_id, "name": phase.name, "dataset": phase.dataset,
            "opens": aware(phase.opens) if phase.opens else None,
            "closes": aware(phase.closes) if phase.closes else None,
            "daily_limit": phase.daily_limit, "total_limit": phase.total_limit,
            "scores_visible": phase.scores_visible, "leaderboard_public": phase.leaderboard_public,
            "max_selected": phase.max_selected, "state": state(phase, now)}


def phases_of(session: Session, task_id: str) -> list[Phase]:
    """The task's phases in calendar order (by opening time; one without a start first)."""
    found = list(session.scalars(select(Phase).where(Phase.task_id == task_id).order_by(Phase.id)))
    return sorted(found, key=_calendar_order)


def _calendar_order(phase: Phase) -> tuple[dt.datetime, int]:
    return phase.opens or dt.datetime.min, phase.id


def calendars(session: Session) -> dict[str, list[Phase]]:
    """Every task's phases in calendar order (:func:`phases_of`), in one query: the home page's boards."""
    out: dict[str, list[Phase]] = {}
    for phase in session.scalars(select(Phase).order_by(Phase.id)):
        out.setdefault(phase.task_id, []).append(phase)
    return {task: sorted(found, key=_calendar_order) for task, found in out.items()}


def named(session: Session, task_id: str, name: str) -> Phase:
    """The phase ``name`` of the task, or 404 listing the phases there are."""
    found = session.scalar(select(Phase).where(Phase.task_id == task_id, Phase.name == name))
    if found is None:
        have = ", ".join(p.name for p in phases_of(session, task_id)) or "none"
        raise HTTPException(404, f"task {task_id} has no phase {name[:80]!r} (its phases: {have})")
    return found


def manifest_of(service: Any) -> Any:
    """The tira.yml that declares the datasets phases and stages name (``serve --manifest``)."""
    from sharedtask.manifest import load_manifest

    return load_manifest(service.config.manifest)


def put_phase(session: Session, task: Any, name: str, values: dict[str, Any], manifest: Any) -> Phase:
    """Make or change the phase ``name`` of ``task``; one line saying what is wrong otherwise.

    ``values``: the fields of :data:`FIELDS` (times naive UTC). The dataset must be one the
    manifest declares for the task, or no submission of the phase could run.
    """
    if not PHASE_NAME.fullmatch(name):
        raise HTTPException(422, f"invalid phase name {name[:80]!r}: use 1-64 letters, digits, '.', '_' or '-'")
    opens, closes = values.get("opens"), values.get("closes")
    if opens is not None and closes is not None and opens >= closes:
        raise HTTPException(422, f"phase {name} would close ({aware(closes)}) before it opens ({aware(opens)}): "
                                 "give an opening time before the closing time")
    try:
        manifest.dataset(task, values["dataset"])
    except SharedTaskError as exc:
        raise HTTPException(422, f"phase {name}: {str(exc).splitlines()[0]}") from None
    phase = session.scalar(select(Phase).where(Phase.task_id == task.id, Phase.name == name))
    if phase is None:
        phase = Phase(task_id=task.id, name=name)
        session.add(phase)
    for key in FIELDS:
        setattr(phase, key, values.get(key))
    session.commit()
    return phase


# ----------------------------------------------------------------------------- admission


def choose(session: Session, task_id: str, name: str | None, now: dt.datetime) -> Phase | None:
    """The phase a submission goes to: the one named, else the one open now; None without phases."""
    phases = phases_of(session, task_id)
    if not phases:
        if name is not None:
            raise HTTPException(404, f"task {task_id} has no phases: leave out the phase")
        return None
    if name is not None:
        phase = named(session, task_id, name)
    else:
        open_now = [p for p in phases if state(p, now) == "open"]
        if len(open_now) > 1:
            raise HTTPException(422, f"phases {', '.join(p.name for p in open_now)} of {task_id} are open: "
                                     "name one (sharedtask submit --phase NAME, or ?phase=NAME)")
        if not open_now:
            upcoming = [p for p in phases if state(p, now) == "upcoming"]
            later = f"; {upcoming[0].name} opens at {aware(upcoming[0].opens)}" if upcoming else ""
            raise HTTPException(403, f"no phase of task {task_id} is open for submissions{later}")
        phase = open_now[0]
    when = state(phase, now)
    if when == "upcoming":
        raise HTTPException(403, f"phase {phase.name} of {task_id} opens for submissions at {aware(phase.opens)}")
    if when == "closed":
        raise HTTPException(403, f"phase {phase.name} of {task_id} closed for submissions at {aware(phase.closes)}")
    return phase


def used(session: Session, who: Team, phase: Phase, now: dt.datetime) -> tuple[int, int]:
    """The team's submissions to the phase: (since UTC midnight, in all)."""
    day = now.replace(hour=0, minute=0, second=0, microsecond=0)
    mine = select(func.count(Submission.id)).where(Submission.team_id == who.id, Submission.phase_id == phase.id)
    return (int(session.scalar(mine.where(Submission.created >= day)) or 0), int(session.scalar(mine) or 0))


def check_limits(session: Session, who: Team, phase: Phase, now: dt.datetime) -> tuple[int, int]:
    """429 when the team has used the phase's daily or total limit (the organizer has none)."""
    today, total = used(session, who, phase, now)
    if who.organizer:
        return today, total
    if phase.total_limit is not None and total >= phase.total_limit:
        raise HTTPException(429, f"{who.name} has made its {phase.total_limit} submission(s) to phase {phase.name} "
                                 f"of {phase.task_id}: that is the phase's total limit")
    if phase.daily_limit is not None and today >= phase.daily_limit:
        reset = now.replace(hour=0, minute=0, second=0, microsecond=0) + dt.timedelta(days=1)
        raise HTTPException(429, f"{who.name} has made its {phase.daily_limit} submission(s) to phase {phase.name} "
                                 f"of {phase.task_id} today; the limit resets at {aware(reset)}",
                            headers={"Retry-After": str(max(1, int((reset - now).total_seconds())))})
    return today, total


def admission(session: Session, who: Team, task_id: str, name: str | None, now: dt.datetime) -> Phase | None:
    """The phase of a new submission, its window and limits checked (inside admit's transaction)."""
    phase = choose(session, task_id, name, now)
    if phase is not None:
        check_limits(session, who, phase, now)
    return phase


# ----------------------------------------------------------------------------- running and showing


def dataset_name(session: Session, sub: Submission, default: str) -> str:
    """The dataset a submission runs on: its phase's, else the server's ``--dataset``."""
    if sub.phase_id is None:
        return default
    phase = session.get(Phase, sub.phase_id)
    return phase.dataset if phase is not None else default


def for_team(session: Session, subs: Iterable[Submission], who: Team, now: dt.datetime) -> list[Submission]:
    """The submissions as ``who`` may see them: a phase that keeps scores from teams shows a copy
    without scores (never the stored row: nothing here may be written back)."""
    subs = list(subs)
    if who.organizer:
        return subs
    phases = {p.id: p for p in session.scalars(select(Phase))} if any(s.phase_id for s in subs) else {}
    return [masked(s) if withheld(phases.get(s.phase_id or -1), now) else s for s in subs]


def masked(sub: Submission) -> Submission:
    """A copy of ``sub`` outside any session, without its scores, per-topic scores and the
    evaluator's notes.

    Why the notes: "4 qrels topic(s) without a judged document in the run's top 5" tells which
    documents are judged (issue 39). A run is evaluated only when it succeeded with a valid run
    file (pipeline.entry_for), and then every note after the service's own is the evaluator's;
    the notes of a run that never reached the evaluator (why it failed) stay."""
    from sharedtask.service.visibility import service_notes

    copy = Submission(**{c.key: getattr(sub, c.key) for c in Submission.__table__.columns})
    copy.scores, copy.per_topic = None, None
    if sub.run_status == "success" and sub.valid is True:
        copy.notes = service_notes(sub.notes)
    copy.phase = sub.phase  # many-to-one, no backref: the copy is not cascaded into any session
    return copy


def next_boundary(session: Session, now: dt.datetime) -> dt.datetime | None:
    """The next opening or closing, of a task or a phase, after ``now`` (naive UTC): what teams
    may do and see changes then without a commit, so kept answers expire then (response_cache.py)."""
    from sharedtask.service.models import TaskSettings

    times = [session.scalar(select(func.min(column)).where(column > now))
             for column in (TaskSettings.opens, TaskSettings.closes, Phase.opens, Phase.closes)]
    return min((t for t in times if t is not None), default=None)


def phase_names(session: Session) -> dict[int, str]:
    return {p.id: p.name for p in session.scalars(select(Phase))}
