"""The organizer's side of the Celery backend: send jobs, follow them, land their outputs.

A job is sent once under its stable id (with Redis a ``SET NX`` mark records it, so a
restarted coordinator waits for the job it already sent instead of sending it again);
a result already landed in its run folder is taken as it is. Polling survives a
broker that goes away for a while: the states are asked again until it is back.
"""

from __future__ import annotations

import json
import os
import stat
import time
from pathlib import Path
from typing import Any

from sharedtask.errors import SharedTaskError
from sharedtask.executor.base import JobResult, landed, write_result
from sharedtask.executor.celery_app import DEFAULT_QUEUE, DEFAULT_VISIBILITY, TASK_NAME, is_redis, make_app
from sharedtask.executor.job import DONE, FAILED, QUEUED, REFUSED, RUNNING, Job
from sharedtask.executor.redis_keys import KEY_PREFIX, RESULT_TTL
from sharedtask.executor.transfer import LandingRefused, land
from sharedtask.sandbox.record import RECORD_JSON

POLL = 0.25  # s between two looks at a job's state


def is_transient(exc: BaseException) -> bool:
    """A broker or backend that cannot be reached right now (restarting), not a real failure."""
    import kombu.exceptions
    import redis.exceptions

    return isinstance(exc, (OSError, redis.exceptions.ConnectionError, redis.exceptions.TimeoutError,
                            kombu.exceptions.OperationalError))


class CeleryHandle:
    def __init__(self, executor: "CeleryExecutor", job: Job, run_dir: Path, result: JobResult | None = None) -> None:
        self.executor, self.job, self.run_dir = executor, job, run_dir
        self._result = result
        self._state: tuple[str, str | None] = (QUEUED, None)

    def _async(self) -> Any:
        return self.executor.app.AsyncResult(self.executor.task_id(self.job))

    def state(self) -> tuple[str, str | None]:
        if self._result is not None:
            return self._result.state, self._result.worker
        try:
            meta = self.executor.app.backend.get_task_meta(self.executor.task_id(self.job))
        except Exception as exc:  # noqa: BLE001 - see is_transient
            if is_transient(exc):
                return self._state
            raise
        celery_state = meta.get("status")
        info = meta.get("result")
        if celery_state == "STARTED":
            # Celery names a worker node "celery@<our name>".
            node = str(info.get("hostname", "")) if isinstance(info, dict) else ""
            self._state = (RUNNING, node.partition("@")[2] or None)
        elif celery_state == "SUCCESS":
            info = info if isinstance(info, dict) else {}
            state, worker = info.get("state", DONE), info.get("worker")
            self._state = (state if state in (DONE, FAILED, REFUSED) else FAILED,
                           worker[:200] if isinstance(worker, str) else None)
        elif celery_state in ("FAILURE", "REVOKED"):
            self._state = (FAILED, None)
        return self._state

    def done(self) -> bool:
        return self._result is not None or self.state()[0] in (DONE, FAILED, REFUSED)

    def result(self, timeout: float | None = None) -> JobResult:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self._result is None:
            if self.done():
                self._result = self._collect()
                break
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError(f"job {self.job.id} did not finish within {timeout} s")
            time.sleep(POLL)
        return self._result

    def _collect(self) -> JobResult:
        """The worker's result, landed in this coordinator's run folder; never raises for the run's
        own faults (a damaged or hostile archive fails this run, not the batch)."""
        meta = self.executor.app.backend.get_task_meta(self.executor.task_id(self.job))
        payload = meta.get("result")
        if meta.get("status") != "SUCCESS" or not isinstance(payload, dict):
            reason = f"{type(payload).__name__}: {payload}" if isinstance(payload, BaseException) else str(payload)
            return JobResult(self.job.id, FAILED, "error", f"the worker failed: {reason}"[:2000], "?",
                             run_dir=None)
        try:
            return self._land(dict(payload))
        except (RecursionError, ValueError, TypeError, KeyError, AttributeError) as exc:  # a malformed result
            return self._failed(JobResult(self.job.id, FAILED, "error", "", "?"),
                                f"the worker's result is malformed ({exc.__class__.__name__})", final=True)

    def _land(self, payload: dict[str, Any]) -> JobResult:
        archive, digest = payload.pop("archive", None), payload.pop("archive_sha256", None)
        result = JobResult.from_worker(payload, self.job.id)
        if archive is None or result.state == REFUSED:
            return result
        if not isinstance(archive, str) or not isinstance(digest, str):
            return self._failed(result, "the worker's archive is malformed")
        landed_result = result.relocated(self.run_dir)
        extra = {"job-result.json": write_result(self.run_dir, landed_result)}
        if landed_result.record:
            extra[RECORD_JSON] = json.dumps(landed_result.record, indent=2, ensure_ascii=False) + "\n"
        max_bytes, max_entries = landing_bounds(self.job.task)
        try:
            land(archive, digest, self.run_dir, extra=extra, max_bytes=max_bytes, max_entries=max_entries)
        except LandingRefused as exc:
            return self._failed(result, f"the outputs were not landed: {exc}", final=True)
        except SharedTaskError as exc:
            return self._failed(result, str(exc))
        run_file = landed_result.validation.get("run_file")
        if run_file and not _regular(Path(run_file)):
            return self._failed(result, f"the worker named the run file {Path(run_file).name!r}, which is not "
                                        "a regular file in the landed output/", final=True)
        return landed_result

    def _failed(self, result: JobResult, reason: str, *, final: bool = False) -> JobResult:
        """This run failed on its way back; with ``final`` the reason is kept in its run folder
        (``job-result.json`` alone) so that a restarted coordinator reports it again."""
        failed = JobResult(self.job.id, FAILED, "error", reason[:2000], result.worker, run_dir=self.run_dir)
        if final:
            from sharedtask.sandbox.outputs import remove_tree

            if self.run_dir.exists() or self.run_dir.is_symlink():
                remove_tree(self.run_dir)
            self.run_dir.mkdir(parents=True)
            (self.run_dir / "job-result.json").write_text(write_result(self.run_dir, failed), encoding="utf-8")
        return failed


