"""benchmarks/service_scale.py in its quick mode (50 teams x 2 submissions, 4 simulated workers):
the real service, PostgreSQL, Redis and workers whose sandbox is simulated must score every
submission once, or the scale figures measure something else.

The expected score is nDCG@5 = 1: the simulated run ranks every judged document by its grade
(service_helpers.perfect_run), scored by the server's own evaluator.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from service_helpers import unavailable

pytestmark = [pytest.mark.docker, pytest.mark.slow]

ROOT = Path(__file__).resolve().parent.parent


def test_the_quick_simulation_scores_every_submission_once_and_names_what_saturates(docker_client):
    if shutil.which("redis-server") is None:
        unavailable("redis-server is not installed (apt-get install redis-server)")
    if not list(Path("/usr/lib/postgresql").glob("*/bin/initdb")) and shutil.which("initdb") is None:
        unavailable("PostgreSQL is not installed (apt-get install postgresql)")
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "service_scale.py"), "--quick"],
                          capture_output=True, text=True, timeout=600, env=os.environ.copy())
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    out = done.stdout
    print(out)
    assert "simulated sandbox (no container)" in out  # the simulation says what it is
    assert "states {'done': 100}" in out and "nDCG@5 = 1 on 100" in out and "errors 0" in out
    assert "run exactly once on a worker (its job-finished events): 100;" in out
    # every submission's queue delay came from a worker's own job-running event
    assert re.search(r"queue delay \(accepted -> running on a worker\)\s+p50\s+[\d.]+\s+p95\s+[\d.]+\s+n=100", out)
    assert re.search(r"saturates first: (server|workers|postgres|redis) ", out)
