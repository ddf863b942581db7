"""A run job: what one sandboxed run needs, as plain JSON that can travel to a worker.

A job names everything by content, never by a path on the organizer's machine: the
image by reference *and* id (the sha256 of its configuration, what ``docker images
--digests`` and ``docker inspect`` call its Id), the dataset by id *and* the sha256 of
each of its input files. Its id is a hash of those, so the same software on the same
data under the same limits is the same job on every machine and after every restart:
a result is written once under that id and never counted twice.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from typing import Any

#: Job states, in the order a job passes through them (``refused``: a worker would not run it).
QUEUED, RUNNING, DONE, FAILED, REFUSED = "queued", "running", "done", "failed", "refused"


@dataclass(frozen=True)
class DatasetRef:
    """A dataset by id and by the sha256 of each input file (path relative to ``input/``)."""

    id: str
    sha256: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Job:
    """One software on one dataset of one task, under the task's sandbox (plus ``options``)."""

    task: str
    software: str
    image: str
    image_id: str
    command: str | None
    dataset: DatasetRef
    #: Where a worker gets the image when it lacks it: ``archive:<path or http(s) URL>`` of a
    #: ``docker save`` file, or ``registry:<name>@sha256:<digest>``; None: it must be there.
    image_source: str | None = None
    #: Sandbox options (:data:`sharedtask.sandbox.options.OPTIONS`: a job may lower the limits and
    #: set the choices; executor/admission.py checks them), keywords of :func:`sharedtask.sandbox.run`.
    options: dict[str, Any] = field(default_factory=dict)
    #: A re-ranker's input (docs/pipelines.md): ``{"software", "job", "sha256"}`` of the first
    #: stage and its ``rerank.jsonl.gz``; part of the id, so a changed first stage is a new job.
    stage: dict[str, str] | None = None
    #: Where a worker gets that stage: ``archive:<path or URL>#sha256=<hex>`` (executor/stages.py);
    #: None: it runs where the stage is. Not part of the id, as ``image_source`` is not.
    stage_source: str | None = None

    @property
    def id(self) -> str:
        """Stable: a hash of everything that decides what the run computes (not of where)."""
        identity = {"task": self.task, "software": self.software, "image_id": self.image_id,
                    "command": self.command, "dataset": asdict(self.dataset), "options": self.options}
        if self.stage is not None:  # absent otherwise: the ids of first stages are unchanged
            identity["stage"] = self.stage
        text = json.dumps(identity, sort_keys=True, separators=(",", ":"))
        return "job-" + hashlib.sha256(text.encode()).hexdigest()[:24]

    def to_json(self) -> dict[str, Any]:
        raw = {**asdict(self), "id": self.id}
        if raw["stage_source"] is None:  # a first stage's payload is as before stages travelled
            del raw["stage_source"]
        return raw

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> "Job":
        fields = {k: v for k, v in raw.items() if k != "id"}
        fields["dataset"] = DatasetRef(**fields["dataset"])
        job = cls(**fields)
        if raw.get("id") not in (None, job.id):
            raise ValueError(f"job id {raw.get('id')} does not match its content ({job.id})")
        return job
