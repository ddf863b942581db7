"""A job delivered again after it finished (a worker killed while the broker restarts can leave
two copies of one message) is not run twice: the worker finds the job's stored result in the
real Redis result backend and returns it. A job still running, a refused one the coordinator
forgot, or another job's result is not mistaken for it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import redis

from distributed_helpers import broker, redis_binary  # noqa: F401 - fixtures
from sharedtask.executor.celery_app import WorkerConfig, _finished

JOB = "job-0123456789abcdef01234567"


def test_a_finished_job_delivered_again_returns_its_stored_result(broker, tmp_path: Path) -> None:  # noqa: F811
    config = WorkerConfig(broker=broker.url, name="w", data_root=None, work_dir=tmp_path, visibility_timeout=60)
    client = redis.Redis.from_url(broker.url)
    assert _finished(config, JOB) is None  # never seen: run it
    result = {"job_id": JOB, "state": "done", "status": "success", "message": "", "worker": "w1"}
    client.set(f"celery-task-meta-{JOB}", json.dumps({"status": "STARTED", "result": {"pid": 1}}))
    assert _finished(config, JOB) is None  # still running elsewhere: not a finished result
    client.set(f"celery-task-meta-{JOB}", json.dumps({"status": "SUCCESS", "result": result}))
    assert _finished(config, JOB) == result
    client.set(f"celery-task-meta-{JOB}", json.dumps({"status": "SUCCESS", "result": {**result, "job_id": "job-x"}}))
    assert _finished(config, JOB) is None  # another job's result under this key: not trusted
    client.delete(f"celery-task-meta-{JOB}")  # what the coordinator's forget() does before a re-send
    assert _finished(config, JOB) is None
    assert _finished(WorkerConfig(broker="amqp://x", name="w", data_root=None, work_dir=tmp_path,
                                  visibility_timeout=60), JOB) is None  # no Redis: at least once, as before


pytestmark = pytest.mark.slow
