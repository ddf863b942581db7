"""The service's local pool: submissions run in this server process, a few at a time.

Each claimed submission runs with the organizer pipeline's own step
(:func:`sharedtask.pipeline.run_one`: sandbox → validator → official evaluation); its
outcome is stored by the claim's bookkeeping (:mod:`sharedtask.service.runs.claims`).
"""

from __future__ import annotations

import logging
import queue
import threading

from sqlalchemy.orm import Session, sessionmaker

from sharedtask.service import phases
from sharedtask.service.models import Stage, Submission
from sharedtask.service.runs.claims import RunSettings, claim, fail, store_entry, store_validation

log = logging.getLogger("sharedtask.service")


def run_submission(sessions: sessionmaker[Session], settings: RunSettings, submission_id: int) -> None:
    """Claim, run, validate and score one submission; every outcome ends in the database."""
    from sharedtask.manifest import Software, load_manifest
    from sharedtask.pipeline import run_one
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
        entry, _ = run_one(task, software, dataset, out_dir, lambda line: log.debug("%s", line), None,
                           on_validated=lambda validated: store_validation(sessions, submission_id, attempt,
                                                                           validated),
                           input_run=input_run, first_stage=stage_at[2] if stage_at is not None else None)
    except Exception as exc:  # noqa: BLE001 - a bug must not leave the submission 'running' forever
        fail(sessions, submission_id, attempt, notes, exc)
        return
    store_entry(sessions, submission_id, attempt, entry, run_dir, notes)


class LocalPool:
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
