"""What the API and the pages both do: queue, re-run, hide, settings, publication, leaderboards.

One function per action, so a page form and an API call cannot drift apart.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from fastapi import HTTPException
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from sharedtask.service import pages
from sharedtask.service.access import ServiceState, naive_utc, settings_of, team_names
from sharedtask.service.models import Image, Submission, TaskSettings, Team, utcnow
from sharedtask.service.tokens import TEAM_NAME

TAG = TEAM_NAME


def submission_json(sub: Submission, team: str, *, blind: bool = False) -> dict[str, Any]:
    """The API's view of a submission; ``blind``: a team's view under ``serve --blind``, built
    from the allow-list alone (:func:`sharedtask.service.visibility.blind_view`)."""
    from sharedtask.service import visibility

    if blind:
        return visibility.blind_view(sub, team)
    record = sub.record
    return {
        "id": sub.id, "team": team, "task": sub.task_id, "tag": sub.tag, "image": sub.image_name,
        "command": sub.command, "status": sub.status, "attempts": sub.attempts, "run_status": sub.run_status,
        "valid": sub.valid, "scores": sub.scores, "notes": sub.notes or [], "hidden": sub.hidden_reason,
        "created": sub.created.isoformat() if sub.created else None,
        "finished": sub.finished.isoformat() if sub.finished else None,
        "validation": (record or {}).get("validation"), "record": record,
    }


def task_json(service: ServiceState, task_id: str, s: TaskSettings | None) -> dict[str, Any]:
    return {"task": task_id, "published": bool(s and s.published),
            "opens": s.opens.isoformat() if s and s.opens else None,
            "closes": s.closes.isoformat() if s and s.closes else None,
            "daily_limit": (s.daily_limit if s else None) or service.config.daily_limit}


def check_open(service: ServiceState, session: Session, who: Team, task_id: str) -> None:
    """403 before the task opens or after it closes; 429 past the daily limit (UTC day)."""
    s = settings_of(session, task_id)
    now = utcnow()
    if s.opens and now < s.opens:
        raise HTTPException(403, f"task {task_id} opens for submissions at {s.opens.isoformat()} UTC")
    if s.closes and now >= s.closes:
        raise HTTPException(403, f"task {task_id} closed for submissions at {s.closes.isoformat()} UTC")
    limit = s.daily_limit or service.config.daily_limit
    if limit and not who.organizer:
        day = now.replace(hour=0, minute=0, second=0, microsecond=0)
        count = session.scalar(select(func.count(Submission.id)).where(
            Submission.team_id == who.id, Submission.task_id == task_id, Submission.created >= day))
        if count >= limit:
            raise HTTPException(429, f"{who.name} has made its {limit} submission(s) to {task_id} today "
                                     "(the limit resets at 00:00 UTC)")


def tag_of(tag: str | None, session: Session, who: Team) -> str:
    if tag is None:
        n = session.scalar(select(func.count(Submission.id)).where(Submission.team_id == who.id))
        return f"run{n + 1}"
    if not TAG.match(tag):
        raise HTTPException(422, f"invalid tag {tag[:80]!r}: use 1-64 letters, digits, '.', '_' or '-'")
    return tag


def queue(service: ServiceState, session: Session, who: Team, task_id: str, image: Image, command: str | None,
          tag: str) -> Submission:
    sub = Submission(team_id=who.id, task_id=task_id, image_id=image.id, image_name=image.docker_id, tag=tag,
                     command=command, status="queued", attempts=0, notes=[])
    session.add(sub)
    session.commit()
    service.executor.enqueue(sub.id)
    return sub


def blind_for(service: ServiceState, who: Team) -> bool:
    return service.config.blind and not who.organizer


def rerun(service: ServiceState, session: Session, sub: Submission) -> dict[str, Any]:
    if sub.status in pages.PENDING:
        raise HTTPException(409, f"submission {sub.id} is {sub.status} already")
    sub.status, sub.scores, sub.per_topic, sub.valid, sub.run_status = "queued", None, None, None, None
    sub.notes = [*(sub.notes or []), f"re-run by the organizer at {utcnow().replace(microsecond=0).isoformat()}"]
    session.commit()
    service.executor.enqueue(sub.id)
    return submission_json(sub, team_names(session)[sub.team_id])


def hide(session: Session, sub: Submission, reason: str | None) -> dict[str, Any]:
    sub.hidden_reason = reason
    session.commit()
    return submission_json(sub, team_names(session)[sub.team_id])


def put_settings(service: ServiceState, session: Session, task_id: str, opens: dt.datetime | None,
                 closes: dt.datetime | None, daily_limit: int | None) -> dict[str, Any]:
    s = settings_of(session, task_id)
    s.opens, s.closes, s.daily_limit = naive_utc(opens), naive_utc(closes), daily_limit
    session.commit()
    return task_json(service, task_id, s)


def set_published(service: ServiceState, session: Session, task_id: str, value: bool) -> dict[str, Any]:
    s = settings_of(session, task_id)
    s.published = value
    session.commit()
    return task_json(service, task_id, s)


def board_entries(service: ServiceState, session: Session, task_id: str, *, organizer_view: bool) -> list[Any]:
    """Report rows of a task's finished submissions; hidden runs, logs and server paths only in the
    organizer's view; under ``--blind`` everyone else sees the allow-list only."""
    from pathlib import Path

    from sharedtask.service import visibility

    names = team_names(session)
    subs = session.scalars(select(Submission).where(Submission.task_id == task_id,
                                                     Submission.status.in_(("done", "failed")))
                           .order_by(Submission.id))
    seen_by = (visibility.ORGANIZER if organizer_view else visibility.BLIND if service.config.blind
               else visibility.PUBLIC)
    data_dir = Path(service.config.data_dir)
    roots = (str(data_dir), str(data_dir.resolve()))
    return [pages.entry_of(s, names[s.team_id], seen_by=seen_by, roots=roots)
            for s in subs if organizer_view or not s.hidden_reason]
