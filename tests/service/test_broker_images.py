"""``serve --broker``: a submission's image reaches the compute worker from the organizer's registry by
default, and as an archive with ``--images-dir``.

Real parts: redis-server, a ``sharedtask serve --broker`` process (which starts Debian's
``docker-registry`` on loopback itself), a ``sharedtask worker`` process, an image uploaded with
``sharedtask submit``. The daemon is shared by server and worker here, so the image is removed from
it after the server made the job and before the worker starts: the worker has to fetch it. That it
came from the registry is read from the registry's own access log (the manifest's digest fetched).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from distributed_helpers import RedisServer, broker, ensure_installed, redis_binary, wait_for, workers  # noqa: F401
from service_helpers import TASK, Served, call, free_port, images, perfect_run, start_server, stop  # noqa: F401
from sharedtask.images.registry_log import served

pytestmark = [pytest.mark.docker, pytest.mark.slow]


def _job(server: Served, token: str, sid: int) -> dict:
    """The job the server stored for the submission (made, image shipped, then sent)."""
    import sqlite3

    def stored():
        with sqlite3.connect(server.data_dir / "service.db") as db:
            row = db.execute("select job from submissions where id = ?", (sid,)).fetchone()
        return json.loads(row[0]) if row and row[0] else None
    return wait_for(stored, 180, 0.2)


@pytest.mark.parametrize("shipping", ["registry", "archives"])
def test_a_submission_reaches_a_worker_that_lacks_its_image(shipping, tmp_path, broker, workers, images,  # noqa: F811
                                                            docker_client):
    if shipping == "registry" and ensure_installed("docker-registry", "docker-registry") is None:
        pytest.skip("Debian's docker-registry is not installed")
    data_dir = tmp_path / "service"
    data_dir.mkdir()
    extra = ["--images-dir", str(tmp_path / "shipped")] if shipping == "archives" else []
    server = start_server(data_dir, f"sqlite:///{data_dir / 'service.db'}", free_port(), "--broker", broker.url,
                          *extra)
    image_id = None
    try:
        team = server.token("team-l")
        image = images("layers", perfect_run())
        image_id = docker_client.images.get(image).id
        done = server.cli("submit", "--server", server.url, "--token", team, "--task", TASK, "--image", image,
                          "--json", check=False)
        assert done.returncode in (0, 1), done.stderr
        sid = json.loads(done.stdout)["id"]
        job = _job(server, team, sid)  # no worker yet: the job waits in the broker
        source = job["image_source"]
        log = (tmp_path / f"serve-{server.url.rsplit(':', 1)[1]}.log").read_text()
        if shipping == "registry":  # the default: the registry serve started, named on its console
            address = re.search(r"by layer from the registry started at (127\.0\.0\.1:\d+)", log)[1]
            assert re.fullmatch(rf"registry:{re.escape(address)}/\S+@sha256:[0-9a-f]{{64}}", source), source
        else:
            assert source.startswith(f"archive:{tmp_path / 'shipped'}/") and "by layer" not in log, source
        docker_client.images.remove(image_id, force=True)  # the worker's daemon lacks it now
        workers(broker, "wl")
        status, sub = wait_for(lambda: (r := call(f"{server.url}/api/submissions/{sid}", token=team))[1]["status"]
                               in ("done", "failed") and r, 300, 0.3)
        assert status == 200 and sub["status"] == "done" and sub["valid"] is True, sub
        assert sub["scores"]["ndcg5_official"] == pytest.approx(1.0)  # a perfect run by construction
        assert docker_client.images.get(image_id).id == image_id  # fetched, and the organizer's id
        if shipping == "registry":
            manifest = source.rsplit("@", 1)[1]
            fetched = [r for r in served((data_dir / "registry" / "registry.log").read_text())
                       if r.method == "GET" and r.path.endswith(f"/manifests/{manifest}") and r.status == 200]
            assert fetched, "the worker did not pull the manifest from the registry"
    finally:
        stop(server)
        if image_id:
            try:
                docker_client.images.remove(image_id, force=True)
            except Exception:  # noqa: BLE001 - already gone
                pass
