"""The service's validation of a submitted run is bounded by the task too (issue 26: "the same run
submitted to the service poisons it"). A real `sharedtask serve` process, a real image whose run
is one topic of 1M lines (42 MB, legal in size); the server's own peak RSS (VmHWM) is read
from /proc after the verdict."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from service_helpers import TASK, build_tiny_image, free_port, remove_containers_of, start_server, stop

pytestmark = [pytest.mark.docker, pytest.mark.slow]

# busybox awk writes the run, then the script exits before the helper's `cp` of its baked run
DEEP_RUN = ("awk 'BEGIN { n = 1000000; for (r = 1; r <= n; r++) "
            "printf \"1 Q0 S%08x-A%08x %d %d.5 deep\\n\", r, r, r, n - r + 1 }' > \"$2/run.txt\"; exit 0")


def _peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmHWM in /proc/PID/status")


def test_a_deep_run_submitted_to_the_service_is_refused_in_bounded_memory(tmp_path, docker_client):
    data_dir = tmp_path / "service"
    data_dir.mkdir()
    served = start_server(data_dir, f"sqlite:///{data_dir / 'service.db'}", free_port())
    tag = f"sharedtask-test/service-deep:{uuid.uuid4().hex[:8]}"
    try:
        build_tiny_image(docker_client, tag, "", tmp_path, script=DEEP_RUN)
        token = served.token("team-deep")
        done = served.cli("submit", "--server", served.url, "--token", token, "--task", TASK, "--image", tag,
                          "--json", "--wait", check=False)
        assert done.returncode in (0, 1), done.stderr
        sub = json.loads(done.stdout)
        assert sub["status"] == "done" and sub["run_status"] == "success" and sub["valid"] is False, sub
        codes = [f["code"] for f in sub["validation"]["report"]["findings"]]
        assert "RUN-MEMORY-BOUND" in codes
        assert served.process is not None and served.process.poll() is None  # the server lives on
        # Before: every one of the 1M lines kept (~620 bytes each) on top of the server's own memory.
        assert _peak_rss_mb(served.process.pid) < 512
    finally:
        stop(served)
        remove_containers_of(docker_client, tag)
        try:
            docker_client.images.remove(docker_client.images.get(tag).id, force=True)
        except Exception:  # noqa: BLE001 - already gone
            pass
