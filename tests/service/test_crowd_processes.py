"""The crowd of test_crowd.py against TWO server processes on one database and one data folder.

Two ``sharedtask serve`` processes started apart (the harder case of ``serve --processes``:
no common parent), on SQLite and on a real PostgreSQL, real ``docker save`` archives sent with
the participants' own client from threads released together, half to each process. What
only the database can make true across processes is asserted: one image is loaded once
(Docker's own ``load`` events are counted), a daily quota admits exactly its limit, a stalled
upload on one process holds nothing on the other, and a SIGKILLed process loses no submission,
runs none twice in the end, and its locks (the run lease) pass to the other. Nothing waits for
time: threads wait for each other, the tests for answers and log lines, with hang bounds only.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from distributed_helpers import wait_for
from service_helpers import TASK, Served, build_tiny_image, call, free_port, perfect_run, start_server, stop
from service.test_crowd import all_tags, archive, in_parallel, remove_image, upload  # noqa: F401 - archive: a fixture
from service.test_crowd import database, stalled_upload_holds_nothing, wait_all_finished  # noqa: F401 - database: a fixture
from sharedtask.service.client import save_image
from sharedtask.service.runs.claims import RESUMED_NOTE

pytestmark = [pytest.mark.docker, pytest.mark.slow]


@pytest.fixture
def two(tmp_path: Path, database: str, docker_client):
    """``two(*extra)``: two servers on one database and data folder; the first holds the run lease."""
    servers: list[Served] = []
    data_dir = tmp_path / "service"
    data_dir.mkdir(exist_ok=True)

    def start(*extra: str) -> tuple[Served, Served]:
        for _ in range(2):
            servers.append(start_server(data_dir, database, free_port(), "--workers", "2", *extra))
        return servers[-2], servers[-1]

    yield start
    for served in servers:
        stop(served)


def _loads(docker_client, image_id: str, since: float) -> int:
    """How many times Docker loaded ``image_id`` since ``since`` (the daemon's ``load`` events)."""
    events = docker_client.events(since=int(since) - 1, until=int(time.time()) + 1, decode=True,
                                  filters={"type": "image", "event": "load"})
    return sum(1 for e in events if image_id in (e.get("id"), e.get("Actor", {}).get("ID")))


def test_twenty_submissions_of_one_new_image_to_two_processes_load_it_once(archive, two, docker_client) -> None:
    a, b = two()
    organizer = a.token()
    teams = [a.token(f"team-{i}") for i in range(10)]
    since = time.time()
    answers = in_parallel(20, lambda i: upload((a, b)[i % 2], teams[i % 10], archive))
    assert [status for status, _ in answers] == [201] * 20, answers
    ids = sorted(body["id"] for _, body in answers)
    assert len(set(ids)) == 20
    subs = wait_all_finished(b, organizer, ids)  # run by the lease's holder (a), seen through b
    assert all(s["status"] == "done" and s["valid"] is True for s in subs), subs
    assert all(s["attempts"] == 1 for s in subs)  # each ran once
    runs = a.data_dir / "runs"
    assert sorted(int(p.name) for p in runs.iterdir()) == ids
    assert len({s["image"] for s in subs}) == 1  # one image row for all twenty
    uploaded = all_tags(docker_client)[f"sharedtask-submissions:{archive[2]}"]
    assert _loads(docker_client, uploaded, since) == 1  # loaded once, though two processes received it


def test_a_quota_raced_across_two_processes_admits_exactly_the_limit(archive, two) -> None:
    a, b = two("--daily-limit", "3")
    team = a.token("racer")
    answers = in_parallel(10, lambda i: upload((a, b)[i % 2], team, archive))
    statuses = sorted(status for status, _ in answers)
    assert statuses == [201] * 3 + [429] * 7, answers
    status, subs = call(f"{b.url}/api/submissions", token=team)
    assert status == 200 and len(subs) == 3 and len({s["tag"] for s in subs}) == 3


def test_a_stalled_upload_on_one_process_holds_nothing_on_the_other(archive, two) -> None:
    a, b = two()
    # B takes the same image while A reads the stalled body, and A itself goes on
    stalled_upload_holds_nothing(a, b, archive, then=lambda fast: _accepted(upload(a, fast, archive)))


def _accepted(answer: tuple[int, object]) -> None:
    assert answer[0] == 201, answer


@pytest.fixture
def slow_archive(docker_client, tmp_path: Path):
    """A tiny image whose run takes a few seconds: a run is surely under way when the test kills."""
    tag = f"sharedtask-test/crowd-slow:{os.getpid()}-{tmp_path.name[-12:]}"
    build_tiny_image(docker_client, tag, perfect_run("slow"), tmp_path, script="sleep 3")
    path = tmp_path / "slow.tar"
    size, sha = save_image(tag, path)
    image_id = docker_client.images.get(tag).id
    yield path, size, sha
    remove_image(docker_client, image_id)


def _runners(served: Served) -> list[int]:
    log = served.data_dir.parent / f"serve-{served.url.rsplit(':', 1)[1]}.log"
    return [int(line.split("(pid ")[1].split(")")[0]) for line in log.read_text().splitlines()
            if "runs the submissions" in line]


def _wait(condition: Any, what: str) -> Any:
    return wait_for(condition, 300.0, what=what)


def test_a_process_killed_mid_run_loses_nothing_and_the_other_takes_over(slow_archive, two) -> None:
    a, b = two()
    assert a.process is not None and b.process is not None
    assert _runners(a) == [a.process.pid] and _runners(b) == []  # the first one started holds the run lease
    organizer = a.token()
    teams = [a.token(f"team-{i}") for i in range(3)]
    answers = in_parallel(6, lambda i: upload((a, b)[i % 2], teams[i % 3], slow_archive))
    assert [status for status, _ in answers] == [201] * 6, answers
    ids = sorted(body["id"] for _, body in answers)

    def running() -> list[dict[str, Any]]:
        return [s for s in call(f"{b.url}/api/submissions", token=organizer)[1] if s["status"] == "running"]

    cut = _wait(running, "a run under way")
    a.process.send_signal(signal.SIGKILL)  # mid-run: its lease, its containers and its claims are left
    a.process.wait(60)
    assert call(f"{b.url}/api/tasks")[0] == 200  # the other serves on
    _wait(lambda: _runners(b) == [b.process.pid], "the run lease passing to the survivor")
    late = upload(b, teams[0], slow_archive)  # a submission after the kill
    assert late[0] == 201, late
    ids.append(late[1]["id"])
    subs = wait_all_finished(b, organizer, ids)
    assert all(s["status"] == "done" and s["valid"] is True for s in subs), subs
    everyone = call(f"{b.url}/api/submissions", token=organizer)[1]
    assert sorted(s["id"] for s in everyone) == sorted(ids)  # none lost, none made twice
    again = {s["id"]: s for s in subs}
    cut_ids = {s["id"] for s in cut}
    # the runs cut off ran again, once, with a note saying so (a run under way takes seconds: the
    # ones seen running were still running at the kill, bar one that ended in that instant)
    assert any(again[i]["attempts"] == 2 for i in cut_ids), [again[i] for i in cut_ids]
    for sub in subs:
        assert sub["attempts"] == (2 if RESUMED_NOTE in sub["notes"] else 1), sub
        assert sub["attempts"] == 1 or sub["id"] in cut_ids, sub
