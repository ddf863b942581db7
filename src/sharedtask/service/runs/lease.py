"""The run pool in one server process per database: whichever holds the lease ``runs``.

Why: with several server processes on one database (``serve --processes N``, or ``serve``
started twice), each local pool would reap the others' containers as orphans and each start
would queue again the runs another process is running. So one process holds the lease
(:mod:`sharedtask.service.locks`) and runs the pool (the local one or the broker's dispatch);
the others store their submissions ``queued`` and the holder finds them in the database. When
the holder dies (a SIGKILL too), its lease is released, another process takes it, queues again
the runs that were cut off (:func:`~sharedtask.service.runs.resume`) and runs the line: as after
a restart. Claims (:mod:`~sharedtask.service.runs.claims`) still make every run happen once.
"""

from __future__ import annotations

import logging
import os
import threading
from typing import Callable

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from sharedtask.service.locks import Locks, Release
from sharedtask.service.models import Submission
from sharedtask.service.runs import Runs, resume

log = logging.getLogger("sharedtask.service")

NAME = "runs"
#: how often a process without the lease tries to take it, and the holder looks for submissions
#: the other processes stored (seconds)
POLL = 0.5


class LeasedRuns:
    """A :class:`~sharedtask.service.runs.Runs` whose pool (``make()``) exists in the lease's holder only."""

    def __init__(self, sessions: sessionmaker[Session], make: Callable[[], Runs], locks: Locks | None = None,
                 poll: float = POLL) -> None:
        self.sessions, self.make, self.poll = sessions, make, poll
        self.locks = locks or Locks(sessions.kw["bind"])
        self.inner: Runs | None = None
        self._release: Release | None = None
        self._sent: set[int] = set()  # handed to the pool while still queued
        self._guard = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="sharedtask-runs-lease", daemon=True)

    def start(self) -> None:
        """Try the lease once now (a lone server holds it before its first request), then keep trying."""
        self._try_lease()
        self._thread.start()

    @property
    def holder(self) -> bool:
        return self.inner is not None

    def enqueue(self, submission_id: int) -> None:
        with self._guard:
            if self.inner is None:  # stored queued: the holder's next look finds it
                return
            self._sent.add(submission_id)
            self.inner.enqueue(submission_id)

    def _try_lease(self) -> None:
        release = self.locks.acquire(NAME, wait=False)
        if release is None:
            return
        try:
            inner = self.make()
        except BaseException:  # no pool: let another process (or the next try) take the lease
            release()
            raise
        with self._guard:
            self._release, self.inner = release, inner
        log.info("this server process (pid %d) runs the submissions", os.getpid())
        self._sent.update(resume(self.sessions, inner))

    def _loop(self) -> None:
        while not self._stop.wait(self.poll):
            try:
                if self.inner is None:
                    self._try_lease()
                else:
                    self._pick_up()
            except Exception:  # noqa: BLE001 - a database away for a moment: tried again
                log.exception("the run lease")

    def _pick_up(self) -> None:
        """Hand the pool every queued submission it was not given yet (stored by another process)."""
        with self.sessions() as session:
            queued = set(session.scalars(select(Submission.id).where(Submission.status == "queued")))
        with self._guard:
            self._sent &= queued  # claimed or finished: a re-run later is handed again
            for submission_id in sorted(queued - self._sent):
                self._sent.add(submission_id)
                assert self.inner is not None
                self.inner.enqueue(submission_id)

    def shutdown(self) -> None:
        self._stop.set()
        with self._guard:
            inner, release, self.inner, self._release = self.inner, self._release, None, None
        if inner is not None:
            inner.shutdown()
        if release is not None:
            release()
