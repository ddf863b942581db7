"""``serve --broker URL``: the service's submissions run on compute workers (``sharedtask worker``).

The same executor seam as ``demo --broker`` (:class:`sharedtask.executor.remote.CeleryExecutor`)
and as the local pool (:mod:`sharedtask.service.runs.pool`): a submission becomes a
:class:`~sharedtask.executor.job.Job` (:class:`~sharedtask.service.runs.jobs.Jobs`), the workers run
it in the same sandbox, its run folder lands in ``DATA_DIR/runs/<id>/<job id>`` and the server
validates nothing again: it scores the landed run with the pipeline's own step
(:func:`sharedtask.pipeline.entry_for`), as the local pool does.

Exactly once, across faults:

- the job is stored in the submission's row (``job``) before it is sent; its id names it
  everywhere (the broker's ``SET NX`` mark, the result, the run folder);
- a worker killed mid-run: the broker hands the job out again after its visibility timeout
  (acks late), and the handle here just keeps polling;
- the broker restarted: polling answers "no news" until it is back (``remote.is_transient``);
  a send that fails while it is away is tried again;
- the server restarted: :func:`sharedtask.service.runs.resume` re-queues the running
  submissions; their stored job is sent again under the same id, which the broker's mark
  turns into "wait for the one already sent", or its landed result is taken as it is;
- a result is stored only by the submission's current claim (``attempts``), so a result
  that arrives for a claim a re-run replaced is dropped.

A re-run by the organizer clears ``job``: the next claim makes a new job (its software name
carries the claim number), so the workers run it again instead of answering from memory.
"""

from __future__ import annotations

import logging
import queue
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from sqlalchemy.orm import Session, sessionmaker

from sharedtask.executor.job import Job
from sharedtask.service import phases
from sharedtask.service.models import Submission
from sharedtask.service.runs.claims import BROKER_RESUMED_NOTE, RunSettings, claim, fail, set_worker
from sharedtask.service.runs.jobs import Jobs
from sharedtask.service.runs.server_id import server_id

log = logging.getLogger("sharedtask.service")

POLL = 0.25  # s between two looks at the jobs in flight
RETRY = 2.0  # s before a send that met an unreachable broker is tried again


@dataclass
class _InFlight:
    submission_id: int
    attempt: int
    job: Job
    handle: Any
    notes: list[str]
    dataset: str
    worker: str | None = None


