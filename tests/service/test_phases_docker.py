"""A phase's submissions run on the phase's own dataset: a real server process, a real upload,
a real sandboxed run (the server's local pool).

The hidden dataset is a copy of the bundled sample in another folder, declared in a tira.yml
of the test; the run record names the folder the run read, so the test sees which dataset ran.
The expected score is nDCG@5 = 1 by construction (service_helpers.perfect_run).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import time
from pathlib import Path

import pytest

from service_helpers import (SAMPLE, TASK, build_tiny_image, call, free_port, perfect_run, remove_containers_of,
                             start_server, stop)

pytestmark = [pytest.mark.docker, pytest.mark.slow]


def test_a_submission_to_the_test_phase_runs_on_its_hidden_dataset(tmp_path: Path, docker_client):
    hidden = tmp_path / "hidden"
    shutil.copytree(SAMPLE / "input", hidden / "input")
    shutil.copytree(SAMPLE / "truth", hidden / "truth")
    manifest = tmp_path / "tira.yml"
    manifest.write_text(f"version: 1\ntasks:\n  {TASK}:\n    datasets:\n"
                        f"      hidden: {{input: {hidden / 'input'}, truth: {hidden / 'truth'}}}\n")
    data_dir = tmp_path / "service"
    data_dir.mkdir()
    tag = f"sharedtask-test/phase-run:{os.getpid()}"
    build_tiny_image(docker_client, tag, perfect_run("phase"), tmp_path)
    served = start_server(data_dir, f"sqlite:///{data_dir / 'service.db'}", free_port(), "--manifest", str(manifest))
    try:
        org, token = served.token(), served.token("team-a")
        opens = (dt.datetime.now(dt.timezone.utc) - dt.timedelta(days=1)).isoformat()
        status, phase = call(f"{served.url}/api/tasks/{TASK}/phases/test", "PUT", org,
                             {"dataset": "hidden", "opens": opens, "scores_visible": False})
        assert status == 200, phase
        done = served.cli("submit", "--server", served.url, "--token", token, "--task", TASK, "--image", tag,
                          "--phase", "test", "--json", check=False)
        assert done.returncode == 0, done.stderr
        sid = json.loads(done.stdout)["id"]
        end = time.monotonic() + 300  # a hang bound, not a speed test
        while (sub := call(f"{served.url}/api/submissions/{sid}", token=org)[1])["status"] not in ("done", "failed"):
            assert time.monotonic() < end, sub
            time.sleep(0.3)
        assert sub["status"] == "done" and sub["phase"] == "test"
        assert sub["record"]["dataset"]["input_dir"] == str((hidden / "input").resolve())
        assert sub["scores"]["ndcg5_official"] == pytest.approx(1.0)
        mine = call(f"{served.url}/api/submissions/{sid}", token=token)[1]
        assert mine["status"] == "done" and mine["scores"] is None  # the phase keeps scores until it closes
    finally:
        stop(served)
        remove_containers_of(docker_client, tag)
        docker_client.images.remove(docker_client.images.get(tag).id, force=True)
