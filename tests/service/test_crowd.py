"""The service with a crowd: many teams at once, a raced quota, a stalled upload, a killed server.

Each test starts ``sharedtask serve`` in its own process on a loopback port, on SQLite and on a
real PostgreSQL (Debian's server, started by the tests on loopback), and sends real
``docker save`` archives of a tiny image with the participants' own client
(``sharedtask.service.client.Server.upload``, what ``sharedtask submit`` calls), from threads
that start together at a barrier. Nothing waits for time: threads wait for each other and
for the server's answers; polling loops have hang bounds only.
"""

from __future__ import annotations

import http.client
import os
import signal
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable
from urllib.parse import urlsplit

import pytest

from service_helpers import (TASK, Served, build_tiny_image, call, free_port, perfect_run,  # noqa: F401
                             postgres_server, start_server, stop, wait_until_up)
from sharedtask.service.client import Server, ServiceError, save_image, submission_path

pytestmark = [pytest.mark.docker, pytest.mark.slow]


@pytest.fixture(params=["sqlite", "postgresql"])
def database(request, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'service' / 'service.db'}"
    return request.getfixturevalue("postgres_server")()


@pytest.fixture
def start(tmp_path: Path, database: str, docker_client):
    servers: list[Served] = []
    data_dir = tmp_path / "service"
    data_dir.mkdir(exist_ok=True)

    def start_one(*extra: str, port: int | None = None) -> Served:
        served = start_server(data_dir, database, port or free_port(), "--workers", "2", *extra)
        servers.append(served)
        return served

    yield start_one
    for served in servers:
        stop(served)


def remove_image(docker_client, image_id: str) -> None:
    """Remove the test's image and every container made from it (the server may still start one)."""
    import docker

    for _ in range(20):  # a hang bound: the server is stopped by now, its last run may still go
        for item in docker_client.api.containers(all=True, filters={"ancestor": image_id}):
            try:  # the low-level list does not inspect: no race with a container removed meanwhile
                docker_client.api.remove_container(item["Id"], force=True)
            except docker.errors.NotFound:
                pass
        try:
            docker_client.images.remove(image_id, force=True)
            return
        except docker.errors.NotFound:
            return
        except docker.errors.APIError:  # "in use by a running container": created after the list
            time.sleep(0.5)


@pytest.fixture
def archive(docker_client, tmp_path: Path):
    """A real ``docker save`` archive of a tiny image that writes a valid run.

    Tests take it before ``start``, so it is removed after the servers stopped."""
    tag = f"sharedtask-test/crowd:{os.getpid()}-{tmp_path.name[-12:]}"
    build_tiny_image(docker_client, tag, perfect_run("crowd"), tmp_path)
    path = tmp_path / "image.tar"
    size, sha = save_image(tag, path)
    image_id = docker_client.images.get(tag).id
    yield path, size, sha
    remove_image(docker_client, image_id)


def all_tags(docker_client) -> dict[str, str]:
    return {tag: image.id for image in docker_client.images.list() for tag in image.tags}


def names_of(docker_client, image_id: str) -> set[str]:
    return set(docker_client.images.get(image_id).tags)


def upload(served: Served, token: str, archive: tuple[Path, int, str], tag: str | None = None) -> tuple[int, Any]:
    path, size, sha = archive
    with open(path, "rb") as fh:
        try:
            return 201, Server(served.url, token).upload(submission_path(TASK, None, tag), fh, size, sha)
        except ServiceError as exc:
            return exc.status, str(exc)


def in_parallel(n: int, action: Any) -> list[Any]:
    """``action(i)`` for i < n in n threads released together."""
    barrier = threading.Barrier(n)

    def go(i: int) -> Any:
        barrier.wait()
        return action(i)

    with ThreadPoolExecutor(n) as pool:
        return list(pool.map(go, range(n)))


