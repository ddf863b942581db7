"""The bookkeeping of every run of the service, wherever it runs (the local pool, compute workers).

A submission is *claimed* by one atomic ``UPDATE ... WHERE status = 'queued'`` that
also counts the attempt; its result is stored only ``WHERE attempts = <this claim>``.
So a submission queued twice (a restart while it was queued) runs once, and a run
that a restarted server took over cannot be overwritten by the claim it replaced:
none is scored twice. The run itself is a :class:`~sharedtask.executor.job.Job` of the executor
seam (:mod:`sharedtask.service.runs.jobs`), scored with the pipeline's own step.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.orm import Session, sessionmaker

from sharedtask.errors import SharedTaskError
from sharedtask.service.models import Submission, utcnow

log = logging.getLogger("sharedtask.service")

RESUMED_NOTE = "the server stopped during this run; it was run again after the restart"
#: ``serve --broker``: the run went on on its compute worker while the server was away
BROKER_RESUMED_NOTE = "the server stopped during this run; it waited for the same run on the compute workers"


@dataclass(frozen=True)
class RunSettings:
    data_dir: Path
    dataset: str = "sample"
    manifest: Path | None = None


def claim(sessions: sessionmaker[Session], submission_id: int, worker: str | None = None) -> int | None:
    """Mark a queued submission running; the attempt number, or None when another claim won.

    ``worker``: where it runs, when that is known at once (the local pool); a compute worker's
    name is stored when the worker reports it (:func:`set_worker`).
    """
    with sessions.begin() as session:
        done = session.execute(
            update(Submission)
            .where(Submission.id == submission_id, Submission.status == "queued")
            .values(status="running", attempts=Submission.attempts + 1, started=utcnow(), worker=worker)
        )
        if done.rowcount != 1:
            return None
        return session.scalar(select(Submission.attempts).where(Submission.id == submission_id))


def set_worker(sessions: sessionmaker[Session], submission_id: int, attempt: int, worker: str) -> bool:
    """The compute worker that took the current claim's job (a killed worker's successor replaces it)."""
    with sessions.begin() as session:
        done = session.execute(
            update(Submission)
            .where(Submission.id == submission_id, Submission.attempts == attempt, Submission.status == "running")
            .values(worker=worker[:200])
        )
        return done.rowcount == 1


def _finish(sessions: sessionmaker[Session], submission_id: int, attempt: int, **values: object) -> bool:
    with sessions.begin() as session:
        done = session.execute(
            update(Submission)
            .where(Submission.id == submission_id, Submission.attempts == attempt, Submission.status == "running")
            .values(finished=utcnow(), **values)
        )
        return done.rowcount == 1


def store_validation(sessions: sessionmaker[Session], submission_id: int, attempt: int, entry: Any) -> bool:
    """The run record and the validator's verdict as soon as they exist, before scoring.

    Why: the team's page shows findings and the record while the official evaluation
    still runs. Only for the current claim of a submission that is still running.
    """
    with sessions.begin() as session:
        done = session.execute(
            update(Submission)
            .where(Submission.id == submission_id, Submission.attempts == attempt, Submission.status == "running")
            .values(record=entry.record, run_status=entry.status, valid=entry.valid)
        )
        return done.rowcount == 1


def fail(sessions: sessionmaker[Session], submission_id: int, attempt: int, notes: list[str],
         exc: Exception) -> None:
    """The claim ends ``failed``: a user-facing error's own words, else an internal error (logged)."""
    if isinstance(exc, SharedTaskError):
        _finish(sessions, submission_id, attempt, status="failed", run_status="error", notes=[*notes, str(exc)])
        return
    log.error("submission %s", submission_id, exc_info=exc)
    _finish(sessions, submission_id, attempt, status="failed", run_status="error",
            notes=[*notes, f"internal error ({exc.__class__.__name__}); the organizer can re-run it"])


def store_entry(sessions: sessionmaker[Session], submission_id: int, attempt: int, entry: Any, run_dir: Path,
                notes: list[str]) -> bool:
    """The pipeline's row of a finished run (:func:`sharedtask.pipeline.entry_for`), for the current claim."""
    return _finish(sessions, submission_id, attempt,
                   status="done" if entry.status == "success" else "failed",
                   run_status=entry.status, valid=entry.valid, record=entry.record,
                   run_dir=str(run_dir), scores=entry.scores or None,
                   per_topic=entry.per_topic or None, notes=[*notes, *entry.notes])
