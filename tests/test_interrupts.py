"""An interrupt at any step of a run's life is answered the same way (sandbox/interrupts.py).

Each test holds a run at one step with the test barrier (``SHAREDTASK_TEST_BARRIER``: the run
writes ``STEP.reached`` and waits for ``STEP.go``), interrupts it there (Ctrl-C for `run`, a
pool's close, Ctrl-C of `demo --parallel`, SIGTERM of a compute worker), lets the step go on,
and checks what the issue asks: the run ends as interrupted with one line saying so, no
container, mount, loop device or scratch folder of it is left, and no status `error`.
Real parts throughout: the Docker daemon, containers, loop-mounted ext4 images, redis-server.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import yaml

from distributed_helpers import (REFERENCE, TASK, broker, job_for, redis_binary,  # noqa: F401 - fixtures
                                 tiny_image, wait_for, workers)
from service_helpers import images  # noqa: F401 - fixture
from sharedtask.sandbox import limitfs
from sharedtask.sandbox.bounds import wait_released
from sharedtask.sandbox.interrupts import BARRIER_ENV, STEPS
from test_sandbox_limits import _loops_of

pytestmark = [pytest.mark.docker, pytest.mark.slow]

#: the steps of `sharedtask run` (landing is the executor's: a pool's and a worker's runs have it)
RUN_STEPS = [s for s in STEPS if s != "landing"]
#: steps before which no container exists: nothing of the run is kept at all
BEFORE_CONTAINER = ("image", "output-fs")


def ctrl_c_reaches() -> None:
    """In the child before exec: SIGINT as a terminal gives it (a shell's background job, as
    under benchmarks/under_load.py, starts with SIGINT ignored, and Python then keeps it so)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def hold_at(step: str, folder: Path) -> dict[str, str]:
    """The environment that holds a run at ``step`` (folder for the barrier's files)."""
    folder.mkdir(parents=True, exist_ok=True)
    return {BARRIER_ENV: f"{step}:{folder}"}


def reached(folder: Path, step: str, proc: subprocess.Popen | None = None) -> None:
    def there() -> bool:
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"the process ended before step {step}: {proc.communicate()}")
        return (folder / f"{step}.reached").exists()
    wait_for(there, 180)


def release(folder: Path, step: str) -> None:
    (folder / f"{step}.go").write_text("go\n")


def leftovers(docker_client, pid: int) -> dict[str, list[str]]:
    """What a process ``pid`` left behind: containers, loop devices, mounts, limit folders."""
    containers = [c["Id"][:12] for c in docker_client.api.containers(all=True, filters={"label": "sharedtask.owner"})
                  if f"/{pid}/" in c["Labels"]["sharedtask.owner"]]
    mounts = [line for line in Path("/proc/self/mountinfo").read_text().splitlines()
              if f"{limitfs.PREFIX}-{pid}-" in line]
    folders = [p.name for p in limitfs.base_dir().iterdir() if f"-{pid}-" in p.name] \
        if limitfs.base_dir().is_dir() else []
    found = {"containers": containers, "loops": _loops_of(pid), "mounts": mounts, "folders": folders}
    return {k: v for k, v in found.items() if v}


def no_leftovers(docker_client, pid: int) -> None:
    """Wait (hang bound) until nothing of ``pid`` is left; the unmounts run in threads."""
    wait_for(lambda: not leftovers(docker_client, pid), 60)


# ----------------------------------------------------------------------------- sharedtask run


def ctrl_c_of_run(step: str, tmp_path: Path, image: str, *extra: str) -> tuple[subprocess.Popen, str, str]:
    """`sharedtask run` held at ``step``, sent Ctrl-C there, then let go: (process, stdout, stderr)."""
    folder = tmp_path / "barrier"
    proc = subprocess.Popen(
        [sys.executable, "-m", "sharedtask", "run", "--task", TASK, "--image", image,
         "--command", "cp /run.txt $outputDir/run.txt", "--timeout", "600", *extra],
        cwd=tmp_path, env={**os.environ, **hold_at(step, folder), "COLUMNS": "200"},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=ctrl_c_reaches)
    try:
        reached(folder, step, proc)
        proc.send_signal(signal.SIGINT)  # Ctrl-C while the run is in this step
        release(folder, step)
        out, err = proc.communicate(timeout=180)
    finally:
        if proc.poll() is None:
            proc.kill()
    return proc, out, err


