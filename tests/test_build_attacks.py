"""Hostile builds against the organizer's real dockerd (issue 26, docs/threat-model.md "Builds").

Each attack is the issue's: ``ADD http://127.0.0.1:PORT/secret`` against a loopback server
started here, ``COPY --from`` and ``FROM`` of another team's image (a real image holding a
secret), a registry name (a loopback listener that must see no connection), a FIFO and a
link to /dev/zero in the context. Each is refused before dockerd is asked, and the server,
the listener and the images show that nothing was fetched or copied. A legitimate build
still works, and the project's Dockerfiles pass with the hash they always had (no rebuild).
"""

from __future__ import annotations

import http.server
import json
import os
import socket
import threading
import uuid
from pathlib import Path

import pytest
import yaml

from sharedtask.images.context import ContextRefused, read_dockerfile
from sharedtask.images.dockerfile import check
from sharedtask.cli import main
from sharedtask.images.build import BuildRefused, BuildSandbox, build_policy, ensure_image, up_to_date
from sharedtask.manifest import load_manifest

pytestmark = pytest.mark.docker

TASK = "touche-2020-task1"
SECRET = f"SECRET-{uuid.uuid4().hex}"
REPO_NAME = "sharedtask-test/build-attack"


class _Server(http.server.ThreadingHTTPServer):
    hits: list[str]


@pytest.fixture()
def secret_server():
    """A loopback HTTP server that serves the secret and records every request."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            self.server.hits.append(self.path)  # type: ignore[attr-defined]
            body = SECRET.encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = _Server(("127.0.0.1", 0), Handler)
    server.hits = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def victim_image(docker_client, base_image) -> str:
    """Another team's image, holding a private file."""
    tag = f"{REPO_NAME}-victim:{uuid.uuid4().hex[:8]}"
    import io
    import tarfile

    dockerfile = f"FROM {base_image}\nRUN echo {SECRET} > /private.txt\n".encode()
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        info = tarfile.TarInfo("Dockerfile")
        info.size = len(dockerfile)
        tar.addfile(info, io.BytesIO(dockerfile))
    buf.seek(0)
    docker_client.images.build(fileobj=buf, custom_context=True, tag=tag, rm=True, forcerm=True)
    yield tag
    docker_client.images.remove(tag, force=True)


def _context(tmp_path: Path, dockerfile: str) -> Path:
    ctx = tmp_path / "ctx"
    ctx.mkdir(exist_ok=True)
    (ctx / "Dockerfile").write_text(dockerfile)
    return ctx


def _tag() -> str:
    return f"{REPO_NAME}:{uuid.uuid4().hex[:8]}"


def _refused(ctx: Path, tag: str, code: str, line: int) -> BuildRefused:
    with pytest.raises(BuildRefused) as info:
        ensure_image(ctx, tag, sandbox=BuildSandbox())
    assert [(f.code, f.line) for f in info.value.findings] == [(code, line)]
    return info.value


def test_add_of_a_loopback_url_is_refused_and_fetches_nothing(docker_client, base_image, tmp_path, secret_server):
    url = f"http://127.0.0.1:{secret_server.server_port}/secret"
    import urllib.request

    assert urllib.request.urlopen(url).read() == SECRET.encode()  # the server answers: an attacker gets it
    secret_server.hits.clear()
    tag = _tag()
    ctx = _context(tmp_path, f"ARG BASE_IMAGE\nFROM ${{BASE_IMAGE}}\nADD {url} /stolen\n")
    error = _refused(ctx, tag, "BUILD-ADD-URL", 3)
    assert "refused" in str(error) and "Dockerfile:3" in str(error) and "COPY" in (error.hint or "")
    (ctx / "Dockerfile").write_text(f"ARG BASE_IMAGE\nFROM ${{BASE_IMAGE}}\nARG U={url}\nADD ${{U}} /stolen\n")
    _refused(ctx, tag, "BUILD-UNSUPPORTED", 4)
    assert secret_server.hits == []
    assert not docker_client.images.list(name=tag)


