"""Real parts for the distributed tests: a redis-server on a free loopback port, `sharedtask worker`
processes, and a 2 MB image (busybox-static) that sleeps and writes a reference run.

Nothing here touches any address but 127.0.0.1 and the ports it picked itself.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent
TASK = "touche-2021-task1"
REFERENCE = REPO / "baselines" / "reference-runs" / TASK / "lucene-bm25.txt"
BUSYBOX = Path("/usr/bin/busybox")


def ensure_installed(binary: str, package: str) -> str | None:
    """The binary's path; installs the Debian package when it is missing and we are root (idempotent)."""
    found = shutil.which(binary)
    if found is None and os.geteuid() == 0 and shutil.which("apt-get"):
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        subprocess.run(["apt-get", "install", "-y", "-qq", package], env=env, capture_output=True, check=False)
        found = shutil.which(binary)
    return found


def _unavailable(reason: str) -> None:
    """Skip on a developer's machine, fail in CI (as tests/conftest.py does for Docker)."""
    if os.environ.get("CI"):
        pytest.fail(f"CI must run the compute-worker tests, but {reason}")
    pytest.skip(reason)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for(predicate: Any, limit: float = 60.0, step: float = 0.1, what: str | None = None) -> Any:
    """Poll until ``predicate()`` is truthy and return its value; fail after ``limit`` s (a hang
    bound, not a speed test), saying ``what`` did not happen."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(step)
    raise AssertionError(f"{what or predicate} did not happen within {limit} s")


class RedisServer:
    """redis-server on 127.0.0.1:<free port>, append-only file on, so a restart keeps the queue."""

    def __init__(self, binary: str, folder: Path, *, password: str | None = None, tls: Path | None = None) -> None:
        self.binary, self.folder, self.port = binary, folder, free_port()
        self.password, self.tls = password, tls  # tls: a folder with ca.crt, redis.crt, redis.key
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        auth = f":{self.password}@" if self.password else ""
        if self.tls is None:
            return f"redis://{auth}127.0.0.1:{self.port}/0"
        return f"rediss://{auth}127.0.0.1:{self.port}/0?ssl_cert_reqs=required&ssl_ca_certs={self.tls / 'ca.crt'}"

    def start(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        log = open(self.folder / "redis.log", "ab")
        args = [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.folder),
                "--appendonly", "yes", "--appendfsync", "always", "--save", "", "--protected-mode", "yes"]
        if self.password:
            args += ["--requirepass", self.password]
        if self.tls is not None:
            args[1:3] = ["--port", "0", "--tls-port", str(self.port)]
            args += ["--tls-cert-file", str(self.tls / "redis.crt"), "--tls-key-file", str(self.tls / "redis.key"),
                     "--tls-ca-cert-file", str(self.tls / "ca.crt"), "--tls-auth-clients", "no"]
        self.proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)
        import redis

        client = redis.Redis.from_url(self.url)
        wait_for(lambda: _pings(client), 30)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(30)

    def restart(self) -> None:
        self.stop()
        self.start()


def job_for(docker_client: Any, image: str, command: str, **options: Any) -> Any:
    """A job of the tiny image on the task's bundled sample, named by content."""
    from sharedtask.executor import DatasetRef, Job
    from sharedtask.executor.datasets import file_digests
    from sharedtask.spec import load_task

    inp = load_task(TASK).sample_dir / "input"
    return Job(task=TASK, software="tiny", image=image, image_id=docker_client.images.get(image).id,
               command=command, dataset=DatasetRef(f"sample/{TASK}", file_digests(inp)), options=options)


def make_tls(folder: Path) -> Path:
    """A throw-away CA and a server certificate for 127.0.0.1 (openssl), as an organizer would make them."""
    folder.mkdir(parents=True, exist_ok=True)

    def ssl(*args: str) -> None:
        subprocess.run(["openssl", *args], cwd=folder, check=True, capture_output=True)

    ssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=sharedtask test CA",
        "-keyout", "ca.key", "-out", "ca.crt")
    ssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1", "-keyout", "redis.key", "-out", "redis.csr")
    (folder / "san.ext").write_text("subjectAltName=IP:127.0.0.1\n")
    ssl("x509", "-req", "-in", "redis.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial", "-days", "2",
        "-extfile", "san.ext", "-out", "redis.crt")
    return folder