@pytest.mark.parametrize("step", RUN_STEPS)
def test_ctrl_c_of_run_at_each_step(step, docker_client, tiny_image, tmp_path):
    proc, out, err = ctrl_c_of_run(step, tmp_path, tiny_image)
    assert proc.returncode == 130, (out, err)
    said = [line for line in (out + err).splitlines() if "interrupted:" in line]  # the status, said once
    assert len(said) == 1, (out, err)
    assert "Traceback" not in err and "SHAREDTASK_KERNEL" not in out + err and "error" not in said[0].lower()
    no_leftovers(docker_client, proc.pid)
    runs = [p for p in (tmp_path / "sharedtask-runs" / TASK).glob("*")] \
        if (tmp_path / "sharedtask-runs" / TASK).is_dir() else []
    if step in BEFORE_CONTAINER:
        assert runs == [], "nothing ran: no run folder is kept"
        assert "nothing of the run was kept" in said[0]
    else:  # the container existed: its record says interrupted, and where it was stopped
        assert len(runs) == 1
        record = json.loads((runs[0] / "run-record.json").read_text())
        assert record["status"] == "interrupted", record["message"]


def test_ctrl_c_of_run_before_its_container_leaves_no_folder_it_made(docker_client, tiny_image, tmp_path):
    given = tmp_path / "given" / "output"
    proc, out, err = ctrl_c_of_run("output-fs", tmp_path, tiny_image, "--output", str(given))
    assert proc.returncode == 130, (out, err)
    assert not (tmp_path / "given").exists()  # --output's folder and its parent were made for the run
    no_leftovers(docker_client, proc.pid)


# ----------------------------------------------------------------------------- the local pool


@pytest.mark.parametrize("step", STEPS)
def test_the_local_pool_interrupted_at_each_step(step, docker_client, tiny_image, tmp_path, monkeypatch):
    from sharedtask.executor import LocalExecutor
    from sharedtask.spec import load_task

    folder = tmp_path / "barrier"
    monkeypatch.setenv(*hold_at(step, folder).popitem())
    pool = LocalExecutor(2)
    inp = load_task(TASK).sample_dir / "input"
    handles = [pool.submit(job_for(docker_client, tiny_image, f"cp /run.txt $outputDir/run.txt; echo {i}"),
                           tmp_path / f"run{i}", input_dir=inp) for i in range(2)]
    reached(folder, step)
    pool.interrupt()  # what Ctrl-C in `demo --parallel 2` does first: stop request, kills
    release(folder, step)
    closing = threading.Thread(target=pool.close, kwargs={"interrupted": True})
    closing.start()
    results = [h.result(timeout=180) for h in handles]
    closing.join(180)
    assert [r.status for r in results] == ["interrupted", "interrupted"], [r.message for r in results]
    assert {r.state for r in results} == {"failed"}
    for r in results:
        assert len(r.message.splitlines()) == 1 and "SHAREDTASK_KERNEL" not in r.message
    wait_released()
    no_leftovers(docker_client, os.getpid())
    for i in range(2):  # --resume runs them again: nothing interrupted counts as landed
        from sharedtask.executor.base import landed

        assert landed(tmp_path / f"run{i}", handles[i].job) is None


def test_the_local_pool_stops_its_containers_when_interrupted(docker_client, tiny_image, tmp_path):
    """The test that failed under load (issue 42): the pool closed while its runs are anywhere."""
    from sharedtask.executor import LocalExecutor
    from sharedtask.spec import load_task

    pool = LocalExecutor(2)
    inp = load_task(TASK).sample_dir / "input"
    handles = [pool.submit(job_for(docker_client, tiny_image, f"sleep 40; echo {i}"), tmp_path / f"run{i}",
                           input_dir=inp) for i in range(2)]
    wait_for(lambda: any(h._running.is_set() for h in handles), 60)  # noqa: SLF001 - a run has begun
    pool.close(interrupted=True)
    results = [h.result(timeout=60) for h in handles]
    assert [r.status for r in results] == ["interrupted", "interrupted"], [r.message for r in results]
    wait_released()
    no_leftovers(docker_client, os.getpid())


# ----------------------------------------------------------------------------- demo --parallel


@pytest.fixture()
def submissions(tmp_path, tiny_image) -> Path:
    path = tmp_path / "submissions.yml"
    path.write_text(yaml.safe_dump({"version": 1, "submissions": {
        name: {"image": tiny_image, "command": "cp /run.txt $outputDir/run.txt", "tasks": [TASK]}
        for name in ("team-a", "team-b", "team-c")}}))
    return path