def wait_all_finished(served: Served, token: str, ids: list[int]) -> list[dict[str, Any]]:
    end = time.monotonic() + 600  # a hang bound, not a speed test
    while time.monotonic() < end:
        status, subs = call(f"{served.url}/api/submissions", token=token)
        assert status == 200, subs
        mine = [s for s in subs if s["id"] in ids]
        if len(mine) == len(ids) and all(s["status"] in ("done", "failed") for s in mine):
            return mine
        time.sleep(0.5)
    raise AssertionError("the submissions did not finish")


def test_twenty_submissions_of_one_new_image_by_ten_teams_are_all_accepted_and_run_once(
        archive, start, docker_client) -> None:
    served = start()
    organizer = served.token()
    teams = [served.token(f"team-{i}") for i in range(10)]
    before = all_tags(docker_client)
    answers = in_parallel(20, lambda i: upload(served, teams[i % 10], archive))
    assert [status for status, _ in answers] == [201] * 20, answers
    ids = sorted(body["id"] for _, body in answers)
    assert len(set(ids)) == 20
    subs = wait_all_finished(served, organizer, ids)
    assert all(s["status"] == "done" and s["valid"] is True for s in subs), subs
    assert all(s["attempts"] == 1 for s in subs)  # each ran once
    runs = served.data_dir / "runs"
    assert sorted(int(p.name) for p in runs.iterdir()) == ids
    assert all(sorted(p.name for p in (runs / str(i)).iterdir()) == ["attempt-1"] for i in ids)
    assert len({s["image"] for s in subs}) == 1  # stored (and loaded) once for all twenty
    after = all_tags(docker_client)
    moved = {t for t in before if t in after and before[t] != after[t]}
    assert not moved  # no name that existed before points elsewhere now
    uploaded = after[f"sharedtask-submissions:{archive[2]}"]  # the service's own name for the upload
    assert {t for t, i in after.items() if i == uploaded} - set(before) == {f"sharedtask-submissions:{archive[2]}"}


def test_a_quota_raced_by_ten_parallel_submissions_admits_exactly_the_limit(archive, start) -> None:
    served = start("--daily-limit", "3")
    team = served.token("racer")
    answers = in_parallel(10, lambda i: upload(served, team, archive))
    statuses = sorted(status for status, _ in answers)
    assert statuses == [201] * 3 + [429] * 7, answers
    assert all("resets at" in body for status, body in answers if status == 429)
    status, subs = call(f"{served.url}/api/submissions", token=team)
    assert status == 200 and len(subs) == 3 and len({s["tag"] for s in subs}) == 3


def _stalled_upload(served: Served, token: str, archive: tuple[Path, int, str], part: int) -> http.client.HTTPConnection:
    """Headers and the first ``part`` bytes of an upload, then nothing (the caller sends the rest or not)."""
    path, size, sha = archive
    url = urlsplit(served.url)
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=300)
    conn.putrequest("POST", submission_path(TASK, None, None))
    for key, value in {"Authorization": f"Bearer {token}", "Content-Type": "application/x-tar",
                       "Content-Length": str(size), "X-Image-Sha256": sha}.items():
        conn.putheader(key, value)
    conn.endheaders()
    conn.send(path.read_bytes()[:part])
    return conn


def test_a_stalled_upload_holds_nothing_while_another_team_submits(archive, start) -> None:
    served = start()
    stalled_upload_holds_nothing(served, served, archive)


