"""Nothing from a broker or a worker's result is trusted (issue 26, "Boundaries": broker, worker).

Real parts: a redis-server, a `sharedtask worker` process, containers. A job written
straight into the broker that asks for more than its task grants is refused and never
starts a container; a worker's archive holding a link fails that one run, not the batch.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import tarfile
import time
import uuid
from pathlib import Path

import pytest

from distributed_helpers import (REFERENCE, TASK, broker, job_for, redis_binary, tiny_image,  # noqa: F401
                                 wait_for, workers)
from sharedtask.errors import SharedTaskError
from sharedtask.executor.admission import JobRefused, WorkerPolicy, admit, sandbox_options
from sharedtask.executor.base import JobResult
from sharedtask.executor.celery_app import TASK_NAME
from sharedtask.executor.remote import CeleryExecutor

IMAGE_ID = "sha256:" + "a" * 64


def raw_job(**changes) -> dict:
    """A well-formed job payload (as a coordinator sends it), with ``changes`` applied."""
    from sharedtask.executor.datasets import file_digests
    from sharedtask.spec import load_task

    raw = {"task": TASK, "software": "tiny", "image": "sharedtask-test/tiny:x", "image_id": IMAGE_ID,
           "command": "cp /run.txt $outputDir/run.txt", "image_source": None,
           "dataset": {"id": f"sample/{TASK}", "sha256": file_digests(load_task(TASK).sample_dir / "input")},
           "options": {"dataset_id": TASK}}
    return {**raw, **changes}


FORBIDDEN = [
    ("options.user", {"options": {"user": "0"}}),
    ("options.user", {"options": {"user": "0:0"}}),
    ("options.input_run", {"options": {"input_run": "/"}}),
    ("options.network", {"options": {"network": "host"}}),
    ("options.runtime", {"options": {"runtime": "runsc"}}),
    ("options.memory", {"options": {"memory": "1000g"}}),
    ("options.timeout", {"options": {"timeout": "1000h"}}),
    ("options.timeout", {"options": {"timeout": True}}),
    ("options.output_dir", {"options": {"output_dir": "/etc"}}),
    ("privileged", {"privileged": True}),
    ("command", {"command": "x" * 10_000_000}),
    ("image_id", {"image_id": "sha256:" + "z" * 64}),
    ("dataset.id", {"dataset": {"id": f"sample/{TASK}/../../../etc", "sha256": {}}}),
    ("dataset.sha256", {"dataset": {"id": f"sample/{TASK}", "sha256": {"topics.xml": "not hex"}}}),
    ("dataset.sha256", {"dataset": {"id": f"sample/{TASK}", "sha256": {"/etc/passwd": "0" * 64}}}),
    ("image_source", {"image_source": "archive:/etc/shadow"}),
    ("task", {"task": "../../etc"}),
]


@pytest.mark.parametrize(("field", "changes"), FORBIDDEN, ids=[f"{f}-{i}" for i, (f, _) in enumerate(FORBIDDEN)])
def test_a_job_asking_for_more_is_refused_naming_the_field(field, changes):
    with pytest.raises(JobRefused) as caught:
        admit(raw_job(**changes))
    message = str(caught.value)
    assert message.startswith(f"job field {field}") and "\n" not in message and len(message) < 600


def test_a_job_may_lower_limits_but_not_pass_the_workers_maximum():
    job = admit(raw_job(options={"timeout": "30s", "memory": "512m", "cpus": 0.5, "dataset_id": TASK}))
    assert sandbox_options(job)["timeout"] == "30s"
    assert sandbox_options(job)["user"] == "me" and sandbox_options(job)["network"] is None
    with pytest.raises(JobRefused, match="options.memory: .* above this worker's maximum"):
        admit(raw_job(), WorkerPolicy(memory=2**20))
    with pytest.raises(JobRefused, match="id"):
        admit(raw_job(id="job-" + "0" * 24))


def test_sandbox_options_never_pass_what_a_job_may_not_carry():
    from sharedtask.executor import DatasetRef, Job

    job = Job(TASK, "tiny", "x", IMAGE_ID, None, DatasetRef(f"sample/{TASK}"), options={"network": "host"})
    with pytest.raises(SharedTaskError, match="options.network"):
        sandbox_options(job)


def _container_creates(docker_client, since: float, images: set[str]) -> list[dict]:
    until = time.time() + 1
    found = []
    for event in docker_client.events(since=since, until=until, decode=True, filters={"type": "container",
                                                                                        "event": "create"}):
        if (event.get("Actor") or {}).get("Attributes", {}).get("image") in images:
            found.append(event)
    return found


@pytest.mark.docker
@pytest.mark.slow
def test_a_job_injected_into_the_broker_is_refused_and_never_runs(docker_client, broker, workers, tiny_image,
                                                                  tmp_path):
    workers(broker, "wtrust")
    executor = CeleryExecutor(broker.url)
    good = job_for(docker_client, tiny_image, "cp /run.txt $outputDir/run.txt").to_json()
    images = {tiny_image, good["image_id"]}
    since = time.time() - 1
    sent = []
    for n, (field, changes) in enumerate(FORBIDDEN):
        payload = {**{k: v for k, v in good.items() if k != "id"}, **changes}
        if "options" in changes:
            payload["options"] = {**good["options"], **changes["options"]}
        task_id = f"injected-{n}-{uuid.uuid4().hex[:8]}"
        executor.app.send_task(TASK_NAME, args=[payload], task_id=task_id, queue=executor.queue)
        sent.append((field, task_id))
    for field, task_id in sent:
        meta = wait_for(lambda: (m := executor.app.backend.get_task_meta(task_id))["status"] == "SUCCESS" and m, 120)
        result = JobResult.from_json(meta["result"])
        assert (result.state, result.status) == ("refused", "refused"), (field, result)
        assert f"job field {field}" in result.message and "wtrust refused" in result.message
    assert not _container_creates(docker_client, since, images)  # nothing ran for any of them
    # The control: the same worker runs a well-formed job, and its container is seen.
    result = executor.submit(job_for(docker_client, tiny_image, "cp /run.txt $outputDir/run.txt"),
                             tmp_path / "out" / "good").result(timeout=120)
    assert (result.state, result.status) == ("done", "success")
    assert len(_container_creates(docker_client, since, images)) == 1
    executor.close()


@pytest.mark.docker
@pytest.mark.slow
def test_a_link_in_one_teams_output_fails_that_run_and_the_batch_lands(broker, workers, tiny_image, tmp_path,
                                                                      capsys):
    import yaml

    from sharedtask.cli import main

    submissions = tmp_path / "submissions.yml"
    copy = "cp /run.txt $outputDir/run.txt"
    submissions.write_text(yaml.safe_dump({"version": 1, "submissions": {
        "team-a": {"image": tiny_image, "command": copy, "tasks": [TASK]},
        "team-evil": {"image": tiny_image, "command": f"{copy}; busybox ln -s /etc/passwd $outputDir/x",
                      "tasks": [TASK]},
        "team-b": {"image": tiny_image, "command": f"echo b; {copy}", "tasks": [TASK]},
    }}))
    workers(broker, "wland")
    out = tmp_path / "out"
    args = ["demo", "--task", TASK, "--submissions", str(submissions), "--no-baselines", "--broker", broker.url,
            "--output", str(out)]
    for _ in range(2):  # and again on the same folder: the refusal is reported again, nothing aborts
        assert main(args) == 1
        capsys.readouterr()
        board = json.loads((out / TASK / "leaderboard.json").read_text())
        assert sorted(r["run"] for r in board["runs"]) == ["team-a", "team-b"]
        (evil,) = board["not_scored"]
        assert evil["run"] == "team-evil" and "'output/x', a symbolic link to '/etc/passwd'" in evil["reason"]
        for team in ("team-a", "team-b"):
            assert (out / TASK / team / "output" / "run.txt").read_bytes() == REFERENCE.read_bytes()
        assert sorted(p.name for p in (out / TASK / "team-evil").iterdir()) == ["job-result.json"]
        assert json.loads((out / TASK / "team-evil" / "job-result.json").read_text())["state"] == "failed"
        assert not [p for p in (out / TASK).iterdir() if p.name.startswith(".")]  # no staging left


def test_a_workers_result_names_no_path_the_coordinator_opens():
    raw = {"state": "done", "status": "success", "message": "", "worker": "w",
           "validation": {"status": "valid", "run_file": "../../../etc/passwd"}, "record": {}}
    result = JobResult.from_worker(raw, "job-" + "1" * 24)
    assert result.state == "failed" and "not a plain name inside output/" in result.message
    for bad in ("/etc/passwd", "a/b", "..", ".", "", "x\x00"):
        assert JobResult.from_worker({**raw, "validation": {"run_file": bad}}, "j").state == "failed"
    ok = JobResult.from_worker({**raw, "validation": {"status": "valid", "run_file": "run.txt"}}, "j")
    assert ok.relocated(Path("/runs/a")).validation["run_file"] == "/runs/a/output/run.txt"
    assert JobResult.from_worker({**raw, "state": "hacked"}, "j").state == "failed"
    assert JobResult.from_worker({**raw, "job_id": "other"}, "j").job_id == "j"


def _archive(*members: tuple[str, bytes | None, bytes]) -> tuple[str, str]:
    """A worker's archive from (name, tar type or None for a file, content or link target)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, kind, data in members:
            info = tarfile.TarInfo(name)
            if kind is None:
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
            else:
                info.type = kind
                if kind in (tarfile.SYMTYPE, tarfile.LNKTYPE):
                    info.linkname = data.decode()
                tar.addfile(info)
    raw = buffer.getvalue()
    return base64.b64encode(raw).decode(), hashlib.sha256(raw).hexdigest()


