"""``sharedtask data fetch`` against a real HTTP server on 127.0.0.1 (never another address)
serving synthetic files: a cut download resumes with a Range request, a wrong checksum or a
truncated archive is refused and leaves nothing half-written, a 404 and a full disk (a real
1 MB tmpfs) give one clear line."""

from __future__ import annotations

import hashlib
import io
import random
import shutil
import subprocess
import threading
import zipfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from sharedtask.cli import main
from sharedtask.data import registry

SIZE = 3_000_000
CUT_AT = 1 << 20


class _Server:
    """Files by name; ``cut`` names are sent only up to CUT_AT on their first request."""

    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}
        self.cut: set[str] = set()
        self.ranges: list[str | None] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:  # keep pytest output clean
                pass

            def do_GET(self) -> None:
                name = self.path.rsplit("/", 1)[-1]
                outer.ranges.append(self.headers.get("Range"))
                if name not in outer.files:
                    self.send_error(404)
                    return
                data = outer.files[name]
                start = 0
                if self.headers.get("Range"):
                    start = int(self.headers["Range"].split("=")[1].split("-")[0])
                    self.send_response(206)
                    self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
                else:
                    self.send_response(200)
                self.send_header("Content-Length", str(len(data) - start))
                self.end_headers()
                if name in outer.cut:
                    outer.cut.discard(name)
                    self.wfile.write(data[start:CUT_AT])
                    self.wfile.flush()
                    self.close_connection = True
                    return
                self.wfile.write(data[start:])

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()


@pytest.fixture
def server():
    s = _Server()
    yield s
    s.httpd.shutdown()
    s.httpd.server_close()


def _bytes(seed: int, n: int = SIZE) -> bytes:
    return random.Random(seed).randbytes(n)


def _zip(member: str, data: bytes) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr(member, data)
    return buf.getvalue()


@pytest.fixture
def catalogue(tmp_path, monkeypatch, repo_root):
    """A copy of tasks/ whose registry gets one test dataset per test (written by ``declare``)."""
    tasks = tmp_path / "tasks"
    shutil.copytree(repo_root / "tasks", tasks)
    monkeypatch.setenv("SHAREDTASK_TASKS", str(tasks))
    monkeypatch.setenv("SHAREDTASK_DATA", str(tmp_path / "store"))
    registry.all_datasets.cache_clear()

    def declare(files: list[str]) -> None:
        body = "\n".join(f"      - {f}" for f in files)
        (tasks / "datasets" / "zz-test.yml").write_text(
            "version: 1\ndatasets:\n  touche-2020-task1/loopback:\n    task: touche-2020-task1\n"
            f"    title: synthetic files from a loopback server\n    files:\n{body}\n")
        registry.all_datasets.cache_clear()

    yield declare
    registry.all_datasets.cache_clear()


def _entry(server: _Server, name: str, data: bytes, *, path: str = "debatewise.json", extract: str | None = None,
           sha256: str | None = None) -> str:
    server.files[name] = data
    digest = sha256 or hashlib.sha256(data).hexdigest()
    extra = f", extract: {extract}" if extract else ""
    return (f"{{path: {path}, role: input, format: argsme-json, url: 'https://example.org/files/{name}', "
            f"size: {len(data)}, sha256: {digest}{extra}}}")


def _leftovers(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.name.endswith(".part"))


def test_a_cut_download_resumes_where_it_stopped(server, catalogue, tmp_path, capsys):
    data = _bytes(1)
    catalogue([_entry(server, "debatewise.bin", data)])
    server.cut.add("debatewise.bin")
    args = ["data", "fetch", "touche-2020-task1/loopback", "--mirror", server.url]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert f"was cut after {CUT_AT:,} of {SIZE:,} bytes" in err and "run the same command again" in err
    assert len(_leftovers(tmp_path / "store")) == 1  # the partial download, kept for the resume
    assert not (tmp_path / "store/datasets/touche-2020-task1/loopback/input/debatewise.json").exists()
    assert main(args) == 0
    assert server.ranges[-1] == f"bytes={CUT_AT}-"  # asked only for the rest
    placed = tmp_path / "store/datasets/touche-2020-task1/loopback/input/debatewise.json"
    assert placed.read_bytes() == data
    assert _leftovers(tmp_path / "store") == []
    assert main(["data", "verify", "touche-2020-task1/loopback"]) == 0


def test_a_wrong_checksum_is_refused_and_nothing_stays(server, catalogue, tmp_path, capsys):
    catalogue([_entry(server, "debatewise.bin", _bytes(2), sha256=hashlib.sha256(b"other").hexdigest())])
    assert main(["data", "fetch", "touche-2020-task1/loopback", "--mirror", server.url]) == 2
    err = capsys.readouterr().err
    assert "sha256 is" in err and "the registry expects" in err and len(err.strip().splitlines()) == 1
    store = tmp_path / "store"
    assert _leftovers(store) == []
    assert not (store / "datasets/touche-2020-task1/loopback/input/debatewise.json").exists()
    assert not (store / "files").exists() or not any((store / "files").rglob("debatewise.json"))


def test_a_zip_is_checked_then_extracted_and_a_truncated_one_refused(server, catalogue, tmp_path, capsys):
    member = _bytes(3, 500_000)
    archive = _zip("debateorg.json", member)
    catalogue([_entry(server, "debateorg.zip", archive, path="debateorg.json", extract="debateorg.json")])
    assert main(["data", "fetch", "touche-2020-task1/loopback", "--mirror", server.url]) == 0
    assert (tmp_path / "store/datasets/touche-2020-task1/loopback/input/debateorg.json").read_bytes() == member
    # a truncated archive whose checksum the registry (wrongly) vouches for: extraction fails cleanly
    shutil.rmtree(tmp_path / "store")
    cut = archive[: len(archive) // 2]
    catalogue([_entry(server, "debateorg.zip", cut, path="debateorg.json", extract="debateorg.json")])
    capsys.readouterr()
    assert main(["data", "fetch", "touche-2020-task1/loopback", "--mirror", server.url]) == 2
    assert "truncated or corrupt" in capsys.readouterr().err
    assert _leftovers(tmp_path / "store") == []
    assert not (tmp_path / "store/datasets/touche-2020-task1/loopback/input/debateorg.json").exists()


def test_a_mirror_that_answers_404_is_one_line(server, catalogue, capsys):
    catalogue([_entry(server, "debatewise.bin", b"x")])
    server.files.clear()
    assert main(["data", "fetch", "touche-2020-task1/loopback", "--mirror", server.url]) == 2
    err = capsys.readouterr().err.strip()
    assert "answered HTTP 404" in err and len(err.splitlines()) == 1


def test_a_full_disk_is_one_line_and_leaves_nothing(server, catalogue, tmp_path, monkeypatch, capsys):
    small = tmp_path / "small"
    small.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(small)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a 1 MB tmpfs here (needs root): {mounted.stderr.decode().strip()}")
    try:
        monkeypatch.setenv("SHAREDTASK_DATA", str(small / "store"))
        catalogue([_entry(server, "debatewise.bin", _bytes(4))])
        monkeypatch.setenv("SHAREDTASK_DATA", str(small / "store"))
        assert main(["data", "fetch", "touche-2020-task1/loopback", "--mirror", server.url]) == 2
        err = capsys.readouterr().err.strip()
        assert "no space left" in err and f"{SIZE:,} bytes needed" in err and len(err.splitlines()) == 1
        assert _leftovers(small) == []
    finally:
        subprocess.run(["umount", str(small)], check=True)
