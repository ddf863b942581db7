"""Celery compute workers with real parts: redis-server, `sharedtask worker` processes, containers.

Faults are real too: a worker killed with SIGKILL in the middle of a run, a broker
restarted while jobs wait, a coordinator that starts again. The visibility timeout is
short (4 s) so that a dead worker's job comes back quickly.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from distributed_helpers import (REFERENCE, TASK, RedisServer, broker, build_tiny_image,  # noqa: F401 - fixtures
                                 redis_binary, job_for, tiny_image, wait_for, workers)
from sharedtask.errors import SharedTaskError
from sharedtask.executor import Job
from sharedtask.executor.remote import CeleryExecutor
from sharedtask.sandbox.orphans import OWNER_LABEL
from sharedtask.spec import load_task

pytestmark = [pytest.mark.docker, pytest.mark.slow]


make_job = job_for


def deliveries(broker: RedisServer, job: Job) -> int:
    import redis

    return int(redis.Redis(port=broker.port).get(f"sharedtask:deliveries:{job.id}") or 0)


def own_containers(docker_client, image: str) -> list[dict]:
    return docker_client.api.containers(all=True, filters={"ancestor": image})


def test_a_job_runs_on_a_worker_and_its_folder_lands_checked(docker_client, broker, workers, tiny_image, tmp_path):
    workers(broker, "w1")
    job = make_job(docker_client, tiny_image, "echo working; cp /run.txt $outputDir/run.txt")
    executor = CeleryExecutor(broker.url)
    run_dir = tmp_path / "out" / "tiny"
    result = executor.submit(job, run_dir).result(timeout=120)
    assert (result.state, result.status, result.worker) == ("done", "success", "w1")
    assert result.validation["status"] == "valid"
    assert Path(result.validation["run_file"]) == run_dir / "output" / "run.txt"
    assert (run_dir / "output" / "run.txt").read_bytes() == REFERENCE.read_bytes()
    assert "working" in (run_dir / "stdout.log").read_text()
    record = json.loads((run_dir / "run-record.json").read_text())
    assert record["image"]["id"] == job.image_id
    assert {k: v for k, v in record["executor"].items() if k != "worker_run_dir"} == {"job_id": job.id, "worker": "w1"}
    assert record["output"]["dir"] == str((run_dir / "output").resolve())  # the landed folder, not the worker's
    landed = json.loads((run_dir / "job-result.json").read_text())
    assert landed["job_id"] == job.id and landed["validation"]["run_file"] == "run.txt"
    assert not [p for p in run_dir.parent.iterdir() if p.name.startswith(".")]  # no staging left


def test_a_worker_whose_dataset_differs_refuses_the_job(docker_client, broker, workers, tiny_image, tmp_path):
    data_root = tmp_path / "data"
    copy = data_root / f"sample/{TASK}" / "input"
    shutil.copytree(load_task(TASK).sample_dir / "input", copy)
    victim = sorted(p for p in copy.rglob("*") if p.is_file())[0]
    victim.write_bytes(victim.read_bytes() + b"\n")
    workers(broker, "wdata", data_root=data_root)
    job = make_job(docker_client, tiny_image, "cp /run.txt $outputDir/run.txt")
    result = CeleryExecutor(broker.url).submit(job, tmp_path / "out" / "tiny").result(timeout=120)
    assert (result.state, result.status) == ("refused", "refused")
    assert "wdata refused" in result.message and victim.relative_to(copy).as_posix() in result.message
    assert "sha256" in result.message
    assert not (tmp_path / "out" / "tiny").exists()  # nothing ran, nothing landed
    assert not own_containers(docker_client, tiny_image)


def test_an_image_reaches_the_worker_as_an_archive_and_is_checked(docker_client, broker, workers, tmp_path):
    import hashlib

    from sharedtask.images.shipping import save_archive, source_for

    image = build_tiny_image(docker_client, tmp_path / "img", REFERENCE)
    source = source_for(docker_client, images_dir=tmp_path / "archives")(image)
    archive = save_archive(docker_client, image, tmp_path / "archives")
    assert source == f"archive:{archive}#sha256={hashlib.sha256(archive.read_bytes()).hexdigest()}"
    # a copy of the archive with one more byte: another sha256 than the job names
    tampered = tmp_path / "tampered" / archive.name
    tampered.parent.mkdir()
    tampered.write_bytes(archive.read_bytes() + b"\0" * 1024)
    job = make_job(docker_client, image, "cp /run.txt $outputDir/run.txt")
    docker_client.images.remove(image, force=True)  # the worker's daemon no longer has it
    wrong = Job(**{**job.__dict__, "image_id": "sha256:" + "0" * 64, "image_source": source})
    swapped = Job(**{**job.__dict__, "image_source": f"archive:{tampered}#sha256={source.rsplit('=', 1)[1]}",
                     "software": "swapped"})
    foreign = Job(**{**job.__dict__, "image_source": f"archive:http://127.0.0.1:9/{archive.name}"
                                                     f"#sha256={source.rsplit('=', 1)[1]}", "software": "foreign"})
    job = Job(**{**job.__dict__, "image_source": source})
    workers(broker, "wimg")
    executor = CeleryExecutor(broker.url)
    try:
        # checked before anything is loaded (issue 39): a changed archive, a URL of anyone's
        for refused, words in ((swapped, "not loaded"), (foreign, "not on this worker's images server")):
            got = executor.submit(refused, tmp_path / "out" / refused.software).result(timeout=120)
            assert got.state == "refused" and words in got.message, got.message
            assert not docker_client.images.list(filters={"reference": image})  # nothing was loaded
        result = executor.submit(job, tmp_path / "out" / "ok").result(timeout=120)
        assert (result.state, result.status) == ("done", "success")
        assert docker_client.images.get(job.image_id).id == job.image_id  # loaded from the archive
        bad = executor.submit(wrong, tmp_path / "out" / "bad").result(timeout=120)
        assert bad.state == "refused" and "not the organizer's" in bad.message
    finally:
        docker_client.images.remove(job.image_id, force=True)


def test_a_worker_killed_mid_run_its_job_finishes_on_another(docker_client, broker, workers, tiny_image, tmp_path):
    first = workers(broker, "wkill")
    job = make_job(docker_client, tiny_image, "sleep 5; cp /run.txt $outputDir/run.txt")
    executor = CeleryExecutor(broker.url)
    handle = executor.submit(job, tmp_path / "out" / "tiny")
    wait_for(lambda: handle.state() == ("running", "wkill"), 60)
    wait_for(lambda: own_containers(docker_client, tiny_image), 30)
    first.kill()
    left = own_containers(docker_client, tiny_image)
    assert left and OWNER_LABEL in left[0]["Labels"]  # the dead worker's container is still there
    (stale,) = [p for p in first.work_dir.iterdir() if p.name.startswith(job.id)]  # the dead worker's scratch
    # removes both at start (their owner is gone) ...
    second = workers(broker, "wnext", work_dir=first.work_dir)
    reaped = second.events("orphans-removed")
    if reaped:
        assert (reaped[0]["worker"], reaped[0]["count"]) == ("wnext", "1")
        assert left[0]["Id"].startswith(reaped[0]["containers"])
    else:  # the machine's Docker daemon is shared: any sandboxed run on this host reaps it first, by design
        assert left[0]["Id"] not in {c["Id"] for c in own_containers(docker_client, tiny_image)}
    (cleaned,) = second.events("scratch-removed")
    assert (cleaned["count"], cleaned["folders"]) == ("1", stale.name) and not stale.exists()
    result = handle.result(timeout=180)  # ... and gets the job again after the visibility timeout
    assert (result.state, result.status, result.worker) == ("done", "success", "wnext")
    assert deliveries(broker, job) == 2
    landed = tmp_path / "out" / "tiny"
    assert (landed / "output" / "run.txt").read_bytes() == REFERENCE.read_bytes()
    # the landed record names the coordinator's folder, not the worker's scratch
    record = json.loads((landed / "run-record.json").read_text())
    assert record["output"]["dir"] == str((landed / "output").resolve())
    assert record["logs"]["stdout"] == str((landed / "stdout.log").resolve())
    assert record["executor"]["worker_run_dir"].startswith(str(first.work_dir.resolve()))
    text = json.dumps({k: v for k, v in record.items() if k != "executor"})
    assert str(first.work_dir.resolve()) not in text
    assert [e["event"] for e in second.events() if e.get("job") == job.id] == [
        "job-received", "job-running", "job-finished"]
    assert not [p for p in first.work_dir.iterdir() if p.name.startswith(job.id)]  # its own scratch removed too


def test_a_long_run_is_not_handed_out_twice_while_its_worker_lives(docker_client, broker, workers, tiny_image, tmp_path):
    # The run lasts more than twice the 4 s visibility timeout: the worker's lease keeps it its own.
    workers(broker, "wlong")
    workers(broker, "widle")
    job = make_job(docker_client, tiny_image, "sleep 10; cp /run.txt $outputDir/run.txt")
    result = CeleryExecutor(broker.url).submit(job, tmp_path / "out" / "tiny").result(timeout=180)
    assert result.status == "success"
    assert deliveries(broker, job) == 1


def test_jobs_queued_across_a_broker_restart_are_not_lost(docker_client, broker, workers, tiny_image, tmp_path):
    executor = CeleryExecutor(broker.url)
    jobs = [make_job(docker_client, tiny_image, f"sleep 1; echo {i}; cp /run.txt $outputDir/run.txt") for i in range(3)]
    handles = [executor.submit(job, tmp_path / "out" / f"run{i}") for i, job in enumerate(jobs)]
    broker.restart()  # no worker yet: the three jobs wait in the restarted broker's queue
    workers(broker, "wafter")
    results = [h.result(timeout=180) for h in handles]
    assert [r.status for r in results] == ["success"] * 3
    assert [(tmp_path / "out" / f"run{i}" / "stdout.log").read_text().strip() for i in range(3)] == ["0", "1", "2"]


def test_a_broker_restart_while_a_worker_runs(docker_client, broker, workers, tiny_image, tmp_path):
    workers(broker, "wsurvive")
    executor = CeleryExecutor(broker.url)
    jobs = [make_job(docker_client, tiny_image, f"sleep 2; echo {i}; cp /run.txt $outputDir/run.txt") for i in range(2)]
    handles = [executor.submit(job, tmp_path / "out" / f"run{i}") for i, job in enumerate(jobs)]
    wait_for(lambda: handles[0].state()[0] == "running" or handles[1].state()[0] == "running", 60)
    broker.restart()
    results = [h.result(timeout=240) for h in handles]
    assert [r.status for r in results] == ["success", "success"], [r.message for r in results]


def test_a_timeout_is_reported_once_with_its_logs(docker_client, broker, workers, tiny_image, tmp_path):
    workers(broker, "wtime")
    job = make_job(docker_client, tiny_image, "echo before-the-limit; sleep 30", timeout=1)
    result = CeleryExecutor(broker.url).submit(job, tmp_path / "out" / "slow").result(timeout=120)
    assert (result.state, result.status) == ("failed", "timeout")
    assert "before-the-limit" in (tmp_path / "out" / "slow" / "stdout.log").read_text()
    # acknowledged: nothing of it is left in kombu's unacknowledged set, so it can never come back
    import redis

    client = redis.Redis(port=broker.port)
    wait_for(lambda: client.zcard("unacked_index") == 0 and client.hlen("unacked") == 0, 60)
    assert deliveries(broker, job) == 1


def test_a_restarted_coordinator_takes_results_instead_of_running_again(docker_client, broker, workers, tiny_image,
                                                                        tmp_path):
    job = make_job(docker_client, tiny_image, "sleep 1; cp /run.txt $outputDir/run.txt")
    run_dir = tmp_path / "out" / "tiny"
    CeleryExecutor(broker.url).submit(job, run_dir)  # the coordinator is interrupted right after sending
    workers(broker, "wres")
    again = CeleryExecutor(broker.url).submit(job, run_dir)  # started again: waits for the same job
    first = again.result(timeout=120)
    assert first.status == "success" and deliveries(broker, job) == 1
    stamp = (run_dir / "job-result.json").stat().st_mtime_ns
    third = CeleryExecutor(broker.url).submit(job, run_dir)  # once more, after the result landed
    assert third.done() and third.result().job_id == job.id
    assert (run_dir / "job-result.json").stat().st_mtime_ns == stamp and deliveries(broker, job) == 1


def test_an_image_reaches_the_worker_from_a_registry_by_digest(docker_client, broker, workers, tmp_path):
    from distributed_helpers import ensure_installed
    from sharedtask.images.registry import start_local
    from sharedtask.images.shipping import push

    if ensure_installed("docker-registry", "docker-registry") is None:
        pytest.skip("Debian's docker-registry is not installed")
    registry = start_local(tmp_path / "registry")
    job = None
    image = build_tiny_image(docker_client, tmp_path / "img", REFERENCE)
    try:
        reference = push(docker_client, image, registry.address)
        assert reference.startswith(f"{registry.address}/sharedtask-test/tiny@sha256:")
        job = make_job(docker_client, image, "cp /run.txt $outputDir/run.txt")
        job = Job(**{**job.__dict__, "image_source": f"registry:{reference}"})
        docker_client.images.remove(job.image_id, force=True)  # gone from the daemon, tags and all
        workers(broker, "wreg")
        result = CeleryExecutor(broker.url).submit(job, tmp_path / "out").result(timeout=120)
        assert (result.state, result.status) == ("done", "success")
        assert docker_client.images.get(job.image_id).id == job.image_id  # pulled by digest, same id
    finally:
        registry.stop()
        try:
            docker_client.images.remove(job.image_id if job else image, force=True)
        except Exception:  # noqa: BLE001 - already gone
            pass


def test_a_broker_with_a_password_and_tls_as_the_readme_deploys_it(docker_client, redis_binary, workers, tiny_image,
                                                                   tmp_path):
    from distributed_helpers import make_tls

    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed")
    server = RedisServer(redis_binary, tmp_path / "tls-redis", password="s3cret-for-the-test",
                         tls=make_tls(tmp_path / "tls"))
    server.start()
    try:
        assert server.url.startswith("rediss://")
        workers(server, "wtls")
        job = make_job(docker_client, tiny_image, "cp /run.txt $outputDir/run.txt")
        result = CeleryExecutor(server.url).submit(job, tmp_path / "out").result(timeout=120)
        assert (result.state, result.status) == ("done", "success")
        wrong = server.url.replace("s3cret-for-the-test", "wrong")
        with pytest.raises(SharedTaskError, match="does not answer") as refused:
            CeleryExecutor(wrong)
        assert "wrong" not in str(refused.value)  # the password is never printed
    finally:
        server.stop()


def test_outputs_too_large_for_the_backend_come_back_as_output_limit(docker_client, tiny_image, tmp_path, monkeypatch):
    # The task body in this process (no broker is needed for it: an amqp:// URL skips the Redis-only parts).
    from sharedtask.executor import celery_app
    from sharedtask.executor.base import JobResult

    monkeypatch.setattr(celery_app, "MAX_ARCHIVE", 1024)
    monkeypatch.setattr(celery_app, "_config", celery_app.WorkerConfig(
        broker="amqp://unused", name="inproc", data_root=None, work_dir=tmp_path / "work", visibility_timeout=60))
    job = make_job(docker_client, tiny_image, "echo big; cp /run.txt $outputDir/run.txt")
    raw = celery_app.run_job(job.to_json(), "task-1")
    result = JobResult.from_json({k: v for k, v in raw.items() if not k.startswith("archive")})
    assert (result.state, result.status) == ("failed", "output-limit") and "more than a worker sends back" in result.message
    from sharedtask.executor.transfer import land

    land(raw["archive"], raw["archive_sha256"], tmp_path / "landed")
    assert "big" in (tmp_path / "landed" / "stdout.log").read_text()
    assert not (tmp_path / "landed" / "output").exists()
    assert not list((tmp_path / "work").iterdir())  # the worker's scratch folder is cleaned


def test_a_job_that_every_worker_dies_on_is_given_up_after_three_deliveries(docker_client, broker, workers,
                                                                             tiny_image, tmp_path):
    job = make_job(docker_client, tiny_image, "sleep 60; cp /run.txt $outputDir/run.txt")
    handle = CeleryExecutor(broker.url).submit(job, tmp_path / "out")
    for n in range(3):
        worker = workers(broker, f"wdies{n}")
        wait_for(lambda: handle.state() == ("running", f"wdies{n}") and deliveries(broker, job) == n + 1, 90)
        worker.kill()
    workers(broker, "wlast")
    result = handle.result(timeout=120)
    assert (result.state, result.status, result.worker) == ("failed", "error", "wlast")
    assert "delivered 3 times" in result.message
    assert deliveries(broker, job) == 4
    wait_for(lambda: not own_containers(docker_client, tiny_image), 30)  # the orphans were removed