HOSTILE = [
    ("output/x', a symbolic link to '/etc/passwd", [("output/x", tarfile.SYMTYPE, b"/etc/passwd")]),
    ("output/x', a symbolic link to 'run.txt", [("output/run.txt", None, b"1"), ("output/x", tarfile.SYMTYPE,
                                                                               b"run.txt")]),
    ("output/h', a hard link", [("output/run.txt", None, b"1"), ("output/h", tarfile.LNKTYPE, b"output/run.txt")]),
    ("output/null', a character device", [("output/null", tarfile.CHRTYPE, b"")]),
    ("output/disk', a block device", [("output/disk", tarfile.BLKTYPE, b"")]),
    ("output/fifo', a FIFO", [("output/fifo", tarfile.FIFOTYPE, b"")]),
    ("/etc/cron.d/x', an absolute or escaping path", [("/etc/cron.d/x", None, b"* * * * * root sh")]),
    ("../x', an absolute or escaping path", [("../x", None, b"x")]),
    ("output/../../x', an absolute or escaping path", [("output/../../x", None, b"x")]),
    ("twice", [("output/run.txt", None, b"1"), ("output/run.txt", None, b"2")]),
    ("as a file and a folder", [("output/a", None, b"1"), ("output/a/b", None, b"2")]),
    ("more than 100 bytes", [("output/big", None, b"x" * 101)]),
]


@pytest.mark.parametrize(("named", "members"), HOSTILE, ids=[str(i) for i in range(len(HOSTILE))])
def test_a_hostile_archive_fails_with_the_member_named_and_nothing_lands(tmp_path, named, members):
    from sharedtask.executor.transfer import LandingRefused, land

    archive, digest = _archive(*members)
    run_dir = tmp_path / "runs" / "team"
    with pytest.raises(LandingRefused) as caught:
        land(archive, digest, run_dir, extra={"job-result.json": "{}"}, max_bytes=100)
    assert named in str(caught.value) and "\n" not in str(caught.value)
    assert list((tmp_path / "runs").iterdir()) == []  # no run folder, no staging left
    assert not (tmp_path / "etc").exists() and not (tmp_path / "x").exists()