def _regular(path: Path) -> bool:
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def landing_bounds(task_id: str) -> tuple[int, int]:
    """Bytes and entries a run folder of ``task_id`` may unpack to: four times the task's output
    limit (the walk that enforces it overshoots) plus both logs at their cap, and its entries."""
    from sharedtask.sandbox.policy import Limits
    from sharedtask.sandbox.runner import LOG_FILE_CAP
    from sharedtask.spec import load_task

    limits = Limits.from_spec(load_task(task_id).sandbox)
    return 4 * limits.max_output + 2 * LOG_FILE_CAP + 32 * 2**20, limits.max_output_entries + 64


def answering_redis(broker: str) -> Any:
    """A Redis client of a ``redis://`` broker that answered a ping (None for another broker), or one
    line saying it does not answer."""
    if not is_redis(broker):
        return None
    import redis

    client = redis.Redis.from_url(broker, socket_timeout=10, socket_connect_timeout=10)
    try:
        client.ping()
    except redis.exceptions.RedisError as exc:
        raise SharedTaskError(f"the broker {redacted_url(broker)} does not answer ({exc.__class__.__name__}: {exc})",
                              hint="start redis-server there, or check the URL and its password") from None
    return client


class CeleryExecutor:
    """Jobs go to ``sharedtask worker`` processes through a Celery broker (Redis by default)."""

    name = "celery"

    def __init__(self, broker: str, *, queue: str = DEFAULT_QUEUE, backend: str | None = None,
                 visibility_timeout: float = DEFAULT_VISIBILITY, namespace: str | None = None) -> None:
        self.broker, self.queue = broker, queue
        #: prefixes every task id: two servers sharing one broker never share a job's result, mark
        #: or claim, though their jobs' ids (content hashes) are equal (issue 39)
        self.namespace = namespace
        self.app = make_app(broker, backend=backend, queue=queue, visibility_timeout=visibility_timeout)
        self._redis: Any = answering_redis(broker)

    def submit(self, job: Job, run_dir: Path, *, input_dir: Path | None = None,
               observer: Any | None = None, resume: bool = True) -> CeleryHandle:
        """Send the job unless its result is already in ``run_dir`` or it was sent before."""
        previous = landed(run_dir, job)
        if previous is not None:
            return CeleryHandle(self, job, run_dir, previous)
        if self._first_submission(job):
            self._send(job)
        else:
            meta = self.app.backend.get_task_meta(self.task_id(job))
            info = meta.get("result")
            if meta.get("status") == "SUCCESS" and isinstance(info, dict) and info.get("state") == REFUSED:
                self.app.backend.forget(self.task_id(job))  # refused last time: the worker may be fixed now
                if self._redis is not None:
                    self._redis.delete(f"{KEY_PREFIX}deliveries:{self.task_id(job)}")
                self._send(job)
        return CeleryHandle(self, job, run_dir)

    def task_id(self, job: Job) -> str:
        """The job's id in the broker and the result backend: namespaced when this coordinator has one."""
        return f"{self.namespace}.{job.id}" if self.namespace else job.id

    def _first_submission(self, job: Job) -> bool:
        if self._redis is None:
            return True
        return bool(self._redis.set(f"{KEY_PREFIX}submitted:{self.task_id(job)}", "1", nx=True, ex=RESULT_TTL))

    def _send(self, job: Job) -> None:
        self.app.send_task(TASK_NAME, args=[job.to_json()], task_id=self.task_id(job), queue=self.queue)

    def close(self, interrupted: bool = False) -> None:
        self.app.close()


def redacted_url(url: str) -> str:
    """A broker URL without its password, for messages."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    if parts.password:
        netloc = f"{parts.username or ''}:***@{parts.hostname}" + (f":{parts.port}" if parts.port else "")
        return urlunsplit(parts._replace(netloc=netloc))
    return url
