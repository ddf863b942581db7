"""Who is asking and what they may see: the service's state, sessions, tokens → roles, visibility.

A request without a valid token gets 401; a team asking for another team's submission
gets 404, exactly as for one that does not exist (no existence leak); an
organizer-only action by a team gets 403.
"""

import datetime as dt
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Iterator

from fastapi import Depends, HTTPException, Request
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from sharedtask.service.executor import Executor
from sharedtask.service.models import Submission, TaskSettings, Team
from sharedtask.service.tokens import team_of

COOKIE = "sharedtask_token"


@dataclass
class ServiceConfig:
    """What ``sharedtask serve`` decided: where files go and the organizer's defaults."""

    data_dir: Path
    max_upload: int = 10 * 1024**3
    daily_limit: int | None = None
    allow_local_images: bool = False
    #: teams see status, validity and scores, but no logs and no finding details (hidden test data)
    blind: bool = False
    task_ids: list[str] = field(default_factory=list)


@dataclass
class ServiceState:
    """Everything a request handler needs, kept on ``app.state.service``."""

    sessions: sessionmaker[Session]
    executor: Executor
    config: ServiceConfig
    known_tasks: list[str]


def state(request: Request) -> ServiceState:
    return request.app.state.service


def db(request: Request) -> Iterator[Session]:
    with state(request).sessions() as session:
        yield session


Db = Annotated[Session, Depends(db)]
State = Annotated[ServiceState, Depends(state)]


def token_of(request: Request) -> str | None:
    """``Authorization: Bearer T`` (the API) or the sign-in cookie (the pages)."""
    header = request.headers.get("authorization", "")
    if header.lower().startswith("bearer "):
        return header[7:].strip()
    return request.cookies.get(COOKIE)


def viewer(request: Request, session: Db) -> Team | None:
    return team_of(session, token_of(request))


def member(request: Request, session: Db) -> Team:
    found = viewer(request, session)
    if found is None:
        raise HTTPException(401, "a valid token is needed (Authorization: Bearer TOKEN)",
                            headers={"WWW-Authenticate": "Bearer"})
    return found


def organizer(who: Annotated[Team, Depends(member)]) -> Team:
    if not who.organizer:
        raise HTTPException(403, "only the organizer may do this")
    return who


Member = Annotated[Team, Depends(member)]
Organizer = Annotated[Team, Depends(organizer)]


def task_of(service: ServiceState, task_id: str) -> Any:
    from sharedtask.spec import load_task

    if task_id not in service.known_tasks:
        raise HTTPException(404, f"no task {task_id!r} on this server")
    return load_task(task_id)


def settings_of(session: Session, task_id: str) -> TaskSettings:
    found = session.scalar(select(TaskSettings).where(TaskSettings.task_id == task_id))
    if found is None:
        found = TaskSettings(task_id=task_id, published=False)
        session.add(found)
        session.flush()
    return found


def all_settings(session: Session) -> dict[str, TaskSettings]:
    return {s.task_id: s for s in session.scalars(select(TaskSettings))}


def visible(session: Session, who: Team, submission_id: int) -> Submission:
    """The submission if ``who`` may see it; 404 otherwise, the same as for a missing one."""
    sub = session.get(Submission, submission_id)
    if sub is None or (not who.organizer and sub.team_id != who.id):
        raise HTTPException(404, f"no submission {submission_id}")
    return sub


def team_names(session: Session) -> dict[int, str]:
    return {t.id: t.name for t in session.scalars(select(Team))}


def primary_measures(service: ServiceState) -> dict[str, str]:
    from sharedtask.spec import load_task

    return {tid: load_task(tid).primary_measure.key for tid in service.known_tasks}


def may_see_board(request: Request, session: Session, task_id: str) -> bool:
    """Published boards are public; the organizer sees every board (True); otherwise 404."""
    who = viewer(request, session)
    if who is not None and who.organizer:
        return True
    s = session.scalar(select(TaskSettings).where(TaskSettings.task_id == task_id))
    if s is None or not s.published:
        raise HTTPException(404, f"the leaderboard of {task_id} is not published")
    return False


def naive_utc(value: dt.datetime | None) -> dt.datetime | None:
    """The database keeps UTC without a zone; an aware time is converted first."""
    if value is None or value.tzinfo is None:
        return value
    return value.astimezone(dt.timezone.utc).replace(tzinfo=None)
