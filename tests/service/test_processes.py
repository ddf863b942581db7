"""Several server processes on one database: the locks they share, the answers cache, ``--processes``.

On SQLite and on a real PostgreSQL (Debian's server, started by the tests on loopback). The
lock holder is a real process that the test SIGKILLs; the servers are real ``sharedtask serve``
processes. Nothing waits for time: the tests wait for files, answers and processes, with hang
bounds only. The crowds with Docker are in test_crowd_processes.py.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from distributed_helpers import wait_for
from service_helpers import TASK, call, free_port, start_server, stop
from sharedtask.service.db import make_engine, migrate
from sharedtask.service.locks import LockBusy, Locks, lock_name

HOLDER = """
import sys, pathlib
from sharedtask.service.db import make_engine
from sharedtask.service.locks import Locks
locks = Locks(make_engine(sys.argv[1]))
with locks.hold(("image", "abc")):
    pathlib.Path(sys.argv[2]).write_text("held")
    sys.stdin.read()  # until the test kills this process
"""


def _wait(condition: Any, what: str) -> Any:
    return wait_for(condition, 120.0, what=what)


def test_a_lock_in_the_database_excludes_another_process_and_a_sigkill_frees_it(database, tmp_path: Path) -> None:
    engine = make_engine(database)
    migrate(engine)
    flag = tmp_path / "held"
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, database, str(flag)], stdin=subprocess.PIPE)
    try:
        _wait(flag.exists, "the other process taking the lock")
        locks = Locks(engine)
        assert locks.acquire(lock_name(("image", "abc")), wait=False) is None  # held elsewhere
        other = locks.acquire(lock_name(("image", "def")), wait=False)  # another key is free
        assert other is not None
        other()
        with pytest.raises(LockBusy):  # a bounded wait ends with the holder still holding
            with locks.hold(("image", "abc"), within=0.5):
                raise AssertionError("held by two processes at once")
        taken = threading.Event()

        def wait_for_it() -> None:
            with locks.hold(("image", "abc")):
                taken.set()

        waiter = threading.Thread(target=wait_for_it, daemon=True)
        waiter.start()
        holder.send_signal(signal.SIGKILL)  # mid-work: no release, no cleanup
        holder.wait(60)
        assert taken.wait(120), "the lock of a killed process was never released"
        waiter.join(60)
        again = locks.acquire(lock_name(("image", "abc")), wait=False)  # given back by the waiter
        assert again is not None
        again()
    finally:
        holder.kill()
        holder.wait(60)
        engine.dispose()


def test_a_lease_of_another_host_is_taken_only_once_it_ran_out(tmp_path: Path) -> None:
    """SQLite's lease row: a holder that is not a process of this host is trusted until its lease ends."""
    from sqlalchemy import insert, update

    from sharedtask.service.models import Lease

    engine = make_engine(f"sqlite:///{tmp_path / 'service.db'}")
    migrate(engine)
    with engine.begin() as connection:
        connection.execute(insert(Lease).values(name="image:abc", owner="another-host:1:x", expires=time.time() + 3600))
    locks = Locks(engine)
    assert locks.acquire("image:abc", wait=False) is None
    with engine.begin() as connection:
        connection.execute(update(Lease).values(expires=time.time() - 1))
    release = locks.acquire("image:abc", wait=False)
    assert release is not None
    release()
    with engine.connect() as connection:
        assert connection.execute(Lease.__table__.select()).all() == []  # given back: the row is gone


@pytest.fixture
def two(tmp_path: Path, database: str):
    """Two ``serve`` processes started apart on one database and one data folder."""
    data_dir = tmp_path / "service"
    data_dir.mkdir()
    servers = [start_server(data_dir, database, free_port()) for _ in range(2)]
    yield servers
    for served in servers:
        stop(served)


def test_the_answers_cache_of_one_process_sees_a_commit_of_another(two) -> None:
    a, b = two
    organizer = a.token()
    before = [t for t in call(f"{a.url}/api/tasks")[1] if t["task"] == TASK][0]
    assert before["daily_limit"] is None and before["published"] is False
    assert call(f"{a.url}/api/tasks")[1] == call(f"{a.url}/api/tasks")[1]  # A keeps this answer until a commit
    assert call(f"{a.url}/api/tasks/{TASK}/leaderboard")[0] in (403, 404)  # not public yet
    status, _ = call(f"{b.url}/api/tasks/{TASK}/settings", "PUT", organizer, body={"daily_limit": 7})
    assert status == 200
    assert call(f"{b.url}/api/tasks/{TASK}/publish", "POST", organizer)[0] == 200
    after = [t for t in call(f"{a.url}/api/tasks")[1] if t["task"] == TASK][0]
    assert after["daily_limit"] == 7 and after["published"] is True  # A's next answer shows B's commits
    status, board = call(f"{a.url}/api/tasks/{TASK}/leaderboard")
    assert status == 200, board


def _children(pid: int) -> set[int]:
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rpartition(")")[2].split()
        except OSError:
            continue
        if fields and int(fields[1]) == pid and fields[0] != "Z":
            found.add(int(stat.parent.name))
    return found


def _runner_lines(log: Path) -> list[int]:
    """The pids that took the run lease, in order (the log line of runs/lease.py)."""
    return [int(line.split("(pid ")[1].split(")")[0]) for line in log.read_text().splitlines()
            if "runs the submissions" in line]


def test_serve_processes_2_replaces_a_killed_process_and_hands_the_runs_over(tmp_path: Path, database: str) -> None:
    data_dir = tmp_path / "service"
    data_dir.mkdir()
    port = free_port()
    served = start_server(data_dir, database, port, "--processes", "2")
    log = tmp_path / f"serve-{port}.log"
    try:
        assert served.process is not None
        children = _wait(lambda: c if len(c := _children(served.process.pid)) == 2 else None, "two processes")
        runner = _wait(lambda: _runner_lines(log), "a process taking the runs")[0]
        assert runner in children  # one of the two runs the submissions
        os.kill(runner, signal.SIGKILL)  # mid-work
        assert call(f"{served.url}/api/tasks")[0] == 200  # the other serves on
        replaced = _wait(lambda: c if len(c := _children(served.process.pid)) == 2 and runner not in c else None,
                         "a new process in place of the killed one")
        runners = _wait(lambda: r if len(r := _runner_lines(log)) == 2 else None, "the runs handed over")
        assert runners[1] in replaced and runners[1] != runner  # released by the kill, taken by a live one
        for _ in range(10):
            assert call(f"{served.url}/api/tasks")[0] == 200
        served.process.send_signal(signal.SIGTERM)
        assert served.process.wait(60) == 0
        assert not any(Path(f"/proc/{pid}").exists() for pid in replaced)  # waited for by the supervisor
    finally:
        stop(served)