@pytest.mark.parametrize("parallel, step", [*((2, step) for step in STEPS), (1, "watch"), (1, "landing")])
def test_ctrl_c_stops_the_whole_demo_and_resume_runs_the_rest(parallel, step, docker_client, submissions, tmp_path):
    """With a pool of N and with one run at a time (which runs in the demo's own thread)."""
    folder, out = tmp_path / "barrier", tmp_path / "out"
    args = [sys.executable, "-m", "sharedtask", "demo", "--task", TASK, "--submissions", str(submissions),
            "--no-baselines", "--parallel", str(parallel), "--output", str(out)]
    proc = subprocess.Popen(args, env={**os.environ, **hold_at(step, folder), "COLUMNS": "200"},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=ctrl_c_reaches)
    try:
        reached(folder, step, proc)
        proc.send_signal(signal.SIGINT)
        release(folder, step)
        stdout, stderr = proc.communicate(timeout=240)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, (stdout, stderr)
    assert "Traceback" not in stderr
    said = [line for line in (stdout + stderr).splitlines() if "interrupted:" in line]
    assert len(said) == 1 and "--resume" in said[0], stdout + stderr
    assert not (out / "report.html").exists()  # the demo stopped: no leaderboard, no report
    no_leftovers(docker_client, proc.pid)
    # --resume runs the interrupted runs again (and only what did not finish)
    again = subprocess.run([*args, "--resume"], capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stdout + again.stderr
    board = json.loads((out / TASK / "leaderboard.json").read_text())
    assert sorted(r["run"] for r in board["runs"]) == ["team-a", "team-b", "team-c"]
    for name in ("team-a", "team-b", "team-c"):
        result = json.loads((out / TASK / name / "job-result.json").read_text())
        assert result["status"] == "success", result


# ----------------------------------------------------------------------------- a compute worker's SIGTERM


@pytest.mark.parametrize("step", STEPS)
def test_sigterm_of_a_worker_at_each_step_gives_the_job_back(step, docker_client, broker, workers, tiny_image,
                                                             tmp_path):
    from sharedtask.executor.remote import CeleryExecutor

    folder = tmp_path / "barrier"
    first = workers(broker, "wstop", env=hold_at(step, folder))
    job = job_for(docker_client, tiny_image, "cp /run.txt $outputDir/run.txt")
    handle = CeleryExecutor(broker.url).submit(job, tmp_path / "out")
    reached(folder, step, first.proc)
    first.proc.send_signal(signal.SIGTERM)
    wait_for(lambda: "Warm shutdown" in first.log(), 60)  # the worker took the signal
    release(folder, step)
    assert first.proc.wait(180) is not None
    assert [e["job"] for e in first.events("job-requeued")] == [job.id], first.log()
    assert "error" not in {e.get("status") for e in first.events("job-finished")}
    no_leftovers(docker_client, first.proc.pid)
    assert [p.name for p in first.work_dir.iterdir() if p.name.startswith(job.id)] == []  # no scratch left
    workers(broker, "wnext")  # the job comes back from the queue to the next worker
    result = handle.result(timeout=240)
    assert (result.state, result.status, result.worker) == ("done", "success", "wnext"), result.message
    assert (tmp_path / "out" / "output" / "run.txt").read_bytes() == REFERENCE.read_bytes()


# ----------------------------------------------------------------------------- submit --wait


def test_ctrl_c_of_submit_wait_says_how_to_follow_the_submission(docker_client, images, tmp_path):
    """The submission is the server's: Ctrl-C stops only the waiting, and says how to wait again."""
    from service_helpers import free_port, perfect_run, start_server, stop

    image = images("wait", perfect_run(), script="sleep 600")
    data_dir = tmp_path / "service"
    data_dir.mkdir()
    server = start_server(data_dir, f"sqlite:///{data_dir / 's.db'}", free_port())
    try:
        token = server.token("team-a")
        proc = subprocess.Popen([sys.executable, "-m", "sharedtask", "submit", "--server", server.url, "--token",
                                 token, "--task", TASK, "--image", image, "--wait"], cwd=tmp_path,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env={**os.environ, "COLUMNS": "200"}, preexec_fn=ctrl_c_reaches)
        seen: list[str] = []
        while not any(line.startswith("#") for line in seen):  # "#1: queued" or "#1: running": it waits now
            line = proc.stderr.readline()
            assert line, (seen, proc.communicate())
            seen.append(line)
        number = next(line for line in seen if line.startswith("#")).split(":")[0][1:]
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        stop(server)
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    said = [line for line in err.splitlines() if "interrupted" in line]
    assert said == [f"interrupted: submission #{number} goes on on the server; follow it with "
                    f"`sharedtask status --server {server.url} --wait {number}`"], err
