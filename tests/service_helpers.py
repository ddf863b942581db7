"""Helpers for the submission-service tests: a real server on loopback, a tiny real image, PostgreSQL.

The tiny image is ``FROM scratch`` with Debian's static busybox (package busybox-static)
and a run file baked in: ``docker save`` of it is about 2 MB, so a test uploads the
real archive format in a fraction of a second instead of the 400 MB base image.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent
SAMPLE = REPO / "tasks" / "samples" / "touche-2021"
TASK = "touche-2021-task1"


def unavailable(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"CI must run the service tests, but {reason}")
    pytest.skip(reason)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_until_up(url: str, deadline: float = 60.0) -> None:
    """Poll ``url`` until it answers; a bounded wait for start-up, not a timing assertion."""
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        try:
            urllib.request.urlopen(url + "/api/tasks", timeout=2).read()
            return
        except (urllib.error.URLError, ConnectionError, OSError):
            time.sleep(0.1)
    raise AssertionError(f"the server at {url} did not come up")


def call(url: str, method: str = "GET", token: str | None = None, body: Any = None,
         data: bytes | None = None, headers: dict[str, str] | None = None) -> tuple[int, Any]:
    """One HTTP request; (status, decoded JSON or text). Never raises for an HTTP error status."""
    hdrs = dict(headers or {})
    if token:
        hdrs["Authorization"] = f"Bearer {token}"
    if body is not None:
        data = json.dumps(body).encode()
        hdrs["Content-Type"] = "application/json"
    request = urllib.request.Request(url, data=data, method=method, headers=hdrs)
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            status, raw, ctype = response.status, response.read(), response.headers.get("content-type", "")
    except urllib.error.HTTPError as exc:
        status, raw, ctype = exc.code, exc.read(), exc.headers.get("content-type", "")
    if "json" in ctype:
        return status, json.loads(raw)
    return status, raw.decode("utf-8", "replace")


@dataclass
class Served:
    url: str
    data_dir: Path
    db: str
    process: subprocess.Popen[bytes] | None = None

    def cli(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "sharedtask", *args], capture_output=True, text=True,
                              check=check, cwd=self.data_dir.parent, timeout=600)

    def token(self, team: str | None = None) -> str:
        flag = ["--new-team", team] if team else ["--new-organizer-token"]
        return self.cli("serve", "--db", self.db, "--data-dir", str(self.data_dir), *flag).stdout.strip()


def start_server(data_dir: Path, db: str, port: int, *extra: str) -> Served:
    """``sharedtask serve`` in its own process (so a test can kill it), up and answering."""
    url = f"http://127.0.0.1:{port}"
    log = open(data_dir.parent / f"serve-{port}.log", "ab")
    process = subprocess.Popen([sys.executable, "-m", "sharedtask", "serve", "--db", db, "--data-dir", str(data_dir),
                                "--port", str(port), "--task", TASK, *extra],
                               stdout=log, stderr=subprocess.STDOUT, cwd=data_dir.parent)
    try:
        wait_until_up(url)
    except AssertionError:
        process.kill()
        raise AssertionError((data_dir.parent / f"serve-{port}.log").read_text())
    return Served(url, data_dir, db, process)


def stop(served: Served) -> None:
    if served.process is not None and served.process.poll() is None:
        served.process.terminate()
        try:
            served.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            served.process.kill()
            served.process.wait()


class RecordingExecutor:
    """Stands in for the local pool: remembers what was queued, runs nothing."""

    def __init__(self) -> None:
        self.queued: list[int] = []

    def enqueue(self, submission_id: int) -> None:
        self.queued.append(submission_id)

    def shutdown(self) -> None:
        pass


@dataclass
class ServiceApp:
    """The app over a migrated database, its sessions and engine, the queue it fills (a
    :class:`RecordingExecutor`), and the tokens made for it (``"org"``, then one per team name)."""

    app: Any
    factory: Any
    engine: Any
    runs: RecordingExecutor
    tokens: dict[str, str]


def service_app(database_url: str, *teams: str, data_dir: Path, **config: Any) -> ServiceApp:
    """The real app (Alembic-migrated SQLite or PostgreSQL) with the organizer's token and a team per
    name; only the run queue is replaced, so nothing runs in Docker. ``task_ids`` defaults to
    the sample task. Served in a thread by :class:`ThreadServer` (the ``in_thread`` fixture)."""
    from sharedtask.service.app import ServiceConfig, create_app
    from sharedtask.service.db import make_engine, migrate, sessions
    from sharedtask.service.teams.tokens import create_team, organizer_token

    engine = make_engine(database_url)
    migrate(engine)
    factory = sessions(engine)
    with factory.begin() as session:
        tokens = {"org": organizer_token(session)}
        for name in teams:
            tokens[name] = create_team(session, name)[1]
    runs = RecordingExecutor()
    app = create_app(factory, runs, ServiceConfig(data_dir=data_dir, **{"task_ids": [TASK], **config}))
    return ServiceApp(app, factory, engine, runs, tokens)


class ThreadServer:
    """uvicorn serving an app in a thread of the test process (for tests that need no Docker)."""

    def __init__(self, app: Any) -> None:
        import uvicorn

        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> "ThreadServer":
        self.thread.start()
        wait_until_up(self.url)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=30)


def containers_of(client: Any, image: str) -> list[str]:
    """Ids of the containers (any state) made from ``image``.

    The low-level list, on purpose: ``containers.list`` inspects each container it found,
    and one the server is reaping meanwhile makes that inspect a 404.
    """
    return [c["Id"] for c in client.api.containers(all=True, filters={"ancestor": image})]


def remove_containers_of(client: Any, image: str) -> None:
    """Force-remove what a test left going (a stopped server's run, a killed worker's)."""
    for container_id in containers_of(client, image):
        try:
            client.api.remove_container(container_id, force=True)
        except Exception:  # noqa: BLE001 - reaped by its server meanwhile
            pass


def perfect_run(tag: str = "busy") -> str:
    """A run of the Touché 2021 sample that ranks every judged document by its grade.

    Its official nDCG@5 is 1 on every topic by definition (DCG equals the ideal DCG
    when the ranking is the ideal one), so the expected score needs no evaluator.
    """
    by_topic: dict[str, list[tuple[int, str]]] = {}
    for line in (SAMPLE / "truth" / "qrels.txt").read_text().splitlines():
        qid, _, doc, grade = line.split()
        by_topic.setdefault(qid, []).append((int(grade), doc))
    lines = []
    for qid in sorted(by_topic):
        ranked = sorted(by_topic[qid], key=lambda g: (-g[0], g[1]))
        lines += [f"{qid} Q0 {doc} {i} {len(ranked) - i + 1} {tag}" for i, (_, doc) in enumerate(ranked, 1)]
    return "\n".join(lines) + "\n"


def build_tiny_image(client: Any, tag: str, run_text: str, tmp: Path, *, script: str = "") -> str:
    """``FROM scratch`` + static busybox; its command copies the baked run file to $outputDir."""
    busybox = shutil.which("busybox")
    # a dynamically linked busybox names its loader near the start of the ELF file
    if busybox is None or b"ld-linux" in Path(busybox).read_bytes()[:4096]:
        unavailable("Debian's busybox-static is not installed (apt-get install busybox-static)")
    ctx = tmp / f"ctx-{tag.replace('/', '-').replace(':', '-')}"
    ctx.mkdir(parents=True)
    shutil.copy(busybox, ctx / "busybox")
    (ctx / "run.txt").write_text(run_text)
    (ctx / "run.sh").write_text(f"#!/bin/sh\n{script}\ncp /app/run.txt \"$2/run.txt\"\n")
    (ctx / "Dockerfile").write_text(
        "FROM scratch\nCOPY busybox /bin/busybox\nRUN [\"/bin/busybox\", \"--install\", \"-s\", \"/bin\"]\n"
        "COPY run.txt run.sh /app/\nCMD [\"/bin/sh\", \"/app/run.sh\", \"/tira-data/input\", \"/tira-data/output\"]\n")
    # no network: nothing is fetched, and the build does not depend on the daemon's bridge
    client.images.build(path=str(ctx), tag=tag, rm=True, forcerm=True, network_mode="none")
    return tag


def tiny_archives(client: Any, prefix: str, tmp: Path, n: int = 5) -> tuple[list[str], list[tuple[bytes, str]]]:
    """``n`` tiny images (:func:`build_tiny_image`, each with its own perfect run) and their
    ``docker save`` archives with sha256: what the service benchmarks upload."""
    tags = [build_tiny_image(client, f"{prefix}-{i}:1", perfect_run(f"bench{i}"), tmp) for i in range(n)]
    archives = []
    for tag in tags:
        data = b"".join(client.api.get_image(tag))
        archives.append((data, hashlib.sha256(data).hexdigest()))
    return tags, archives


@pytest.fixture
def images(docker_client, tmp_path):
    """``build(name, run_text, script="")``: a tiny image (:func:`build_tiny_image`) removed after the
    test, by id (also the server's own tag of it) and with every container made from it."""
    made: list[str] = []

    def build(name: str, run_text: str, script: str = "") -> str:
        tag = f"sharedtask-test/service-{name}:{os.getpid()}"
        made.append(build_tiny_image(docker_client, tag, run_text, tmp_path, script=script))
        return tag

    yield build
    for tag in made:
        remove_containers_of(docker_client, tag)
        try:
            docker_client.images.remove(docker_client.images.get(tag).id, force=True)
        except Exception:  # noqa: BLE001 - already gone
            pass


@pytest.fixture(params=["sqlite", "postgresql"])
def database(request, tmp_path: Path) -> str:
    """The embedded default and the real deployment's database: a test with it runs on both."""
    if request.param == "sqlite":
        return f"sqlite:///{(tmp_path / 'service.db').resolve()}"
    return request.getfixturevalue("postgres_server")()


# ----------------------------------------------------------------------------- PostgreSQL


def _pg_bin() -> Path | None:
    found = shutil.which("pg_ctl")
    if found:
        return Path(found).resolve().parent
    versions = sorted(Path("/usr/lib/postgresql").glob("*/bin"))
    return versions[-1] if versions else None


class PostgresServer:
    """A real PostgreSQL server (Debian's ``postgresql``) on a loopback port, in a fresh folder.

    As root the server runs as the ``postgres`` user (PostgreSQL refuses to run as root).
    :meth:`new_database` creates a fresh database and returns its SQLAlchemy URL. Used by the
    ``postgres_server`` fixture and by benchmarks/service_scale.py.
    """

    def __init__(self, *options: str) -> None:
        bin_dir = _pg_bin()
        if bin_dir is None or not (bin_dir / "initdb").exists():
            unavailable("PostgreSQL is not installed (apt-get install postgresql)")
        import tempfile

        assert bin_dir is not None
        self.bin_dir = bin_dir
        # not under pytest's tmp folder: that is 0700 root, and the server runs as 'postgres'
        self.base = Path(tempfile.mkdtemp(prefix="sharedtask-pg-"))
        self.data, sockets = self.base / "data", self.base / "sock"
        sockets.mkdir()
        self.as_user: list[str] = []
        if os.geteuid() == 0:
            import pwd

            try:
                user = pwd.getpwnam("postgres")
            except KeyError:
                unavailable("PostgreSQL's system user 'postgres' is missing")
            os.chmod(self.base, 0o755)
            os.chown(self.base, user.pw_uid, user.pw_gid)
            os.chown(sockets, user.pw_uid, user.pw_gid)
            self.as_user = ["runuser", "-u", "postgres", "--"]
        self.port = free_port()
        subprocess.run([*self.as_user, str(bin_dir / "initdb"), "-D", str(self.data), "-U", "postgres",
                        "--auth=trust", "-E", "UTF8"], check=True, capture_output=True)
        extra = "".join(f" -c {option}" for option in options)
        subprocess.run([*self.as_user, str(bin_dir / "pg_ctl"), "-D", str(self.data), "-w", "-l",
                        str(self.base / "log"), "-o",
                        f"-p {self.port} -k {sockets} -c listen_addresses=127.0.0.1 -c fsync=off{extra}", "start"],
                       check=True, capture_output=True)
        self._counter = iter(range(1, 10_000))

    @property
    def pid(self) -> int:
        """The postmaster's process id (first line of ``postmaster.pid``)."""
        return int((self.data / "postmaster.pid").read_text().split()[0])

    def dsn(self, database: str = "postgres") -> str:
        return f"host=127.0.0.1 port={self.port} user=postgres dbname={database}"

    def new_database(self) -> str:
        import psycopg

        name = f"service_{next(self._counter)}"
        with psycopg.connect(self.dsn(), autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/{name}"

    def stop(self) -> None:
        subprocess.run([*self.as_user, str(self.bin_dir / "pg_ctl"), "-D", str(self.data), "-m", "fast", "stop"],
                       capture_output=True)
        shutil.rmtree(self.base, ignore_errors=True)


@pytest.fixture(scope="session")
def postgres_server():
    """A :class:`PostgresServer` for this test session; yields its ``new_database`` function."""
    server = PostgresServer()
    try:
        yield server.new_database
    finally:
        server.stop()