class BrokerDispatch:
    """Sends each claimed submission to the workers and follows it until it is scored.

    One thread sends (and re-sends while the broker is away), one follows every job in
    flight, and ``scorers`` threads land and score finished runs (the evaluation needs the
    hidden truth, which stays on the server).
    """

    resumed_note = BROKER_RESUMED_NOTE

    def __init__(self, broker: str, sessions: sessionmaker[Session], settings: RunSettings, *, scorers: int = 1,
                 image_source: Callable[[str], str | None] | None = None, queue_name: str | None = None,
                 stage_source: Callable[[Path], str] | None = None) -> None:
        from sharedtask.executor import executor_for

        self.sessions, self.settings = sessions, settings
        # how workers get the image and a published stage (images/shipping.py, executor/stages.py)
        self.jobs = Jobs(sessions, settings, image_source=image_source, stage_source=stage_source, travels=True)
        # one clear line when the broker does not answer; task ids namespaced per server (server_id.py)
        self.celery = executor_for(broker, queue=queue_name, namespace=server_id(settings.data_dir))
        self._todo: queue.Queue[int | None] = queue.Queue()
        self._flying: dict[int, _InFlight] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._scorers = ThreadPoolExecutor(max(1, scorers), thread_name_prefix="sharedtask-score")
        self._threads = [threading.Thread(target=self._send_loop, name="sharedtask-send", daemon=True),
                         threading.Thread(target=self._follow_loop, name="sharedtask-follow", daemon=True)]
        for thread in self._threads:
            thread.start()

    # ------------------------------------------------------------------ the seam of the service

    def enqueue(self, submission_id: int) -> None:
        self._todo.put(submission_id)

    def shutdown(self) -> None:
        """Stop sending and following; the jobs go on on their workers and are waited for after a restart."""
        self._stop.set()
        self._todo.put(None)
        self._scorers.shutdown(wait=False, cancel_futures=True)

    # ------------------------------------------------------------------ sending

    def _send_loop(self) -> None:
        while not self._stop.is_set() and (submission_id := self._todo.get()) is not None:
            try:
                self._send(submission_id)
            except Exception:  # noqa: BLE001 - one submission's fault must not stop the others
                log.exception("submission %s", submission_id)

    def _send(self, submission_id: int) -> None:
        attempt = claim(self.sessions, submission_id)
        if attempt is None:
            return
        with self.sessions() as session:
            sub = session.get(Submission, submission_id)
            assert sub is not None
            notes, stored = list(sub.notes or []), sub.job
            dataset_name = phases.dataset_name(session, sub, self.settings.dataset)
        try:
            job = Job.from_json(stored) if stored else self.jobs.new_job(sub, attempt, dataset_name)[0]
            if not stored:
                self._remember(submission_id, attempt, job)
        except Exception as exc:  # noqa: BLE001 - a missing image or dataset fails this submission only
            fail(self.sessions, submission_id, attempt, notes, exc)
            return
        run_dir = self.settings.data_dir / "runs" / str(submission_id) / job.id
        while not self._stop.is_set():
            try:
                handle = self.celery.submit(job, run_dir)
                break
            except Exception as exc:  # noqa: BLE001 - see remote.is_transient: the broker is away, try again
                from sharedtask.executor.remote import is_transient

                if not is_transient(exc):
                    fail(self.sessions, submission_id, attempt, notes, exc)
                    return
                log.warning("submission %s: the broker does not answer (%s); sending again", submission_id,
                            exc.__class__.__name__)
                self._stop.wait(RETRY)
        else:
            return
        with self._lock:
            self._flying[submission_id] = _InFlight(submission_id, attempt, job, handle, notes, dataset_name)

    def _remember(self, submission_id: int, attempt: int, job: Job) -> None:
        from sqlalchemy import update

        with self.sessions.begin() as session:
            session.execute(update(Submission).where(Submission.id == submission_id,
                                                     Submission.attempts == attempt)
                            .values(job=job.to_json()))

    # ------------------------------------------------------------------ following

    def _follow_loop(self) -> None:
        while not self._stop.wait(POLL):
            with self._lock:
                flying = list(self._flying.values())
            for run in flying:
                try:
                    self._follow(run)
                except Exception:  # noqa: BLE001 - polling goes on for the others
                    log.exception("submission %s", run.submission_id)

    def _follow(self, run: _InFlight) -> None:
        state, worker = run.handle.state()
        if worker and worker != run.worker:
            run.worker = worker
            set_worker(self.sessions, run.submission_id, run.attempt, worker)
        if run.handle.done():
            with self._lock:
                self._flying.pop(run.submission_id, None)
            self._scorers.submit(self._score, run)

    def _result(self, run: _InFlight) -> Any:
        """The landed result; a broker away at this moment is waited for, not a failure of the run."""
        from sharedtask.executor.remote import is_transient

        while True:
            try:
                return run.handle.result()
            except Exception as exc:  # noqa: BLE001 - re-raised unless transient
                if not is_transient(exc) or self._stop.is_set():
                    raise
                self._stop.wait(RETRY)

    def _score(self, run: _InFlight) -> None:
        """Land the run folder, then the pipeline's row (validation stored first, then the scores)."""
        sid, attempt = run.submission_id, run.attempt
        try:
            result = self._result(run)
            if result.worker and result.worker != "?":
                set_worker(self.sessions, sid, attempt, result.worker)
            self.jobs.score(sid, attempt, run.job, run.dataset, result, Path(run.handle.run_dir), run.notes)
        except Exception as exc:  # noqa: BLE001 - never leave the submission 'running'
            fail(self.sessions, sid, attempt, run.notes, exc)
