"""Who is asking and what they may see: the service's state, sessions, tokens → roles, visibility.

A request without a valid token gets 401; a team asking for another team's submission
gets 404, exactly as for one that does not exist (no existence leak); an
organizer-only action by a team gets 403.
"""

import datetime as dt
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Hashable, Iterator

from fastapi import Depends, HTTPException, Request
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from sharedtask.service.answers import Answers
from sharedtask.service.executor import Executor
from sharedtask.service.models import Submission, TaskSettings, Team
from sharedtask.service.signin import COOKIE, team_of_cookie
from sharedtask.service.tokens import team_of



@dataclass
class ServiceConfig:
    """What ``sharedtask serve`` decided: where files go and the organizer's defaults."""

    data_dir: Path
    max_upload: int = 10 * 1024**3
    daily_limit: int | None = None
    allow_local_images: bool = False
    #: registry hosts (``host[:port]``; ``docker.io`` for Docker Hub) teams may name images in; none: uploads only
    registries: tuple[str, ...] = ()
    #: teams see status, validity and scores, but no logs and no finding details (hidden test data)
    blind: bool = False
    task_ids: list[str] = field(default_factory=list)
    #: tira.yml that declares the datasets (phases name theirs); None: the project's
    manifest: Path | None = None
    #: the dataset of tira.yml submissions run on outside phases (``serve --dataset``)
    dataset: str = "sample"
    #: runs go to compute workers (``serve --broker``) that cannot get the published stages (no
    #: ``--images-dir`` to ship them through): re-rankers are refused
    workers_lack_stages: bool = False


@dataclass
class ServiceState:
    """Everything a request handler needs, kept on ``app.state.service``."""

    sessions: sessionmaker[Session]
    executor: Executor
    config: ServiceConfig
    known_tasks: list[str]
    #: sessions whose transactions write (SQLite: the write lock is taken at BEGIN; see db.py)
    writers: sessionmaker[Session] | None = None
    #: answers of the hot GETs, kept until the next commit (see answers.py)
    answers: Answers = field(default_factory=lambda: Answers(None))
    #: the hot GETs' few threads (an ``anyio.CapacityLimiter``, made on first use; see api._hot)
    hot_threads: Any = None
    #: the specs of ``known_tasks``, loaded on first use: a spec does not change under a running server
    _tasks: dict[str, Any] = field(default_factory=dict)
    #: one lock per key (:meth:`lock_for`)
    _locks: dict[Hashable, threading.Lock] = field(default_factory=dict)
    _locks_guard: threading.Lock = field(default_factory=threading.Lock)

    def write_sessions(self) -> sessionmaker[Session]:
        return self.writers or self.sessions

    def lock_for(self, key: Hashable) -> threading.Lock:
        """One lock per key, so parallel requests for one thing do it once: ten teams sending the
        same new image (``("image", digest)``) load it once, two publications of one stage make it once."""
        with self._locks_guard:
            return self._locks.setdefault(key, threading.Lock())


def state(request: Request) -> ServiceState:
    return request.app.state.service


def db(request: Request) -> Iterator[Session]:
    """A session for the request: plain for reads, a writer's for anything else.

    FastAPI runs this (sync) dependency and the sync handlers that use it in its thread
    pool, never on the event loop; the session lives as long as the request, which for
    these handlers is a few database statements, never an upload or a run.
    """
    service = state(request)
    maker = service.sessions if request.method in ("GET", "HEAD") else service.write_sessions()
    with maker() as session:
        yield session


async def _state(request: Request) -> ServiceState:
    """:func:`state` as a dependency: async because FastAPI runs a sync dependency in its thread
    pool, a round trip (and a wait for the GIL) per request for a mere attribute read."""
    return state(request)


Db = Annotated[Session, Depends(db)]
State = Annotated[ServiceState, Depends(_state)]


def token_of(request: Request) -> str | None:
    """``Authorization: Bearer T`` (the API; the pages accept it too)."""
    header = request.headers.get("authorization", "")
    if header.lower().startswith("bearer "):
        return header[7:].strip()
    return None


def identify(session: Session, request: Request) -> Team | None:
    """The asker: by its bearer token, else by its sign-in cookie (:mod:`sharedtask.service.signin`)."""
    token = token_of(request)
    if token is not None:
        return team_of(session, token)
    return team_of_cookie(session, request.cookies.get(COOKIE))