def _pings(client: Any) -> bool:
    try:
        return bool(client.ping())
    except Exception:  # noqa: BLE001 - not up yet
        return False


class Worker:
    """A `sharedtask worker` subprocess."""

    def __init__(self, broker: str, name: str, folder: Path, *, concurrency: int = 1,
                 visibility: float = 4.0, data_root: Path | None = None, work_dir: Path | None = None,
                 env: dict[str, str] | None = None) -> None:
        self.name = name
        self.log_path = folder / f"{name}.log"
        self.work_dir = work_dir or folder / f"{name}-work"
        args = [sys.executable, "-m", "sharedtask", "worker", "--broker", broker, "--name", name,
                "--concurrency", str(concurrency), "--visibility-timeout", str(visibility),
                "--work-dir", str(self.work_dir), "--loglevel", "INFO"]
        if data_root is not None:
            args += ["--data-root", str(data_root)]
        self.proc = subprocess.Popen(args, stdout=open(self.log_path, "wb"), stderr=subprocess.STDOUT,
                                     cwd=str(folder), env={**os.environ, **(env or {})})
        wait_for(lambda: self.proc.poll() is not None or f"@{name} ready" in self.log(), 60)
        assert self.proc.poll() is None, f"worker {name} did not start:\n{self.log()}"

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def events(self, event: str | None = None) -> list[dict[str, str]]:
        """The worker's event lines (sharedtask.executor.events), parsed: never its prose."""
        from sharedtask.executor.events import events

        return events(self.log(), event)

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(30)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.kill()


def build_tiny_image(client: Any, folder: Path, run_file: Path | None = None) -> str:
    """A ~2 MB image: busybox-static as /bin/sh and friends, a unique marker, and the run file as /run.txt."""
    root = folder / "rootfs"
    (root / "bin").mkdir(parents=True)
    (root / "tmp").mkdir()
    shutil.copy2(BUSYBOX, root / "bin" / "busybox")
    for name in ("sh", "sleep", "cp", "cat", "echo", "ls"):
        (root / "bin" / name).symlink_to("busybox")
    (root / "marker").write_text(uuid.uuid4().hex)
    if run_file is not None:
        shutil.copy2(run_file, root / "run.txt")
    archive = folder / "rootfs.tar"
    with tarfile.open(archive, "w") as tar:
        tar.add(root, arcname=".")
    tag = f"sharedtask-test/tiny:{uuid.uuid4().hex[:10]}"
    with open(archive, "rb") as fh:
        client.api.import_image_from_data(fh.read(), repository=tag.split(":")[0], tag=tag.split(":")[1],
                                          changes=["ENV PATH=/bin"])
    return tag


# ----------------------------------------------------------------------------- fixtures

@pytest.fixture(scope="module")
def redis_binary() -> str:
    found = ensure_installed("redis-server", "redis-server")
    if found is None:
        _unavailable("redis-server is not installed (apt-get install redis-server)")
    return found


@pytest.fixture()
def broker(redis_binary, tmp_path):
    server = RedisServer(redis_binary, tmp_path / "redis")
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def tiny_image(docker_client, tmp_path_factory) -> str:
    if not BUSYBOX.is_file() and ensure_installed("busybox", "busybox-static") is None:
        _unavailable("busybox-static is not installed (apt-get install busybox-static)")
    tag = build_tiny_image(docker_client, tmp_path_factory.mktemp("tiny"), REFERENCE)
    yield tag
    docker_client.images.remove(tag, force=True)


@pytest.fixture()
def workers(tmp_path):
    started: list[Worker] = []

    def start(broker: RedisServer, name: str, **kw) -> Worker:
        worker = Worker(broker.url, name, tmp_path, **kw)
        started.append(worker)
        return worker

    yield start
    for worker in started:
        worker.stop()