def stalled_upload_holds_nothing(stalled: Served, other: Served, archive: tuple[Path, int, str],
                                 then: Callable[[str], None] | None = None) -> None:
    """A team's upload stops halfway on ``stalled``; meanwhile ``other`` (the same server, or
    another process on its database) answers pings and takes another team's upload of the same
    image, ``then(fast_token)`` checks more, and the stalled upload ends accepted."""
    slow, fast = stalled.token("slow"), stalled.token("fast")
    latencies: list[float] = []
    done = threading.Event()

    def ping() -> None:
        while not done.is_set():
            t0 = time.monotonic()
            assert call(f"{other.url}/api/tasks")[0] == 200
            latencies.append(time.monotonic() - t0)

    pinger = threading.Thread(target=ping, daemon=True)
    pinger.start()
    path, size, _ = archive
    conn = _stalled_upload(stalled, slow, archive, size // 2)
    try:
        # the spool of the stalled upload exists: its body is being read, and the server goes on
        deadline = time.monotonic() + 120  # a hang bound
        while not list((stalled.data_dir / "uploads").glob("*.tar")) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert list((stalled.data_dir / "uploads").glob("*.tar"))
        status, body = upload(other, fast, archive)
        assert status == 201, body
        if then is not None:
            then(fast)
        conn.send(path.read_bytes()[size // 2:])
        response = conn.getresponse()
        assert response.status == 201, response.read()
    finally:
        conn.close()
        done.set()
        pinger.join(60)
    assert len(latencies) >= 3
    print(f"pings while an upload stalled: {len(latencies)}, max {max(latencies) * 1000:.0f} ms")
    # A freeze bound, not a speed test: the server froze for 10 s (SQLite) or for good
    # (PostgreSQL) when a transaction stayed open across the stalled upload.
    assert max(latencies) < 5.0


def test_a_server_killed_during_an_upload_leaves_no_spool_after_restart(archive, start) -> None:
    served = start()
    team = served.token("team")
    port = int(urlsplit(served.url).port)
    conn = _stalled_upload(served, team, archive, archive[1] // 2)
    spools = served.data_dir / "uploads"
    try:
        deadline = time.monotonic() + 120
        while not list(spools.glob("*.tar")) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert list(spools.glob("*.tar"))  # the half-received upload is on the disk ...
        served.process.send_signal(signal.SIGKILL)
        served.process.wait(60)
        assert list(spools.glob("*.tar"))  # ... and a SIGKILL cannot remove it
    finally:
        conn.close()
    again = start(port=port)
    wait_until_up(again.url)
    assert not list(spools.iterdir())  # removed at start-up
    assert upload(again, team, archive)[0] == 201  # and the service works


def test_submit_asks_before_docker_save_and_says_why_a_run_failed(start, docker_client, tmp_path: Path) -> None:
    served = start()
    organizer, team = served.token(), served.token("team")
    tag = f"sharedtask-test/crowd-fails:{os.getpid()}"
    build_tiny_image(docker_client, tag, perfect_run("x"), tmp_path, script="echo 'cannot find my index' >&2; exit 3")
    try:
        def submit(token: str, *extra: str):
            return served.cli("submit", "--server", served.url, "--token", token, "--task", TASK, "--image", tag,
                              *extra, check=False)

        refused = submit("not-a-token")
        assert refused.returncode == 2 and "401" in refused.stderr
        assert "sha256" not in refused.stderr  # refused before `docker save` wrote anything
        closed = {"opens": "2020-01-01T00:00:00Z", "closes": "2020-02-01T00:00:00Z"}
        assert call(f"{served.url}/api/tasks/{TASK}/settings", "PUT", organizer, closed)[0] == 200
        late = submit(team)
        assert late.returncode == 2 and "closed for submissions at 2020-02-01T00:00:00+00:00" in late.stderr
        assert "sha256" not in late.stderr
        assert call(f"{served.url}/api/tasks/{TASK}/settings", "PUT", organizer, {})[0] == 200
        failed = submit(team, "--wait", "--tag", "broken")
        assert failed.returncode == 1, failed.stderr
        assert "why: exit code 3" in failed.stdout and "why: findings: RUN-MISSING" in failed.stdout
        taken = submit(team, "--tag", "broken")
        assert taken.returncode == 2 and "409" in taken.stderr and "sha256" not in taken.stderr
    finally:
        remove_image(docker_client, docker_client.images.get(tag).id)
