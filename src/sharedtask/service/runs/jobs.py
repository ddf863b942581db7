"""A claimed submission as a :class:`~sharedtask.executor.job.Job`, and the scoring of its result:
the same for the local pool and the compute workers, which differ only in where the job runs
(:class:`sharedtask.executor.LocalExecutor` or :class:`sharedtask.executor.remote.CeleryExecutor`).

The scoring is the pipeline's own step (:func:`sharedtask.pipeline.entry_for`): the validator's
verdict is stored first, then the official evaluation, each for the current claim only.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Callable

from sqlalchemy.orm import Session, sessionmaker

from sharedtask.errors import SharedTaskError
from sharedtask.executor.base import JobResult
from sharedtask.executor.job import DatasetRef, Job
from sharedtask.service.models import Stage, Submission
from sharedtask.service.runs.claims import RunSettings, store_entry, store_validation
from sharedtask.service.runs.lost_image import server_image_id

log = logging.getLogger("sharedtask.service")


class Jobs:
    """Makes the jobs of one server's submissions and scores what they left.

    ``stage_source``: how a published first stage reaches a re-ranker's compute worker
    (``executor/stages.py``); None on the local pool, which mounts it from here.
    """

    def __init__(self, sessions: sessionmaker[Session], settings: RunSettings, *,
                 image_source: Callable[[str], str | None] | None = None,
                 stage_source: Callable[[Path], str] | None = None, travels: bool = False) -> None:
        self.sessions, self.settings = sessions, settings
        self.image_source, self.stage_source = image_source, stage_source
        self.travels = travels  # the job runs on another machine: its first stage must travel too
        self._datasets: dict[str, tuple[Any, DatasetRef, str]] = {}

    def dataset(self, task_id: str, name: str) -> tuple[Any, DatasetRef, str]:
        """The task's dataset ``name``, its reference by content and its sandbox id (computed once)."""
        key = f"{task_id}\0{name}"
        if key not in self._datasets:
            from sharedtask.manifest import load_manifest
            from sharedtask.pipeline import dataset_ref
            from sharedtask.sandbox.api import dataset_id_of
            from sharedtask.spec import load_task

            task = load_task(task_id)
            dataset = load_manifest(self.settings.manifest).dataset(task, name)
            self._datasets[key] = (dataset, dataset_ref(task, dataset), dataset_id_of(dataset.input_dir))
        return self._datasets[key]

    def stage_of(self, sub: Submission) -> tuple[str, str, Path] | None:
        """A re-ranker's published first stage: (name, sha256 of its candidates, the checked folder)."""
        if sub.stage_id is None:
            return None
        from sharedtask.service.stages import mounted

        with self.sessions() as session:
            row = session.get(Stage, sub.stage_id)
            published = (row.path, row.sha256, row.name) if row is not None else None
        if published is None:
            raise SharedTaskError(f"the first stage {sub.input_run} this run re-ranks is no longer published")
        return published[2], published[1], mounted(published[0], published[1])  # the published bytes, checked

    def new_job(self, sub: Submission, attempt: int, dataset_name: str) -> tuple[Job, Path | None]:
        """The claim's job, and the folder of its first stage when it is mounted from here."""
        if sub.stage_id is not None and self.travels and self.stage_source is None:
            # admitted before the server shipped stages (no --images-dir)
            raise SharedTaskError(f"this run re-ranks the first stage {sub.input_run}, which the compute workers "
                                  "cannot get: the organizer starts the server with --images-dir to ship it")
        stage = self.stage_of(sub)
        job_stage = stage_source = None
        if stage is not None:
            name, sha, folder = stage
            job_stage = {"software": f"stage {name}", "job": "", "sha256": sha}
            stage_source = self.stage_source(folder) if self.travels and self.stage_source else None
        _, ref, sandbox_id = self.dataset(sub.task_id, dataset_name)
        image = sub.image_name
        job = Job(task=sub.task_id, software=f"submission-{sub.id}-{attempt}", image=image,
                  image_id=server_image_id(image), command=sub.command, dataset=ref,
                  image_source=self.image_source(image) if self.image_source else None,
                  options={"dataset_id": sandbox_id}, stage=job_stage, stage_source=stage_source)
        return job, (stage[2] if stage is not None and stage_source is None else None)

    def score(self, submission_id: int, attempt: int, job: Job, dataset_name: str, result: JobResult,
              run_dir: Path, notes: list[str], first_stage: str | None = None) -> bool:
        """The pipeline's row of a finished job (validation stored first, then the scores), for the claim."""
        from sharedtask.manifest import Software
        from sharedtask.pipeline import Planned, entry_for
        from sharedtask.spec import load_task

        task = load_task(job.task)
        dataset, _, _ = self.dataset(job.task, dataset_name)
        software = Software(name=job.software, image=job.image, kind="submission", command=job.command,
                            tasks=(task.id,))
        planned = Planned(task, software, dataset, run_dir, job, first_stage=first_stage)
        entry, _ = entry_for(planned, result, lambda line: log.debug("%s", line),
                             on_validated=lambda validated: store_validation(self.sessions, submission_id,
                                                                             attempt, validated))
        return store_entry(self.sessions, submission_id, attempt, entry, run_dir, notes)
