"""The service's state: what ``sharedtask serve`` decided, the sessions, the run queue, the task specs,
and the few look-ups every part of the service makes (a task's settings row, team names).

Kept out of :mod:`sharedtask.service.web` so the domain modules (submissions, archive, stages) use
it without importing the web layer.
"""

import datetime as dt
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ContextManager, Hashable

from fastapi import HTTPException
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from sharedtask.service.models import TaskSettings, Team
from sharedtask.service.response_cache import Answers
from sharedtask.service.runs import Runs


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
    runs: Runs
    config: ServiceConfig
    known_tasks: list[str]
    #: sessions whose transactions write (SQLite: the write lock is taken at BEGIN; see db.py)
    writers: sessionmaker[Session] | None = None
    #: answers of the hot GETs, kept until the next commit (see response_cache.py)
    answers: Answers = field(default_factory=lambda: Answers(None))
    #: the hot GETs' few threads (an ``anyio.CapacityLimiter``, made on first use; see web.common.hot)
    hot_threads: Any = None
    #: the specs of ``known_tasks``, loaded on first use: a spec does not change under a running server
    _tasks: dict[str, Any] = field(default_factory=dict)
    #: the database's locks (:meth:`lock_for`), made on first use
    _locks: Any = None
    _locks_guard: threading.Lock = field(default_factory=threading.Lock)

    def write_sessions(self) -> sessionmaker[Session]:
        return self.writers or self.sessions

    def lock_for(self, key: Hashable, within: float | None = None) -> ContextManager[None]:
        """One lock per key, so parallel requests for one thing do it once: ten teams sending the
        same new image (``("image", digest)``) load it once, two publications of one stage make it once.

        Held in the database (:mod:`sharedtask.service.locks`): every server process on it shares it.
        """
        from sharedtask.service.locks import Locks

        with self._locks_guard:
            if self._locks is None:
                self._locks = Locks(self.sessions.kw["bind"])
        return self._locks.hold(key, within)


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


def team_names(session: Session) -> dict[int, str]:
    # two columns, not ORM objects: this runs on every list and leaderboard request
    return {team_id: name for team_id, name in session.execute(select(Team.id, Team.name))}


def primary_measures(service: ServiceState) -> dict[str, str]:
    from sharedtask.spec import load_task

    return {tid: load_task(tid).primary_measure.key for tid in service.known_tasks}


def naive_utc(value: dt.datetime | None) -> dt.datetime | None:
    """The database keeps UTC without a zone; an aware time is converted first."""
    if value is None or value.tzinfo is None:
        return value
    return value.astimezone(dt.timezone.utc).replace(tzinfo=None)