def viewer(request: Request, session: Db) -> Team | None:
    return identify(session, request)


def member(request: Request, session: Db) -> Team:
    found = viewer(request, session)
    if found is None:
        raise HTTPException(401, "a valid token is needed (Authorization: Bearer TOKEN)",
                            headers={"WWW-Authenticate": "Bearer"})
    return found


def authenticate(service: ServiceState, request: Request) -> Team:
    """The token's team, looked up in a short session of its own (for handlers that stream).

    Why not the ``Member`` dependency: its session lives as long as the request, and a
    request that streams a large upload must hold no session and no transaction meanwhile.
    """
    with service.sessions() as session:
        found = identify(session, request)
        session.commit()  # ends the read transaction; expire_on_commit=False keeps the row loaded
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
    # kept: load_task looks the file up on disk each time, and this runs on the event loop
    task = service._tasks.get(task_id)
    if task is None:
        task = service._tasks[task_id] = load_task(task_id)
    return task


def ensure_settings(session: Session, task_ids: list[str]) -> None:
    """A settings row for every task, made once (``INSERT ... ON CONFLICT DO NOTHING``).

    Why at start-up: a row created by the first submission to a task was an INSERT inside
    that submission's request, racing the next team's and holding a write lock while the
    upload streamed. Rows that exist before anyone asks cannot race.
    """
    dialect = session.get_bind().dialect.name
    if dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import insert
    elif dialect == "sqlite":
        from sqlalchemy.dialects.sqlite import insert
    else:  # another backend: the portable (racy but harmless at start-up) way
        have = {s.task_id for s in session.scalars(select(TaskSettings))}
        session.add_all(TaskSettings(task_id=t, published=False) for t in task_ids if t not in have)
        session.commit()
        return
    if task_ids:
        statement = insert(TaskSettings).values([{"task_id": t, "published": False} for t in task_ids])
        session.execute(statement.on_conflict_do_nothing(index_elements=["task_id"]))
    session.commit()


def settings_of(session: Session, task_id: str) -> TaskSettings:
    """The task's settings row (made at start-up for every known task; made here otherwise)."""
    found = session.scalar(select(TaskSettings).where(TaskSettings.task_id == task_id))
    if found is None:
        ensure_settings(session, [task_id])
        found = session.scalar(select(TaskSettings).where(TaskSettings.task_id == task_id))
        assert found is not None
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
    # two columns, not ORM objects: this runs on every list and leaderboard request
    return {team_id: name for team_id, name in session.execute(select(Team.id, Team.name))}


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


def _next_boundary(service: "ServiceState", now: Any) -> Any:
    from sharedtask.service import phases

    with service.sessions() as session:
        return phases.next_boundary(session, now)


def viewer_class(service: "ServiceState", request: Request) -> tuple[Any, ...]:
    """Who asks, as a key: ``("organizer",)``, ``("team", id)`` or ``("anyone",)``.

    Why not the credential's digest: every random token (unknown, so shown the public board)
    kept one more copy of that board (issue 39). A request without a credential costs no query."""
    if token_of(request) is None and not request.cookies.get(COOKIE):
        return ("anyone",)
    with service.sessions() as session:
        who = identify(session, request)
        session.commit()
    if who is None:
        return ("anyone",)
    return ("organizer",) if who.organizer else ("team", who.id)


def kept(service: "ServiceState", request: Request, key: tuple[Any, ...], build: Any) -> bytes:
    """``build()`` (bytes), or the same bytes kept since the last commit (:mod:`sharedtask.service.answers`).

    ``key`` holds canonical values only (a known task, a validated zone), never raw input; to it
    is added who asks (:func:`viewer_class`): who asks decides what they see. An answer is also kept no later than the next
    opening or closing of a task or a phase (:func:`sharedtask.service.phases.next_boundary`):
    what is open, and whose scores a phase keeps back, changes then without any commit.
    An answer ``build`` refuses (an HTTP error) is not kept.
    """
    from sharedtask.service.models import utcnow

    if not service.answers.enabled:
        return build()
    key = (*key, *viewer_class(service, request))
    stamp = service.answers.stamp()  # before building: an answer is never older than its stamp
    now = utcnow()
    body = service.answers.get(key, stamp, now)
    if body is None:
        body = build()
        until = service.answers.boundary(stamp, now, lambda: _next_boundary(service, now))  # once per stamp
        service.answers.put(key, stamp, body, until)
    return body