def test_copy_from_and_from_another_teams_image_are_refused(docker_client, base_image, tmp_path, victim_image):
    tag = _tag()
    ctx = _context(tmp_path, f"ARG BASE_IMAGE\nFROM ${{BASE_IMAGE}}\nCOPY --from={victim_image} /private.txt /s\n")
    error = _refused(ctx, tag, "BUILD-COPY-FROM", 3)
    assert base_image in str(error)  # says what is allowed
    (ctx / "Dockerfile").write_text(f"FROM {victim_image} AS loot\nFROM {base_image}\nCOPY --from=loot /private.txt /s\n")
    _refused(ctx, tag, "BUILD-FROM", 1)
    (ctx / "Dockerfile").write_text(f"ARG PARENT\nFROM ${{PARENT}}\n")  # a build arg naming the victim
    with pytest.raises(BuildRefused, match="BUILD-FROM"):
        ensure_image(ctx, tag, build_args={"PARENT": victim_image}, sandbox=BuildSandbox())
    assert not docker_client.images.list(name=tag)


def test_a_registry_name_reaches_no_host(docker_client, base_image, tmp_path):
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    listener.setblocking(False)
    port = listener.getsockname()[1]
    try:
        ctx = _context(tmp_path, f"FROM 127.0.0.1:{port}/team/image:1\n")
        error = _refused(ctx, _tag(), "BUILD-REGISTRY", 1)
        assert "only local images" in str(error)
        (ctx / "Dockerfile").write_text(f"FROM {base_image}\nCOPY --from=localhost:{port}/x /a /b\n")
        _refused(ctx, _tag(), "BUILD-REGISTRY", 2)
        with pytest.raises(BlockingIOError):
            listener.accept()  # nobody connected: the build was refused before dockerd saw it
    finally:
        listener.close()


def _in_thread(fn) -> BaseException | None:
    """Run ``fn`` in a thread; its exception. The join's bound only catches the old unbounded hang."""
    caught: list[BaseException] = []

    def body() -> None:
        try:
            fn()
        except BaseException as exc:  # noqa: BLE001 - handed back to the test
            caught.append(exc)

    thread = threading.Thread(target=body, daemon=True)
    thread.start()
    thread.join(600)
    assert not thread.is_alive(), "the build hung (before: for ever on a FIFO)"
    return caught[0] if caught else None


def test_a_fifo_and_a_dev_zero_link_in_the_context_are_refused(docker_client, base_image, tmp_path):
    ctx = _context(tmp_path, "ARG BASE_IMAGE\nFROM ${BASE_IMAGE}\nCOPY . /ctx\n")
    os.mkfifo(ctx / "pipe")
    error = _in_thread(lambda: ensure_image(ctx, _tag(), sandbox=BuildSandbox()))
    assert isinstance(error, ContextRefused) and "is a FIFO" in str(error)
    (ctx / "pipe").unlink()
    (ctx / "zero").symlink_to("/dev/zero")
    error = _in_thread(lambda: ensure_image(ctx, _tag(), sandbox=BuildSandbox()))
    assert isinstance(error, ContextRefused) and "outside the build context" in str(error)


def test_a_fifo_in_a_submission_no_longer_hangs_demo(docker_client, base_image, tmp_path):
    ctx = _context(tmp_path, "ARG BASE_IMAGE\nFROM ${BASE_IMAGE}\nCOPY . /ctx\n")
    os.mkfifo(ctx / "pipe")
    subs = tmp_path / "submissions.yml"
    subs.write_text(yaml.safe_dump({"version": 1, "submissions": {"fifo": {
        "build": str(ctx), "image": _tag(), "command": "true", "tasks": [TASK]}}}))
    out = tmp_path / "demo"
    result: list[int] = []
    error = _in_thread(lambda: result.append(main(["demo", "--task", TASK, "--submissions", str(subs),
                                                   "--no-baselines", "--output", str(out)])))
    assert error is None and result == [1]
    board = json.loads((out / TASK / "leaderboard.json").read_text())
    (row,) = board["not_scored"]
    assert row["run"] == "fifo" and "is a FIFO" in row["reason"]


