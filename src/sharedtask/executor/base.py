"""The executor seam: ``submit(job, run_dir) -> handle``, the same for every backend.

A backend (the local pool, Celery compute workers, a Kubernetes rendering) takes a
:class:`~sharedtask.executor.job.Job` and eventually leaves a complete run folder at
``run_dir`` with ``job-result.json`` in it. Every run, wherever it happens, goes
through :func:`execute_in`, i.e. :func:`sharedtask.sandbox.run`: one run logic.
"""

from __future__ import annotations

import json
import threading
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

from sharedtask.errors import SharedTaskError
from sharedtask.executor.job import DONE, FAILED, REFUSED, Job
from sharedtask.sandbox.interrupts import MESSAGE, Interrupted, step, stopping
from sharedtask.sandbox.outputs import REJECTED, remove_tree
from sharedtask.sandbox.runner import INTERRUPTED

RESULT_FILE = "job-result.json"


@dataclass
class JobResult:
    """How a job ended: the sandbox's status and message, the validator's verdict, the run record."""

    job_id: str
    state: str  # done | failed | refused
    status: str  # the sandbox's status (success, failed, timeout, oom, ...), or "refused" / "error"
    message: str
    worker: str
    validation: dict[str, Any] = field(default_factory=dict)
    record: dict[str, Any] = field(default_factory=dict)
    run_dir: Path | None = None

    @property
    def ok(self) -> bool:
        return self.status == "success" and self.validation.get("status") not in REJECTED

    def to_json(self) -> dict[str, Any]:
        raw = asdict(self)
        raw["run_dir"] = None if self.run_dir is None else str(self.run_dir)
        return raw

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> "JobResult":
        fields = dict(raw)
        fields["run_dir"] = Path(raw["run_dir"]) if raw.get("run_dir") else None
        return cls(**{k: v for k, v in fields.items() if k in cls.__dataclass_fields__})

    @classmethod
    def from_worker(cls, raw: Any, job_id: str) -> "JobResult":
        """A worker's result, its fields checked and bounded: a worker ran a team's code and may lie.

        The job id is the coordinator's own; a field of the wrong type or an unknown state
        makes the result ``failed``; the run file is reduced to a plain name (see :func:`run_file_name`).
        """
        def text(value: Any, limit: int) -> str:
            return value[:limit] if isinstance(value, str) else ""

        if not isinstance(raw, dict):
            return cls(job_id, FAILED, "error", "the worker's result is not an object", "?")
        worker = text(raw.get("worker"), 200) or "?"
        validation, record = raw.get("validation"), raw.get("record")
        state = raw.get("state")
        if state not in (DONE, FAILED, REFUSED) or not isinstance(validation, dict) or not isinstance(record, dict):
            return cls(job_id, FAILED, "error", "the worker's result is malformed (state, validation or record)",
                       worker)
        validation = dict(validation)
        if validation.get("run_file") is not None:
            name = run_file_name(validation["run_file"])
            if name is None:
                shown = str(validation["run_file"])[:120]
                return cls(job_id, FAILED, "error", f"the worker named the run file {shown!r}, not a plain "
                                                    "name inside output/: not landed", worker)
            validation["run_file"] = name
        return cls(job_id, state, text(raw.get("status"), 100) or "error", text(raw.get("message"), 4000),
                   worker, validation, record)

    def relocated(self, run_dir: Path) -> "JobResult":
        """The same result for a run folder that now lives at ``run_dir`` (after landing): every
        path is the coordinator's own, the run file a plain name below its ``output/``."""
        validation = dict(self.validation)
        if validation.get("run_file"):
            name = run_file_name(validation["run_file"])
            if name is None:
                return JobResult(self.job_id, FAILED, "error", "the run file is not a plain name inside output/",
                                 self.worker, {}, {}, run_dir)
            validation["run_file"] = str(run_dir / "output" / name)
        return JobResult(self.job_id, self.state, self.status, self.message, self.worker, validation,
                         relocated_record(self.record, run_dir), run_dir)


def run_file_name(value: Any) -> str | None:
    """The run file as one plain name inside ``output/`` (TIRA looks at the top only), else None.

    A worker's ``run_file`` is a name, never a path the coordinator opens: ``run.txt`` or
    ``run.txt.gz`` passes, ``/etc/passwd``, ``../x``, ``a/b`` and ``.`` do not.
    """
    if not isinstance(value, str) or not value or len(value) > 255 or "\x00" in value:
        return None
    return None if "/" in value or value in (".", "..") else value


def relocated_record(record: dict[str, Any], run_dir: Path) -> dict[str, Any]:
    """The run record with the worker's scratch folder replaced by ``run_dir`` in every path.

    The worker recorded where it ran (``<scratch>/run/output``, its logs, the ``docker run``
    line's mounts); once the folder has landed, the record must name the folder the
    coordinator holds, or ``reproduce`` and the report point at a path of another machine.
    The worker's own folder stays in ``executor.worker_run_dir``.
    """
    out = (record.get("output") or {}).get("dir") if isinstance(record.get("output"), dict) else None
    if not isinstance(out, str) or not out:
        return record
    old = str(Path(out).parent)
    new = str(run_dir.resolve())
    if old == new:
        return record

    def swap(value: Any) -> Any:
        if isinstance(value, str):
            if value == old or value.startswith(old + "/"):
                return new + value[len(old):]
            return value.replace(old + "/", new + "/") if old + "/" in value else value
        if isinstance(value, dict):
            return {swap(k): swap(v) for k, v in value.items()}
        if isinstance(value, list):
            return [swap(v) for v in value]
        return value

    moved = swap(record)
    moved["executor"] = {**(record.get("executor") or {}), "worker_run_dir": old}
    return moved


