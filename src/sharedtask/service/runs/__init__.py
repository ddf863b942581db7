"""Where the service's submissions run: one queue seam (:class:`Runs`), the claims that make every
run happen once (:mod:`~sharedtask.service.runs.claims`), and two pools behind it: the local pool
(:mod:`~sharedtask.service.runs.pool`) and the compute workers of a broker
(:mod:`~sharedtask.service.runs.broker`).
"""

from __future__ import annotations

from typing import Any, Protocol

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from sharedtask.service.models import Submission
from sharedtask.service.runs.claims import RESUMED_NOTE, RunSettings


class Runs(Protocol):
    """The service's run queue: the local pool, or the compute workers of a broker
    (:class:`sharedtask.service.runs.broker.BrokerDispatch`)."""

    def enqueue(self, submission_id: int) -> None: ...

    def shutdown(self) -> None: ...


def resume(sessions: sessionmaker[Session], runs: Runs) -> list[int]:
    """After a start: runs cut off by a stop are queued again (with a note), every queued one is enqueued.

    With compute workers a run cut off on the server's side goes on on its worker: the
    pool's own ``resumed_note`` says so, and it waits for the job it sent before.
    """
    note = getattr(runs, "resumed_note", RESUMED_NOTE)
    with sessions.begin() as session:
        for sub in session.scalars(select(Submission).where(Submission.status == "running")):
            sub.status = "queued"
            sub.notes = [*(sub.notes or []), note]
        queued = list(session.scalars(select(Submission.id).where(Submission.status == "queued")
                                      .order_by(Submission.id)))
    for submission_id in queued:
        runs.enqueue(submission_id)
    return queued


def make_runs(broker: str | None, sessions: sessionmaker[Session], settings: RunSettings,
              workers: int, image_source: Any = None, queue: str | None = None,
              stage_source: Any = None) -> Runs:
    """The local pool, or with a broker URL the compute workers (``sharedtask worker``) behind it;
    ``workers`` is then the number of finished runs landed and scored at the same time."""
    if broker:
        from sharedtask.service.runs.broker import BrokerDispatch

        return BrokerDispatch(broker, sessions, settings, scorers=workers, image_source=image_source,
                              queue_name=queue, stage_source=stage_source)
    from sharedtask.service.runs.pool import LocalPool

    return LocalPool(sessions, settings, workers)
