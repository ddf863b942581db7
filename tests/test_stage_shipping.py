"""A re-ranker's first stage shipped to a worker (executor/stages.py): packed once and byte-stable,
fetched and checked by the worker, refused when anything about it is not the job's.

No Docker here: the stage folders are real (made by ``prepare_stage`` from the Touché sample
and its BM25 reference run); the runs on real workers are in tests/test_distributed_demo.py.
"""

from __future__ import annotations

import hashlib
import io
import os
import tarfile
from dataclasses import replace
from pathlib import Path

import pytest

from sharedtask.errors import SharedTaskError
from sharedtask.executor.admission import JobRefused, admit
from sharedtask.executor.job import DatasetRef, Job
from sharedtask.executor.stages import STAGE_FILES, fetch_stage, pack_stage, parse_source, stage_source_for
from sharedtask.rerank import prepare_stage
from sharedtask.spec import load_task

REPO = Path(__file__).resolve().parent.parent
TASK = "touche-2021-task1"
SAMPLE = load_task(TASK).sample_dir / "input"
FIRST = REPO / "baselines" / "reference-runs" / TASK / "lucene-bm25.txt"


@pytest.fixture(scope="module")
def stage(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("stage") / "stage"
    prepare_stage(load_task(TASK), SAMPLE, FIRST, folder)
    return folder


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def job_for(stage: Path, source: str | None) -> Job:
    return Job(task=TASK, software="r", image="x:1", image_id="sha256:" + "a" * 64, command="true",
               dataset=DatasetRef(f"{TASK}/sample", {"topics.xml": "b" * 64}),
               stage={"software": "bm25", "job": "job-" + "0" * 24, "sha256": sha(stage / "rerank.jsonl.gz")},
               stage_source=source)


def test_a_stage_is_packed_once_byte_stable_and_named_by_its_candidates(stage: Path, tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    copy.mkdir()
    for name in STAGE_FILES:
        (copy / name).write_bytes((stage / name).read_bytes())
        os.utime(copy / name, (1, 1))  # other times, other owner: the same archive
    first, digest = pack_stage(stage, tmp_path / "a")
    second, again = pack_stage(copy, tmp_path / "b")
    assert first.name == second.name == f"stage-{sha(stage / 'rerank.jsonl.gz')}.tar"
    assert digest == again == sha(first) and first.read_bytes() == second.read_bytes()
    with tarfile.open(first) as tar:
        assert [(m.name, m.isreg(), m.mtime) for m in tar] == [(n, True, 0) for n in STAGE_FILES]
    # a file already at that name is not sent as found (issue 39): written again, hashed as written
    first.write_bytes(b"planted by someone else")
    assert pack_stage(stage, tmp_path / "a") == (first, digest) and sha(first) == digest
    assert [p.name for p in (tmp_path / "a").iterdir()] == [first.name]  # no .part left
    source = stage_source_for(tmp_path / "c", "http://organizer.invalid/images/")
    assert source is not None
    assert source(stage) == (f"archive:http://organizer.invalid/images/{first.name}#sha256={digest}"
                             f"&run={sha(stage / 'run.txt')}")
    assert stage_source_for(None) is None


def test_a_worker_fetches_a_stage_once_and_keeps_it(stage: Path, tmp_path: Path) -> None:
    source = stage_source_for(tmp_path / "shipped")
    assert source is not None
    job = job_for(stage, source(stage))
    got = fetch_stage(job, tmp_path / "cache")
    assert got == tmp_path / "cache" / job.stage["sha256"]
    assert sorted(p.name for p in got.iterdir()) == sorted(STAGE_FILES)
    for name in STAGE_FILES:
        assert (got / name).read_bytes() == (stage / name).read_bytes()
    archive = Path(parse_source(job.stage_source)[0])
    archive.unlink()  # kept: the next re-ranker of this stage on this worker needs no archive
    assert fetch_stage(job, tmp_path / "cache") == got
    assert [p.name for p in (tmp_path / "cache").iterdir()] == [got.name]  # no half-made folder left


def _archive(tmp_path: Path, members: list[tuple[tarfile.TarInfo, bytes | None]]) -> tuple[Path, str]:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for info, data in members:
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    path = tmp_path / "evil.tar"
    path.write_bytes(buffer.getvalue())
    return path, hashlib.sha256(buffer.getvalue()).hexdigest()


def _file(name: str, data: bytes) -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    return info, data


def _link(name: str, target: str) -> tuple[tarfile.TarInfo, None]:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = tarfile.SYMTYPE, target
    return info, None


def _sparse_archive(tmp_path: Path, candidates: bytes) -> tuple[Path, str]:
    """A GNU tar (the real tool) of a 2 GiB sparse run.txt: a few KB of archive (issue 39)."""
    import subprocess

    src = tmp_path / "sparse-src"
    src.mkdir()
    with open(src / "run.txt", "wb") as fh:
        fh.truncate(2 << 30)
    (src / "rerank.jsonl.gz").write_bytes(candidates)
    path = tmp_path / "sparse.tar"
    subprocess.run(["tar", "--sparse", "--format=gnu", "-cf", str(path), "-C", str(src), "run.txt",
                    "rerank.jsonl.gz"], check=True)
    assert path.stat().st_size < 1 << 20
    return path, sha(path)


@pytest.mark.parametrize("kind, message", [
    ("extra", "holds 'notes.txt'"),
    ("link", "holds 'run.txt'"),
    ("escape", "holds '../run.txt'"),
    ("missing", "lacks"),
    ("twice", "holds 'run.txt'"),
    ("other candidates", "other files than the published stage's"),
    ("other run", "other files than the published stage's"),
    ("sparse", "holds the sparse file 'run.txt'"),
    ("expanded", "expands to more than"),
])
def test_a_worker_refuses_a_stage_archive_that_is_not_the_jobs(stage: Path, tmp_path: Path, kind: str,
                                                               message: str, monkeypatch) -> None:
    run, candidates = (stage / "run.txt").read_bytes(), (stage / "rerank.jsonl.gz").read_bytes()
    members = {
        "extra": [_file("run.txt", run), _file("rerank.jsonl.gz", candidates), _file("notes.txt", b"x")],
        "link": [_link("run.txt", "/etc/passwd"), _file("rerank.jsonl.gz", candidates)],
        "escape": [_file("../run.txt", run), _file("rerank.jsonl.gz", candidates)],
        "missing": [_file("rerank.jsonl.gz", candidates)],
        "twice": [_file("run.txt", run), _file("run.txt", run), _file("rerank.jsonl.gz", candidates)],
        "other candidates": [_file("run.txt", run), _file("rerank.jsonl.gz", candidates + b"\n")],
        # the right candidates and any run file: refused by the run's sha256, which the source names
        "other run": [_file("run.txt", run.replace(b"Q0", b"Q1", 1)), _file("rerank.jsonl.gz", candidates)],
        "sparse": None,
        "expanded": [_file("run.txt", run), _file("rerank.jsonl.gz", candidates)],
    }[kind]
    if kind == "sparse":
        path, digest = _sparse_archive(tmp_path, candidates)
    else:
        path, digest = _archive(tmp_path, members)
    if kind == "expanded":
        monkeypatch.setattr("sharedtask.executor.stages.MAX_STAGE_EXPANDED", len(run) + len(candidates) - 1)
    job = job_for(stage, f"archive:{path}#sha256={digest}&run={sha(stage / 'run.txt')}")
    with pytest.raises(SharedTaskError, match=message):
        fetch_stage(job, tmp_path / "cache")
    assert not (tmp_path / "cache").exists() or list((tmp_path / "cache").iterdir()) == []
    assert not (tmp_path.parent / "run.txt").exists()
    written = sum(p.stat().st_blocks * 512 for p in (tmp_path / "cache").rglob("*") if p.is_file()) \
        if (tmp_path / "cache").exists() else 0
    assert written == 0  # nothing of it stayed on the worker's disk


def test_a_worker_checks_the_archive_before_reading_it(stage: Path, tmp_path: Path) -> None:
    path, digest = pack_stage(stage, tmp_path / "shipped")
    with pytest.raises(SharedTaskError, match="not the one the job names"):
        fetch_stage(job_for(stage, f"archive:{path}#sha256={'0' * 64}"), tmp_path / "cache")
    with pytest.raises(SharedTaskError, match="could not be read on this worker"):
        fetch_stage(job_for(stage, f"archive:{tmp_path / 'nowhere.tar'}#sha256={digest}"), tmp_path / "cache")


def test_admission_takes_a_stage_only_with_a_source(stage: Path, tmp_path: Path) -> None:
    _, digest = pack_stage(stage, tmp_path)
    job = job_for(stage, f"archive:/srv/images/x.tar#sha256={digest}")
    assert admit(job.to_json()) == job
    assert job.id == replace(job, stage_source=None).id  # where a stage lies is not what the run computes
    plain = replace(job, stage=None, stage_source=None)
    assert "stage_source" not in plain.to_json()  # first stages' payloads as before
    for raw, field in [
        ({**job.to_json(), "stage_source": None, "id": None}, "job field stage"),
        ({**plain.to_json(), "stage_source": job.stage_source, "id": None}, "job field stage_source"),
        ({**job.to_json(), "stage_source": "archive:/x.tar", "id": None}, "job field stage_source"),
        ({**job.to_json(), "stage": {**job.stage, "path": "/etc"}, "id": None}, "job field stage"),
        ({**job.to_json(), "stage": {**job.stage, "sha256": "../x"}, "id": None}, "job field stage.sha256"),
    ]:
        with pytest.raises(JobRefused, match=field):
            admit(raw)


def test_a_worker_fetches_stages_only_from_its_images_server_with_its_token(stage: Path, tmp_path: Path) -> None:
    """Issue 39: the images URL served a hidden stage to anyone who read its sha256 on the public
    API; a job could name any URL. A real images server (sharedtask.executor.images_server)."""
    import secrets
    import urllib.error
    import urllib.request

    from sharedtask.executor.fetch import Origin
    from sharedtask.executor.images_server import serve_in_thread

    token = secrets.token_urlsafe(24)
    shipped = tmp_path / "shipped"
    server = serve_in_thread(shipped, token) if shipped.mkdir() is None else None
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/"
        source = stage_source_for(shipped, url)(stage)
        name = parse_source(source)[0].rsplit("/", 1)[1]
        for headers in ({}, {"Authorization": "Bearer " + token[:-1] + "x"}):  # anyone, or a wrong token
            with pytest.raises(urllib.error.HTTPError) as refused:
                urllib.request.urlopen(urllib.request.Request(url + name, headers=headers), timeout=30)
            assert refused.value.code == 401
        with pytest.raises(urllib.error.HTTPError) as other:  # only the coordinator's names, only in DIR
            urllib.request.urlopen(urllib.request.Request(url + "../etc/passwd",
                                                          headers={"Authorization": f"Bearer {token}"}), timeout=30)
        assert other.value.code == 404
        job = job_for(stage, source)
        with pytest.raises(SharedTaskError, match="not on this worker's images server"):
            fetch_stage(job, tmp_path / "cache")  # no --images-url: no network fetch at all
        with pytest.raises(SharedTaskError, match="not on this worker's images server"):
            fetch_stage(job, tmp_path / "cache", Origin("http://127.0.0.1:1/", token))  # another server
        with pytest.raises(SharedTaskError, match="401"):
            fetch_stage(job, tmp_path / "cache", Origin(url, None))  # the right server, no token
        got = fetch_stage(job, tmp_path / "cache", Origin(url, token))
        assert (got / "run.txt").read_bytes() == (stage / "run.txt").read_bytes()
    finally:
        server.shutdown()
        server.server_close()


def test_an_archive_is_read_to_disk_and_no_further_than_its_bound(tmp_path: Path) -> None:
    """Issue 39: an image URL was read whole into memory. fetch_to streams a MiB at a time and
    stops at the bound; the sha256 it returns is the bytes' (computed here by hashlib)."""
    import tracemalloc

    from sharedtask.executor.fetch import Origin, fetch_to

    big = tmp_path / "big.tar"
    big.write_bytes(os.urandom(1 << 20) * 24)  # 24 MiB
    tracemalloc.start()
    digest = fetch_to(str(big), tmp_path / "copy.tar", 64 << 20, Origin(), "image archive")
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert digest == sha(big) and (tmp_path / "copy.tar").read_bytes() == big.read_bytes()
    assert peak < 8 << 20  # a few chunks, not the 24 MiB file
    with pytest.raises(SharedTaskError, match="is over 4194304 bytes"):
        fetch_to(str(big), tmp_path / "cut.tar", 4 << 20, Origin(), "image archive")
    assert (tmp_path / "cut.tar").stat().st_size <= 4 << 20