class Handle(Protocol):
    """A submitted job: poll its state, wait for its result."""

    job: Job
    run_dir: Path

    def state(self) -> tuple[str, str | None]:
        """(queued | running | done | failed | refused, the worker's name when known)."""
        ...

    def done(self) -> bool: ...

    def result(self, timeout: float | None = None) -> JobResult: ...


class Executor(Protocol):
    name: str

    def submit(self, job: Job, run_dir: Path, *, input_dir: Path | None = None,
               observer: Any | None = None) -> Handle: ...

    def close(self) -> None: ...


def portable(run_dir: Path, result: JobResult) -> dict[str, Any]:
    """The result as JSON that holds no path of this machine: the run file relative to ``output/``."""
    raw = result.to_json()
    raw["run_dir"] = None
    raw["validation"] = dict(raw["validation"])
    run_file = raw["validation"].get("run_file")
    if run_file:
        output = (run_dir / "output").resolve()
        path = Path(run_file).resolve()
        raw["validation"]["run_file"] = path.relative_to(output).as_posix() if path.is_relative_to(output) else path.name
    return raw


def write_result(run_dir: Path, result: JobResult) -> str:
    """``job-result.json``'s text (see :func:`portable`)."""
    return json.dumps(portable(run_dir, result), indent=2, sort_keys=True) + "\n"


def landed(run_dir: Path, job: Job) -> JobResult | None:
    """The result already in ``run_dir`` for this very job (a coordinator restarted), else None.

    An interrupted run is no result: ``--resume`` runs it again."""
    try:
        raw = json.loads((run_dir / RESULT_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if raw.get("job_id") != job.id or raw.get("status") == INTERRUPTED:
        return None
    return JobResult.from_json(raw).relocated(run_dir)


def execute_in(job: Job, input_dir: Path, run_dir: Path, image: str, *, worker: str,
               observer: Any | None = None, input_run: Path | None = None,
               stop: threading.Event | None = None) -> JobResult:
    """Run the job in the sandbox into ``run_dir`` (created, must not hold a run) and say how it ended.

    The one place every backend runs a job: :func:`sharedtask.sandbox.run` with the
    task's limits and the job's overrides, the same call as ``sharedtask run``. Only the
    options of the closed job schema pass (:func:`~sharedtask.executor.admission.sandbox_options`).
    ``stop`` interrupts the run from another thread (a pool's close, a worker's shutdown): it then
    ends as :func:`interrupted_result`, at whichever step it was, and its run folder is removed.
    """
    from sharedtask.executor.admission import sandbox_options
    from sharedtask.sandbox import run as sandbox_run

    options = sandbox_options(job)  # user, network and input run are the worker's, never the job's
    if job.stage is not None:  # a re-ranker: the coordinator's own stage folder, checked against the job
        options["input_run"] = _stage_folder(job, input_run)
    run_dir.mkdir(parents=True, exist_ok=True)
    try:
        outcome = sandbox_run(job.task, image, command=job.command, input_dir=input_dir,
                              output_dir=run_dir / "output", record_dir=run_dir, observer=observer, stop=stop,
                              **options)
        if outcome.result.status == INTERRUPTED:
            raise Interrupted(outcome.result.message)
        step("landing", stop)
        state = DONE if outcome.result.ok else FAILED
        record = {**outcome.record, "executor": {"job_id": job.id, "worker": worker}}  # where it ran, for the report
        outcome.record_path.write_text(json.dumps(record, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        result = JobResult(job.id, state, outcome.result.status, outcome.result.message, worker,
                           dict(outcome.validation), record, run_dir)
        (run_dir / RESULT_FILE).write_text(write_result(run_dir, result), encoding="utf-8")
        if stopping(stop):  # the stop came while the result was written: it is not kept either
            raise Interrupted(MESSAGE)
    except KeyboardInterrupt as exc:  # at any step, in this thread or by ``stop``
        remove_tree(run_dir)  # nothing of an interrupted job is kept: --resume runs it again
        return interrupted_result(job, worker, str(exc) if isinstance(exc, Interrupted) else MESSAGE)
    return result


def _stage_folder(job: Job, input_run: Path | None) -> Path:
    """The stage folder a re-ranker reads, when its ``rerank.jsonl.gz`` is the one the job names."""
    from sharedtask.data.checksum import sha256
    from sharedtask.rerank import RERANK_FILE

    assert job.stage is not None
    candidates = None if input_run is None else input_run / RERANK_FILE
    if candidates is None or not candidates.is_file():
        raise SharedTaskError(f"job {job.id}: its first stage's candidates are not here",
                              hint="re-rankers run where their first stage landed (docs/pipelines.md)")
    if sha256(candidates) != job.stage["sha256"]:
        raise SharedTaskError(f"job {job.id}: {candidates} is not the first stage's input the job names",
                              hint="the first stage changed: plan the re-ranker again")
    return input_run


def interrupted_result(job: Job, worker: str, message: str = MESSAGE) -> JobResult:
    """A job stopped by an interrupt (Ctrl-C, a pool's close, a worker's shutdown): not the run's fault."""
    return JobResult(job.id, FAILED, INTERRUPTED, message, worker)


def refused(job: Job, worker: str, reason: str) -> JobResult:
    """A job a worker would not run (image or dataset not as the organizer's): nothing ran."""
    return JobResult(job.id, REFUSED, "refused", reason, worker)
