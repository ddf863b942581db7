"""Celery compute workers: the app, its one task, and the safety nets around it.

Codabench dispatches submissions through a Celery broker to compute workers, and
TIRA's newer worker is a Celery task too; this follows that model. Settings that
make a job survive faults (Celery docs, "Tasks: acks_late", "Optimizing: prefetch"):

- ``task_acks_late`` + ``task_reject_on_worker_lost``: a job is acknowledged only
  when it has finished; a worker killed mid-run leaves it unacknowledged, and the
  broker delivers it again;
- ``worker_prefetch_multiplier = 1``: a worker holds no more jobs than it runs;
- with Redis the unacknowledged job comes back after the *visibility timeout*
  (kombu's redis transport restores entries of its ``unacked_index`` sorted set
  older than that). A live worker refreshes the score of each job it runs (a
  lease), so a long run is never handed out twice while its worker lives, and a
  dead worker's job returns within the timeout;
- Redis is started with AOF (``appendonly yes``) so that a restarted broker keeps
  the queue; RabbitMQ (``amqp://``) keeps durable queues by itself;
- a job is delivered at most ``MAX_DELIVERIES`` times: a job that kills every
  worker it meets is reported as failed instead of going round for ever.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sharedtask.errors import SharedTaskError
from sharedtask.executor.redis_keys import KEY_PREFIX, RESULT_TTL
from sharedtask.units import format_size

TASK_NAME = "sharedtask.run_job"
DEFAULT_QUEUE = "sharedtask"
DEFAULT_VISIBILITY = 60.0  # s before a dead worker's job is delivered again
MAX_DELIVERIES = 3
#: Largest run-folder archive (base64 characters) a worker sends back through the result backend.
MAX_ARCHIVE = 256 * 2**20


def is_redis(url: str) -> bool:
    return url.startswith(("redis://", "rediss://", "unix://"))


def make_app(broker: str, *, backend: str | None = None, queue: str = DEFAULT_QUEUE,
             visibility_timeout: float = DEFAULT_VISIBILITY) -> Any:
    """A Celery app on ``broker``; the result backend is the broker itself for Redis, RPC otherwise."""
    from celery import Celery

    app = Celery("sharedtask", broker=broker, backend=backend or (broker if is_redis(broker) else "rpc://"))
    app.conf.update(
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        task_track_started=True,
        worker_prefetch_multiplier=1,
        task_default_queue=queue,
        task_serializer="json",
        result_serializer="json",
        accept_content=["json"],
        result_expires=RESULT_TTL,
        result_extended=True,
        broker_connection_retry_on_startup=True,
        broker_connection_max_retries=None,
        # kombu scans for expired leases every interval * throttle seconds (its docs, redis transport).
        broker_transport_options={"visibility_timeout": visibility_timeout,
                                  "unacked_restore_interval": max(1.0, min(10.0, visibility_timeout / 4)),
                                  "unacked_restore_throttle": 1},
        # A result finished while the broker restarts is stored once it is back, not lost.
        result_backend_always_retry=True,
        result_backend_max_retries=60,
        result_backend_transport_options={"retry_policy": {"max_retries": 20, "interval_step": 0.5}},
        worker_hijack_root_logger=False,
        worker_cancel_long_running_tasks_on_connection_loss=False,
    )
    return app


# ----------------------------------------------------------------------------- the worker's side

@dataclass
class WorkerConfig:
    broker: str
    name: str
    data_root: Path | None
    work_dir: Path
    visibility_timeout: float
    #: the worker's own maxima: a job may ask for less, never for more (executor/admission.py)
    policy: Any = None
    #: the organizer's images server and its token (executor/fetch.py); None: shared paths only
    origin: Any = None


_config: WorkerConfig | None = None
_delivery_tags: dict[str, str] = {}  # task id -> kombu delivery tag (redis: the unacked entry)
#: set when the worker shuts down (SIGTERM, SIGINT): its runs end as interrupted at whichever
#: step they are, remove what they made, and their jobs go back to the queue for another worker
_stopping = threading.Event()


def _redis(url: str) -> Any:
    """A client that waits out a broker restart (about a minute of retries) instead of failing the job."""
    import redis
    from redis.backoff import ExponentialBackoff
    from redis.retry import Retry

    return redis.Redis.from_url(url, socket_timeout=10, socket_connect_timeout=10, health_check_interval=30,
                                retry=Retry(ExponentialBackoff(cap=4, base=0.25), 20),
                                retry_on_error=[redis.exceptions.ConnectionError, redis.exceptions.TimeoutError])


class _Lease(threading.Thread):
    """Keeps a running job's unacked entry and its claim (executor/claims.py) fresh, so the
    broker does not hand it out again and no second delivery can take it."""

    def __init__(self, config: WorkerConfig, tag: str | None, claim: Any = None) -> None:
        super().__init__(name="sharedtask-lease", daemon=True)
        self.config, self.tag, self.claim = config, tag, claim
        self.stop = threading.Event()

    def run(self) -> None:
        if not is_redis(self.config.broker) or (self.tag is None and self.claim is None):
            return
        client = _redis(self.config.broker)
        interval = max(0.5, self.config.visibility_timeout / 4)
        while not self.stop.wait(interval):
            try:
                if self.tag is not None:
                    # XX: refresh only; never re-add an entry that the ack has removed.
                    client.zadd("unacked_index", {self.tag: time.time()}, xx=True)
                if self.claim is not None:
                    self.claim.refresh()
            except Exception:  # noqa: BLE001 - broker away for a moment: try at the next tick
                continue


def _deliveries(config: WorkerConfig, job_id: str) -> int:
    """How many times this job has been handed to a worker (1 the first time); 1 without Redis."""
    if not is_redis(config.broker):
        return 1
    client = _redis(config.broker)
    key = f"{KEY_PREFIX}deliveries:{job_id}"
    count = int(client.incr(key))
    client.expire(key, RESULT_TTL)
    return count


def _claim(config: WorkerConfig, task_id: str) -> tuple[Any, str | None]:
    """(this worker's claim on the job, None), or (None, who holds it) for a duplicate delivery;
    (None, None) without Redis (at least once, as before). See executor/claims.py."""
    if not is_redis(config.broker):
        return None, None
    from sharedtask.executor.claims import take

    # half the visibility timeout: a dead worker's claim is gone before kombu hands its job out again
    return take(_redis(config.broker), task_id, config.name, config.visibility_timeout / 2)


def _finished(config: WorkerConfig, job_id: str, task_id: str | None = None) -> dict[str, Any] | None:
    """The stored result of a job that has finished already, else None.

    Why: a coordinator sends a job once (``submitted:<job>``), so a delivery of a job whose
    result is stored is a second copy of the same message: a worker killed while a broker
    restarts can leave both the restored unacked entry and the requeued message. Running it
    again would run a submission twice; the stored result is the run's.
    """
    if not is_redis(config.broker):
        return None
    import json

    try:
        raw = _redis(config.broker).get(f"celery-task-meta-{task_id or job_id}")
        meta = json.loads(raw) if raw else None
    except Exception:  # noqa: BLE001 - cannot tell: run it (at-least-once, as before)
        return None
    result = meta.get("result") if isinstance(meta, dict) and meta.get("status") == "SUCCESS" else None
    return result if isinstance(result, dict) and result.get("job_id", job_id) == job_id else None


def run_job(payload: dict[str, Any], task_id: str) -> dict[str, Any]:
    """The body of the Celery task: check the image and the dataset, run in the sandbox, pack the folder."""
    from sharedtask.images.client import docker_client
    from sharedtask.executor import datasets
    from sharedtask.images import shipping as images
    from sharedtask.executor.admission import JobRefused, admit, safe_job_id
    from sharedtask.executor.base import INTERRUPTED, JobResult, execute_in, portable, refused
    from sharedtask.executor.events import emit
    from sharedtask.executor.job import FAILED, REFUSED
    from sharedtask.executor.scratch import new_scratch
    from sharedtask.executor.stages import STAGE_CACHE, fetch_stage
    from sharedtask.executor.transfer import pack
    from sharedtask.sandbox.outputs import remove_tree

    config = _config
    assert config is not None, "run_job runs inside `sharedtask worker`"
    try:
        job = admit(payload, config.policy)  # a closed schema: anything more is refused, never run
    except JobRefused as exc:
        ident = safe_job_id(payload)
        reason = f"worker {config.name} refused the job: {str(exc).splitlines()[0]}"
        emit("job-refused", worker=config.name, job=ident, reason=reason)
        return JobResult(ident, REFUSED, "refused", reason, config.name).to_json()
    done = _finished(config, job.id, task_id)
    if done is not None:
        emit("job-duplicate", worker=config.name, job=job.id)
        return done
    from celery.exceptions import Ignore

    claim, holder = _claim(config, task_id)
    if claim is None and holder is not None:
        # another live worker holds the job, or has run it: acknowledged, no result stored, nothing runs
        emit("job-duplicate", worker=config.name, job=job.id, held_by=holder)
        raise Ignore()
    count = _deliveries(config, task_id)
    emit("job-received", worker=config.name, job=job.id, software=job.software, task=job.task, delivery=count)
    if count > MAX_DELIVERIES:
        result = JobResult(job.id, FAILED, "error", f"delivered {count - 1} times and every worker running it "
                           "died (killed, out of memory, machine lost): not tried again", config.name)
        if claim is not None:
            claim.finish()
        emit("job-finished", worker=config.name, job=job.id, state=result.state, status=result.status)
        return result.to_json()
    lease = _Lease(config, _delivery_tags.get(task_id), claim)
    lease.start()
    work = new_scratch(config.work_dir, job.id)
    ran = False
    try:
        try:
            input_dir = datasets.locate(job.dataset, config.data_root)
            datasets.check(job.dataset, input_dir)
            image = images.ensure(job, docker_client(), config.origin, work)
            # a re-ranker: its first stage, fetched once per worker folder and checked (executor/stages.py)
            stage = (fetch_stage(job, config.work_dir / STAGE_CACHE, config.origin)
                     if job.stage is not None else None)
        except SharedTaskError as exc:
            if _stopping.is_set():  # an image load or a stage fetch cut short by the shutdown
                _give_back(config, job.id, task_id)
            emit("job-refused", worker=config.name, job=job.id, reason=str(exc))
            return refused(job, config.name, f"worker {config.name} refused the job: {exc}").to_json()
        run_dir = work / "run"
        emit("job-running", worker=config.name, job=job.id, image=job.image_id,
             **({"fence": claim.token} if claim is not None else {}))
        ran = True
        try:
            result = execute_in(job, input_dir, run_dir, image, worker=config.name, input_run=stage,
                                stop=_stopping)
        except SharedTaskError as exc:
            result = JobResult(job.id, FAILED, "error", str(exc), config.name, run_dir=run_dir)
        if _stopping.is_set() and result.status in (INTERRUPTED, "error"):  # the shutdown's doing
            if claim is not None:
                claim.release()  # the job goes back on the queue: the next worker may take it at once
            _give_back(config, job.id, task_id)
        if claim is not None and not claim.finish():
            # this worker stalled past its lease and another took the job: its result stands, not ours
            emit("job-fenced", worker=config.name, job=job.id, fence=claim.token)
            raise Ignore()
        emit("job-finished", worker=config.name, job=job.id, state=result.state, status=result.status)
        raw = portable(run_dir, result)
        if run_dir.is_dir():
            raw["archive"], raw["archive_sha256"] = pack(run_dir)
            if len(raw["archive"]) > MAX_ARCHIVE:  # Redis keeps at most 512 MB in one value
                size = len(raw["archive"]) * 3 // 4
                remove_tree(run_dir / "output")
                raw["archive"], raw["archive_sha256"] = pack(run_dir)  # logs and record still go back
                raw.update(state=FAILED, status="output-limit", validation={"status": "no run file"},
                           message=f"the outputs are {format_size(size)} compressed, more than a worker "
                                   f"sends back ({format_size(MAX_ARCHIVE * 3 // 4)})")
        return raw
    finally:
        lease.stop.set()
        _delivery_tags.pop(task_id, None)
        if claim is not None and not ran:
            claim.release()  # refused, nothing ran: a re-send may run it
        remove_tree(work)


def _give_back(config: WorkerConfig, job_id: str, task_id: str) -> None:
    """Put a job this worker was stopped in back on the queue (Celery's ``Reject(requeue=True)``
    with late acknowledgement); this delivery does not count against :data:`MAX_DELIVERIES`."""
    from celery.exceptions import Reject

    from sharedtask.executor.events import emit

    if is_redis(config.broker):
        try:
            _redis(config.broker).decr(f"{KEY_PREFIX}deliveries:{task_id}")  # as _deliveries counts them
        except Exception:  # noqa: BLE001 - counted once more: the job still runs up to its bound
            pass
    emit("job-requeued", worker=config.name, job=job_id, reason="the worker is shutting down")
    raise Reject("the worker is shutting down", requeue=True)


def start_worker(config: WorkerConfig, *, queue: str, concurrency: int, loglevel: str = "WARNING") -> None:
    """Run a Celery worker in this process until it is stopped (SIGTERM: warm shutdown)."""
    from celery import signals

    global _config
    _config = config
    config.work_dir.mkdir(parents=True, exist_ok=True)
    app = make_app(config.broker, queue=queue, visibility_timeout=config.visibility_timeout)

    @app.task(name=TASK_NAME, bind=True, acks_late=True, reject_on_worker_lost=True)
    def _task(self: Any, payload: dict[str, Any]) -> dict[str, Any]:
        return run_job(payload, self.request.id)

    @signals.worker_shutting_down.connect(weak=False)
    def _stop(**_: Any) -> None:  # in the signal handler of the main thread: set a flag, nothing more
        _stopping.set()

    @signals.task_received.connect(weak=False)
    def _remember(request: Any = None, **_: Any) -> None:
        message = getattr(request, "message", None)
        if message is not None:
            _delivery_tags[request.id] = message.delivery_tag

    argv = ["worker", f"--hostname={config.name}", f"--queues={queue}", f"--concurrency={concurrency}",
            "--pool=threads", f"--loglevel={loglevel}", "--without-gossip", "--without-mingle"]
    app.worker_main(argv=argv)


def default_name() -> str:
    return f"{socket.gethostname()}-{os.getpid()}"