def test_a_legitimate_build_works_and_sees_only_its_context(docker_client, base_image, tmp_path):
    ctx = _context(tmp_path, "ARG BASE_IMAGE\nFROM ${BASE_IMAGE} AS build\nCOPY app /app\n"
                             "RUN cat /app/a.txt /app/link.txt > /app/both.txt\n"
                             "FROM ${BASE_IMAGE}\nCOPY --from=build /app /app\n")
    (ctx / "app").mkdir()
    (ctx / "app" / "a.txt").write_text("hello\n")
    (ctx / "app" / "link.txt").symlink_to("a.txt")
    (ctx / "app" / "ignored.txt").write_text("x")
    (ctx / ".dockerignore").write_text("app/ignored.txt\n")
    tag = _tag()
    try:
        image_id, built = ensure_image(ctx, tag, sandbox=BuildSandbox())
        assert built
        listing = docker_client.containers.run(tag, "sh -c 'cat /app/both.txt; ls /app'", remove=True,
                                               network_mode="none").decode()
        assert listing.split() == ["hello", "hello", "a.txt", "both.txt", "link.txt"]
        assert ensure_image(ctx, tag, sandbox=BuildSandbox()) == (image_id, False)  # up to date: no rebuild
    finally:
        for image in docker_client.images.list(name=tag):
            docker_client.images.remove(image.id, force=True)


def _old_context_hash(context: Path, extra: str) -> str:
    """The hash images had before issue 26 (os.walk + read_bytes), kept here as the reference."""
    import hashlib

    skip = {".git", "__pycache__", ".pytest_cache", ".hypothesis", ".venv", "node_modules", "sharedtask-runs",
            "sharedtask-report", "tests", "benchmarks"}
    digest = hashlib.sha256(extra.encode())
    for root, dirs, files in os.walk(context):
        dirs[:] = sorted(d for d in dirs if d not in skip)
        for name in sorted(files):
            if not name.endswith((".pyc", ".pyo")):
                path = Path(root, name)
                digest.update(str(path.relative_to(context)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:24]


def test_the_baseline_builds_still_pass_and_keep_their_hash(docker_client, base_image):
    """Every baseline's (and the evaluator's) Dockerfile passes the check, and its context hashes as
    before this change, so an image that was up to date stays so (no rebuild caused by the change).
    Checked without building: the baseline images are shared by every session on this daemon."""
    from sharedtask.images.context import collect

    manifest = load_manifest()
    for sw in (*manifest.baselines, manifest.evaluator):
        name = sw.dockerfile or "Dockerfile"
        findings = check(read_dockerfile(sw.build, name), build_policy(), {"BASE_IMAGE": base_image, **sw.build_args})
        assert findings == [], sw.name
        collected = collect(sw.build, dockerfile=name, extra="parents")
        collected.archive.close()
        assert collected.digest == _old_context_hash(sw.build, "parents"), sw.name


def test_up_to_date_follows_the_context(docker_client, base_image, tmp_path):
    """images.up_to_date: what `demo` would decide, without building."""
    from sharedtask.manifest import Software

    ctx = _context(tmp_path, "ARG BASE_IMAGE\nFROM ${BASE_IMAGE}\nCOPY a.txt /a.txt\n")
    (ctx / "a.txt").write_text("one\n")
    sw = Software(name="t", image=_tag(), kind="submission", build=ctx)
    try:
        assert not up_to_date(sw, docker_client)  # not built yet
        ensure_image(ctx, sw.image, sandbox=BuildSandbox())
        assert up_to_date(sw, docker_client)
        (ctx / "a.txt").write_text("two\n")
        assert not up_to_date(sw, docker_client)
    finally:
        for image in docker_client.images.list(name=sw.image):
            docker_client.images.remove(image.id, force=True)


def test_a_submission_cannot_take_the_name_of_a_base_image(docker_client, base_image, tmp_path):
    """Built under the base's tag, a team's image would become every later build's FROM."""
    from sharedtask.images.build import ensure_software_image
    from sharedtask.manifest import Software

    ctx = _context(tmp_path, "ARG BASE_IMAGE\nFROM ${BASE_IMAGE}\nRUN echo mine > /owned\n")
    before = docker_client.images.get(base_image).id
    sw = Software(name="hijack", image=base_image, kind="submission", build=ctx)
    with pytest.raises(BuildRefused) as info:
        ensure_software_image(sw)
    assert [f.code for f in info.value.findings] == ["BUILD-TAG"] and "one of the organizer's base images" in str(info.value)
    assert docker_client.images.get(base_image).id == before
