"""The sandbox options are declared once (sandbox/options.py) and read by the CLI, `run` and the job schema."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import socket

import pytest

from sharedtask.cli import build_parser
from sharedtask.executor.admission import CHOICE_OPTIONS, LIMIT_OPTIONS, JobRefused, admit
from sharedtask.sandbox.options import BY_NAME, OPTIONS, from_args

TASK = "touche-2021-task1"


def test_every_option_is_a_flag_of_run_and_comes_back_as_its_keyword() -> None:
    argv = ["run", "--task", TASK, "--image", "x:1", "--timeout", "90s", "--memory", "1g", "--cpus", "1.5",
            "--pids", "64", "--max-output", "2m", "--disk", "3m", "--cpu-profile", "haswell", "--runtime", "runsc",
            "--network", "mynet", "--user", "1000:1000", "--read-only-root", "--dataset-id", "d1"]
    args = build_parser("run").parse_args(argv)
    assert from_args(args) == {"timeout": "90s", "memory": "1g", "cpus": 1.5, "pids": 64, "max_output": "2m",
                               "disk": "3m", "cpu": "haswell", "runtime": "runsc", "network": "mynet",
                               "user": "1000:1000", "read_only_root": True, "dataset_id": "d1"}
    defaults = from_args(build_parser("run").parse_args(["run", "--task", TASK, "--image", "x:1", "--allow-network"]))
    assert defaults == {**{o.name: None for o in OPTIONS}, "user": "me", "read_only_root": False, "network": "bridge"}
    with pytest.raises(SystemExit):  # --network and --allow-network exclude each other
        build_parser("run").parse_args(["run", "--task", TASK, "--image", "x", "--network", "n", "--allow-network"])


def test_sandbox_run_refuses_a_keyword_that_is_no_option() -> None:
    from sharedtask.sandbox import run

    with pytest.raises(TypeError, match="'memroy'"):
        run(TASK, "x:1", memroy="1g")


def test_the_job_schema_takes_its_options_from_the_table() -> None:
    assert set(LIMIT_OPTIONS) == {o.name for o in OPTIONS if o.job == "limit"} == \
        {"timeout", "memory", "cpus", "pids", "max_output", "disk"}
    assert set(CHOICE_OPTIONS) == {"cpu", "runtime", "read_only_root", "dataset_id"}
    job = {"task": TASK, "software": "s", "image": "x:1", "image_id": "sha256:" + "a" * 64, "command": None,
           "dataset": {"id": "d", "sha256": {}}}
    for name in ("user", "network"):  # the worker's own, never a job's
        assert BY_NAME[name].job == "never"
        with pytest.raises(JobRefused, match=f"options.{name}: is decided by the worker"):
            admit({**job, "options": {name: "0:0" if name == "user" else "host"}})
    assert admit({**job, "options": {"memory": "1g", "read_only_root": True}}).options == \
        {"memory": "1g", "read_only_root": True}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_ctrl_c_while_waiting_says_how_to_follow_the_submission_again(tmp_path) -> None:
    """`status --wait` (the loop `submit --wait` uses) on a server that does not answer: it waits;
    Ctrl-C then says, in one line, how to follow the submission again."""
    url = f"http://127.0.0.1:{_free_port()}"
    proc = subprocess.Popen([sys.executable, "-m", "sharedtask", "status", "--server", url, "--token", "t",
                             "--wait", "7"], cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env={**os.environ, "COLUMNS": "200"},
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    seen = proc.stderr.readline()  # the first line: the server does not answer, waiting
    assert "waiting for it" in seen, seen
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    said = [line for line in err.splitlines() if "interrupted" in line]
    assert said == [f"interrupted: submission #7 goes on on the server; follow it with "
                    f"`sharedtask status --server {url} --wait 7`"], err
