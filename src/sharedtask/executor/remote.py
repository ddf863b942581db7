"""The organizer's side of the Celery backend: send jobs, follow them, land their outputs.

A job is sent once under its stable id (with Redis a ``SET NX`` mark records it, so a
restarted coordinator waits for the job it already sent instead of sending it again);
a result already landed in its run folder is taken as it is. Polling survives a
broker that goes away for a while: the states are asked again until it is back.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from sharedtask.errors import SharedTaskError
from sharedtask.executor.base import JobResult, landed, write_result
from sharedtask.executor.celery_app import (DEFAULT_QUEUE, DEFAULT_VISIBILITY, KEY_PREFIX, RESULT_TTL, TASK_NAME,
                                            is_redis, make_app)
from sharedtask.executor.job import DONE, FAILED, QUEUED, REFUSED, RUNNING, Job
from sharedtask.executor.transfer import land
from sharedtask.sandbox.record import RECORD_JSON

POLL = 0.25  # s between two looks at a job's state


def _transient(exc: BaseException) -> bool:
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
        return self.executor.app.AsyncResult(self.job.id)

    def state(self) -> tuple[str, str | None]:
        if self._result is not None:
            return self._result.state, self._result.worker
        try:
            meta = self.executor.app.backend.get_task_meta(self.job.id)
        except Exception as exc:  # noqa: BLE001 - see _transient
            if _transient(exc):
                return self._state
            raise
        celery_state = meta.get("status")
        info = meta.get("result")
        if celery_state == "STARTED":
            # Celery names a worker node "celery@<our name>".
            node = str(info.get("hostname", "")) if isinstance(info, dict) else ""
            self._state = (RUNNING, node.partition("@")[2] or None)
        elif celery_state == "SUCCESS":
            self._state = ((info or {}).get("state", DONE), (info or {}).get("worker"))
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
        meta = self.executor.app.backend.get_task_meta(self.job.id)
        payload = meta.get("result")
        if meta.get("status") != "SUCCESS" or not isinstance(payload, dict):
            reason = f"{type(payload).__name__}: {payload}" if isinstance(payload, BaseException) else str(payload)
            return JobResult(self.job.id, FAILED, "error", f"the worker failed: {reason}"[:2000], "?",
                             run_dir=None)
        archive, digest = payload.pop("archive", None), payload.pop("archive_sha256", None)
        result = JobResult.from_json(payload)
        if archive is None:
            return result
        landed_result = result.relocated(self.run_dir)
        extra = {"job-result.json": write_result(self.run_dir, landed_result)}
        if landed_result.record:
            extra[RECORD_JSON] = json.dumps(landed_result.record, indent=2, ensure_ascii=False) + "\n"
        land(archive, digest, self.run_dir, extra=extra)
        return landed_result


class CeleryExecutor:
    """Jobs go to ``sharedtask worker`` processes through a Celery broker (Redis by default)."""

    name = "celery"

    def __init__(self, broker: str, *, queue: str = DEFAULT_QUEUE, backend: str | None = None,
                 visibility_timeout: float = DEFAULT_VISIBILITY) -> None:
        self.broker, self.queue = broker, queue
        self.app = make_app(broker, backend=backend, queue=queue, visibility_timeout=visibility_timeout)
        self._redis: Any = None
        if is_redis(broker):
            import redis

            self._redis = redis.Redis.from_url(broker, socket_timeout=10, socket_connect_timeout=10)
            try:
                self._redis.ping()
            except redis.exceptions.RedisError as exc:
                raise SharedTaskError(f"the broker {_safe(broker)} does not answer ({exc.__class__.__name__}: {exc})",
                                      hint="start redis-server there, or check the URL and its password") from None

    def submit(self, job: Job, run_dir: Path, *, input_dir: Path | None = None,
               observer: Any | None = None, resume: bool = True) -> CeleryHandle:
        """Send the job unless its result is already in ``run_dir`` or it was sent before."""
        previous = landed(run_dir, job)
        if previous is not None:
            return CeleryHandle(self, job, run_dir, previous)
        if self._first_submission(job):
            self._send(job)
        else:
            meta = self.app.backend.get_task_meta(job.id)
            info = meta.get("result")
            if meta.get("status") == "SUCCESS" and isinstance(info, dict) and info.get("state") == REFUSED:
                self.app.backend.forget(job.id)  # refused last time: the worker may be fixed now
                if self._redis is not None:
                    self._redis.delete(f"{KEY_PREFIX}deliveries:{job.id}")
                self._send(job)
        return CeleryHandle(self, job, run_dir)

    def _first_submission(self, job: Job) -> bool:
        if self._redis is None:
            return True
        return bool(self._redis.set(f"{KEY_PREFIX}submitted:{job.id}", "1", nx=True, ex=RESULT_TTL))

    def _send(self, job: Job) -> None:
        self.app.send_task(TASK_NAME, args=[job.to_json()], task_id=job.id, queue=self.queue)

    def close(self, interrupted: bool = False) -> None:
        self.app.close()


def _safe(url: str) -> str:
    """A broker URL without its password, for messages."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    if parts.password:
        netloc = f"{parts.username or ''}:***@{parts.hostname}" + (f":{parts.port}" if parts.port else "")
        return urlunsplit(parts._replace(netloc=netloc))
    return url
