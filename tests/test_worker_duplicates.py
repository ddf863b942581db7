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


# ----------------------------------------------------------------------------- the claim (issue 39)

from distributed_helpers import job_for, tiny_image, wait_for, workers  # noqa: E402,F401 - fixtures


def _count(worker_list, event: str, job_id: str) -> int:
    return sum(1 for w in worker_list for e in w.events(event) if e.get("job") == job_id)


@pytest.mark.docker
def test_a_second_delivery_while_the_first_worker_runs_is_dropped_before_any_container(
        docker_client, broker, workers, tiny_image, tmp_path: Path) -> None:  # noqa: F811
    """Two copies of one message at once (what the broker's restart and visibility timeout made in
    the field test): one worker runs it, the other acknowledges and drops its copy."""
    from sharedtask.executor.celery_app import TASK_NAME, make_app
    from sharedtask.executor.remote import CeleryExecutor

    pair = [workers(broker, "wfirst"), workers(broker, "wsecond")]
    job = job_for(docker_client, tiny_image, "sleep 8; cp /run.txt $outputDir/run.txt")
    executor = CeleryExecutor(broker.url)
    handle = executor.submit(job, tmp_path / "out" / "tiny")
    # the same message again, as a second delivery: both workers are idle, so each takes one
    make_app(broker.url).send_task(TASK_NAME, args=[job.to_json()], task_id=executor.task_id(job))
    wait_for(lambda: _count(pair, "job-received", job.id) + _count(pair, "job-duplicate", job.id) == 2, 120)
    result = handle.result(timeout=240)
    assert result.status == "success"
    wait_for(lambda: all(w.events("job-finished") or w.events("job-duplicate") for w in pair), 120)
    # before the claim: both workers ran it ("job-running" twice, two containers at once)
    assert _count(pair, "job-running", job.id) == 1 and _count(pair, "job-finished", job.id) == 1
    assert _count(pair, "job-duplicate", job.id) == 1
    # the copy was acknowledged: nothing is left to come back
    client = redis.Redis.from_url(broker.url)
    wait_for(lambda: client.zcard("unacked_index") == 0 and client.llen("sharedtask") == 0, 60)
    assert client.get(f"sharedtask:claim:{executor.task_id(job)}").startswith(b"done:")


@pytest.mark.docker
def test_after_a_broker_restart_each_job_runs_once_while_its_workers_live(
        docker_client, broker, workers, tiny_image, tmp_path: Path) -> None:  # noqa: F811
    """The field test: a busy worker, jobs queued behind it, Redis killed and started again, an
    idle worker beside it, runs longer than the visibility timeout (4 s): each job's
    ``job-running`` and ``job-finished`` once."""
    from sharedtask.executor.remote import CeleryExecutor

    busy = workers(broker, "wbusy")
    executor = CeleryExecutor(broker.url)
    jobs = [job_for(docker_client, tiny_image, f"sleep 9; echo {i}; cp /run.txt $outputDir/run.txt")
            for i in range(3)]
    handles = [executor.submit(job, tmp_path / "out" / f"run{i}") for i, job in enumerate(jobs)]
    wait_for(lambda: any(e.get("job") == jobs[0].id for e in busy.events("job-running")), 120)
    broker.proc.kill()  # killed, not stopped: the append-only file keeps the queue
    broker.proc.wait(30)
    broker.start()
    idle = workers(broker, "widle")
    results = [h.result(timeout=400) for h in handles]
    assert [r.status for r in results] == ["success"] * 3, [r.message for r in results]
    pair = [busy, idle]
    for job in jobs:
        assert _count(pair, "job-running", job.id) == 1, (job.id, busy.log()[-3000:], idle.log()[-3000:])
        assert _count(pair, "job-finished", job.id) == 1


def test_a_claim_is_held_renewed_fenced_and_released_in_the_real_redis(broker, tmp_path: Path) -> None:  # noqa: F811
    """The claim's rules one by one against a real redis-server (executor/claims.py)."""
    from sharedtask.executor.claims import claim_key, take

    client = redis.Redis.from_url(broker.url)
    first, _ = take(client, "srv.job-a", "w1", 30)
    assert first is not None and first.token == 1
    second, holder = take(client, "srv.job-a", "w2", 30)
    assert second is None and holder == first.value  # held: a second delivery is dropped
    assert first.refresh() and 0 < client.pttl(claim_key("srv.job-a")) <= 30_000
    client.delete(claim_key("srv.job-a"))  # lapsed (a late heartbeat), nobody took it: taken again
    assert first.refresh() and client.get(claim_key("srv.job-a")).decode() == first.value
    client.delete(claim_key("srv.job-a"))
    third, _ = take(client, "srv.job-a", "w3", 30)  # lapsed and taken by another: the first is fenced
    assert third is not None and third.token == 3
    assert not first.refresh() and not first.finish()
    assert third.finish() and client.get(claim_key("srv.job-a")).decode().startswith("done:")
    assert take(client, "srv.job-a", "w4", 30)[0] is None  # done: every later copy is dropped
    refused, _ = take(client, "srv.job-b", "w1", 30)
    refused.release()  # nothing ran: a re-send may run it
    assert take(client, "srv.job-b", "w2", 30)[0] is not None


def test_a_servers_id_is_made_once_and_differs_between_servers(tmp_path: Path) -> None:
    from sharedtask.service.runs.server_id import server_id

    first = server_id(tmp_path / "a")
    assert first == server_id(tmp_path / "a") and first.startswith("srv-")
    assert server_id(tmp_path / "b") != first
