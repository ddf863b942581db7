"""Running submissions: a small local pool by default, compute workers with ``serve --broker``
(:mod:`sharedtask.service.dispatch`).

A submission is *claimed* by one atomic ``UPDATE ... WHERE status = 'queued'`` that
also counts the attempt; its result is stored only ``WHERE attempts = <this claim>``.
So a submission queued twice (a restart while it was queued) runs once, and a run
that a restarted server took over cannot be overwritten by the claim it replaced:
none is scored twice. The run itself is the organizer pipeline's own step
(:func:`sharedtask.pipeline.run_one`: sandbox → validator → official evaluation).
"""

from __future__ import annotations

import logging
import queue
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from sqlalchemy import select, update
from sqlalchemy.orm import Session, sessionmaker

from sharedtask.errors import SharedTaskError
from sharedtask.service import phases
from sharedtask.service.models import Stage, Submission, utcnow

log = logging.getLogger("sharedtask.service")

RESUMED_NOTE = "the server stopped during this run; it was run again after the restart"
#: ``serve --broker``: the run went on on its compute worker while the server was away
BROKER_RESUMED_NOTE = "the server stopped during this run; it waited for the same run on the compute workers"


class Executor(Protocol):
    """Where submissions run: the local pool below, or the compute workers of a broker
    (:class:`sharedtask.service.dispatch.BrokerExecutor`)."""

    def enqueue(self, submission_id: int) -> None: ...

    def shutdown(self) -> None: ...


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


def run_submission(sessions: sessionmaker[Session], settings: RunSettings, submission_id: int) -> None:
    """Claim, run, validate and score one submission; every outcome ends in the database."""
    from sharedtask.manifest import Software, load_manifest
    from sharedtask.pipeline import run_one
    from sharedtask.service.lost_image import server_image_id
    from sharedtask.service.stages import mounted
    from sharedtask.spec import load_task

    attempt = claim(sessions, submission_id, "server")
    if attempt is None:
        return
    with sessions() as session:
        sub = session.get(Submission, submission_id)
        assert sub is not None
        task_id, tag, docker_image, command = sub.task_id, sub.tag, sub.image_name, sub.command
        notes = list(sub.notes or [])
        dataset_name = phases.dataset_name(session, sub, settings.dataset)
        stage = session.get(Stage, sub.stage_id) if sub.stage_id is not None else None
        stage_at = (stage.path, stage.sha256, stage.name) if stage is not None else None
    out_dir = settings.data_dir / "runs" / str(submission_id) / f"attempt-{attempt}"
    try:
        task = load_task(task_id)
        dataset = load_manifest(settings.manifest).dataset(task, dataset_name)
        software = Software(name=tag, image=docker_image, kind="submission", command=command, tasks=(task_id,))
        run_dir = out_dir / task_id / tag
        input_run = mounted(stage_at[0], stage_at[1]) if stage_at is not None else None  # the published bytes
        server_image_id(docker_image)  # gone from the daemon: a note that says the server lost it
        entry, _ = run_one(task, software, dataset, out_dir, lambda line: log.debug("%s", line), None,
                           on_validated=lambda validated: store_validation(sessions, submission_id, attempt,
                                                                           validated),
                           input_run=input_run, first_stage=stage_at[2] if stage_at is not None else None)
    except Exception as exc:  # noqa: BLE001 - a bug must not leave the submission 'running' forever
        fail(sessions, submission_id, attempt, notes, exc)
        return
    store_entry(sessions, submission_id, attempt, entry, run_dir, notes)


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


class LocalExecutor:
    """Daemon threads in the server process; each runs one sandboxed container at a time.

    Daemon threads on purpose: stopping the server (Ctrl-C, SIGTERM) must not wait for a
    run that may take hours. A run cut off that way is left ``running`` in the database,
    its container is reaped as an orphan by the next run, and :func:`resume` runs it
    again at the next start, exactly as after a crash.
    """

    def __init__(self, sessions: sessionmaker[Session], settings: RunSettings, workers: int = 1) -> None:
        self.sessions, self.settings = sessions, settings
        self._queue: queue.Queue[int | None] = queue.Queue()
        self._threads = [threading.Thread(target=self._work, name=f"sharedtask-run-{n}", daemon=True)
                         for n in range(workers)]
        for thread in self._threads:
            thread.start()

    def enqueue(self, submission_id: int) -> None:
        self._queue.put(submission_id)

    def _work(self) -> None:
        while (submission_id := self._queue.get()) is not None:
            try:
                run_submission(self.sessions, self.settings, submission_id)
            except Exception:  # noqa: BLE001 - one submission's bug must not stop the worker
                log.exception("submission %s", submission_id)

    def shutdown(self) -> None:
        """Let idle workers end; a worker inside a run is left to the process's exit."""
        for _ in self._threads:
            self._queue.put(None)


def resume(sessions: sessionmaker[Session], executor: Executor) -> list[int]:
    """After a start: runs cut off by a stop are queued again (with a note), every queued one is enqueued.

    With compute workers a run cut off on the server's side goes on on its worker: the
    executor's own ``resumed_note`` says so, and it waits for the job it sent before.
    """
    note = getattr(executor, "resumed_note", RESUMED_NOTE)
    with sessions.begin() as session:
        for sub in session.scalars(select(Submission).where(Submission.status == "running")):
            sub.status = "queued"
            sub.notes = [*(sub.notes or []), note]
        queued = list(session.scalars(select(Submission.id).where(Submission.status == "queued")
                                      .order_by(Submission.id)))
    for submission_id in queued:
        executor.enqueue(submission_id)
    return queued


def make_executor(broker: str | None, sessions: sessionmaker[Session], settings: RunSettings,
                  workers: int, image_source: Any = None, queue: str | None = None,
                  stage_source: Any = None) -> Executor:
    """The local pool, or with a broker URL the compute workers (``sharedtask worker``) behind it;
    ``workers`` is then the number of finished runs landed and scored at the same time."""
    if broker:
        from sharedtask.service.dispatch import BrokerExecutor

        return BrokerExecutor(broker, sessions, settings, scorers=workers, image_source=image_source,
                              queue_name=queue, stage_source=stage_source)
    return LocalExecutor(sessions, settings, workers)
