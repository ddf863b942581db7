"""The service's local pool: submissions run on this server's Docker daemon, a few at a time.

The same executor seam as the compute workers (:mod:`sharedtask.service.runs.broker`): a claimed
submission becomes a :class:`~sharedtask.executor.job.Job`
(:class:`~sharedtask.service.runs.jobs.Jobs`), :class:`sharedtask.executor.LocalExecutor` runs it
(:func:`sharedtask.executor.base.execute_in`: sandbox → validator), and the server scores what it
left with the pipeline's own step, as it does for a job a worker ran. The run folder is
``DATA_DIR/runs/<id>/attempt-<n>/<task>/<tag>``; a re-ranker's published first stage is mounted
from here.
"""

from __future__ import annotations

import logging
import queue
import threading

from sqlalchemy.orm import Session, sessionmaker

from sharedtask.executor.local import LocalExecutor
from sharedtask.service import phases
from sharedtask.service.models import Submission
from sharedtask.service.runs.claims import RunSettings, claim, fail
from sharedtask.service.runs.jobs import Jobs

log = logging.getLogger("sharedtask.service")


class LocalPool:
    """Daemon threads in the server process; each runs one sandboxed container at a time.

    Each thread asks :class:`~sharedtask.executor.LocalExecutor` (a pool of one: the job runs in
    the asking thread) for one job after the other. Daemon threads on purpose: stopping the
    server (Ctrl-C, SIGTERM) must not wait for a run that may take hours. A run cut off that way
    is left ``running`` in the database, its container is reaped as an orphan by the next run,
    and :func:`~sharedtask.service.runs.resume` runs it again at the next start, exactly as
    after a crash.
    """

    def __init__(self, sessions: sessionmaker[Session], settings: RunSettings, workers: int = 1) -> None:
        self.sessions, self.settings = sessions, settings
        self.jobs = Jobs(sessions, settings)
        self.executor = LocalExecutor(1)  # one run per asking thread; the threads below are the slots
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
                self.run(submission_id)
            except Exception:  # noqa: BLE001 - one submission's bug must not stop the worker
                log.exception("submission %s", submission_id)

    def run(self, submission_id: int) -> None:
        """Claim, run, validate and score one submission; every outcome ends in the database."""
        attempt = claim(self.sessions, submission_id, "server")
        if attempt is None:
            return
        with self.sessions() as session:
            sub = session.get(Submission, submission_id)
            assert sub is not None
            notes = list(sub.notes or [])
            dataset_name = phases.dataset_name(session, sub, self.settings.dataset)
        run_dir = self.settings.data_dir / "runs" / str(submission_id) / f"attempt-{attempt}" / sub.task_id / sub.tag
        try:
            job, stage_dir = self.jobs.new_job(sub, attempt, dataset_name)
            dataset, _, _ = self.jobs.dataset(sub.task_id, dataset_name)
            handle = self.executor.submit(job, run_dir, input_dir=dataset.input_dir, input_run=stage_dir)
            self.jobs.score(submission_id, attempt, job, dataset_name, handle.result(), run_dir, notes,
                            first_stage=sub.input_run)  # the published stage's name (submissions.admit)
        except Exception as exc:  # noqa: BLE001 - a bug must not leave the submission 'running' forever
            fail(self.sessions, submission_id, attempt, notes, exc)

    def shutdown(self) -> None:
        """Let idle workers end; a worker inside a run is left to the process's exit."""
        for _ in self._threads:
            self._queue.put(None)
