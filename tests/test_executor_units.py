"""The executor's parts that need no daemon: job identity, the output archive, dataset checks, CLI errors."""

from __future__ import annotations

import base64
import io
import os
import tarfile
from pathlib import Path

import pytest

from sharedtask.cli import main
from sharedtask.errors import SharedTaskError
from sharedtask.executor import DatasetRef, Job, JobResult
from sharedtask.executor.base import landed, write_result
from sharedtask.executor.datasets import check, file_digests, locate
from sharedtask.executor.remote import redacted_url
from sharedtask.executor.transfer import LandingRefused, land, pack

JOB = Job(task="touche-2021-task1", software="team-a", image="team-a/run:1", image_id="sha256:" + "a" * 64,
          command="python /app/run.py", dataset=DatasetRef("sample/touche-2021-task1", {"topics.xml": "0" * 64}))


def test_a_job_id_names_its_content_and_survives_json():
    assert Job.from_json(JOB.to_json()) == JOB
    assert Job.from_json(JOB.to_json()).id == JOB.id
    assert Job(**{**JOB.__dict__, "image_id": "sha256:" + "b" * 64}).id != JOB.id  # ... the image id is
    changed = DatasetRef(JOB.dataset.id, {"topics.xml": "1" * 64})
    assert Job(**{**JOB.__dict__, "dataset": changed}).id != JOB.id
    assert Job(**{**JOB.__dict__, "options": {"timeout": 5}}).id != JOB.id
    tampered = {**JOB.to_json(), "id": "job-000"}
    with pytest.raises(ValueError, match="does not match"):
        Job.from_json(tampered)


def test_the_image_tag_is_part_of_the_identity_only_through_its_id():
    # Two tags of one image are one job: the id, not the name, decides what runs.
    assert Job(**{**JOB.__dict__, "image": "other/tag:2"}).id == JOB.id


def _tree(root: Path) -> dict[str, bytes | str]:
    out: dict[str, bytes | str] = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        out[rel] = f"-> {os.readlink(path)}" if path.is_symlink() else (path.read_bytes() if path.is_file() else "dir")
    return out


def test_a_run_folder_travels_whole_and_lands_in_one_rename(tmp_path):
    src = tmp_path / "src"
    (src / "output" / "deep").mkdir(parents=True)
    (src / "output" / "run.txt").write_bytes(b"1 Q0 d1 1 1.0 t\n")
    (src / "output" / "deep" / "x.bin").write_bytes(os.urandom(3000))
    (src / "stdout.log").write_text("hello\n")
    os.mkfifo(src / "output" / "fifo")  # a container can leave one: it is not sent
    archive, digest = pack(src)
    dest = tmp_path / "runs" / "team-a"
    dest.mkdir(parents=True)
    (dest / "old.txt").write_text("a previous run")
    land(archive, digest, dest, extra={"job-result.json": "{}"})
    expected = {k: v for k, v in _tree(src).items() if k != "output/fifo"}
    assert _tree(dest) == {**expected, "job-result.json": b"{}"}
    assert [p.name for p in dest.parent.iterdir()] == ["team-a"]  # no staging folder, no old run
    (src / "output" / "link").symlink_to("run.txt")  # even a link inside the folder: the run fails (issue 26)
    archive, digest = pack(src)
    with pytest.raises(LandingRefused, match="'output/link', a symbolic link"):
        land(archive, digest, dest)
    assert _tree(dest) == {**expected, "job-result.json": b"{}"}  # the previous landing stays as it was


def test_a_damaged_archive_is_refused_before_a_byte_lands(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "run.txt").write_text("x\n")
    archive, digest = pack(src)
    raw = bytearray(base64.b64decode(archive))
    raw[-5] ^= 0xFF
    with pytest.raises(SharedTaskError, match="arrived damaged"):
        land(base64.b64encode(bytes(raw)).decode(), digest, tmp_path / "dest")
    assert not (tmp_path / "dest").exists()


def test_an_archive_that_escapes_its_folder_is_refused_and_nothing_stays(tmp_path):
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        info = tarfile.TarInfo("output/evil")
        info.type, info.linkname = tarfile.SYMTYPE, "/etc/passwd"
        tar.addfile(info)
    data = buffer.getvalue()
    import hashlib

    with pytest.raises(LandingRefused, match="output/evil.*symbolic link to '/etc/passwd'"):
        land(base64.b64encode(data).decode(), hashlib.sha256(data).hexdigest(), tmp_path / "runs" / "x")
    assert list((tmp_path / "runs").iterdir()) == []


def test_a_landed_result_is_found_again_only_for_the_same_job(tmp_path):
    run_dir = tmp_path / "team-a"
    (run_dir / "output").mkdir(parents=True)
    result = JobResult(JOB.id, "done", "success", "exited with code 0", "w1",
                       {"status": "valid", "run_file": str(run_dir / "output" / "run.txt")}, {}, run_dir)
    (run_dir / "job-result.json").write_text(write_result(run_dir, result))
    moved = tmp_path / "elsewhere"
    (run_dir).rename(moved)
    again = landed(moved, JOB)
    assert again is not None and again.validation["run_file"] == str(moved / "output" / "run.txt")
    assert landed(moved, Job(**{**JOB.__dict__, "command": "other"})) is None


def test_a_worker_checks_its_copy_of_the_dataset(tmp_path):
    organizer = tmp_path / "organizer" / "input"
    (organizer / "sub").mkdir(parents=True)
    (organizer / "topics.xml").write_text("<topics/>")
    (organizer / "sub" / "corpus.jsonl").write_text('{"id": 1}\n')
    ref = DatasetRef("lab/official", file_digests(organizer))
    assert sorted(ref.sha256) == ["sub/corpus.jsonl", "topics.xml"]
    import hashlib

    assert ref.sha256["topics.xml"] == hashlib.sha256(b"<topics/>").hexdigest()

    root = tmp_path / "worker"
    with pytest.raises(SharedTaskError, match="not on this worker"):
        locate(ref, root)
    import shutil

    copy = root / "lab" / "official" / "input"
    shutil.copytree(organizer, copy)
    assert locate(ref, root) == copy
    check(ref, copy)  # the same bytes: accepted
    (copy / "sub" / "corpus.jsonl").write_text('{"id": 2}\n')
    with pytest.raises(SharedTaskError, match=r"sub/corpus.jsonl has sha256 .* organizer's has"):
        check(ref, copy)
    (copy / "sub" / "corpus.jsonl").unlink()
    with pytest.raises(SharedTaskError, match="sub/corpus.jsonl is missing"):
        check(ref, copy)
    shutil.copy2(organizer / "sub" / "corpus.jsonl", copy / "sub" / "corpus.jsonl")
    (copy / "stray.txt").write_text("?")
    with pytest.raises(SharedTaskError, match="1 file.*first stray.txt"):
        check(ref, copy)


def test_a_bundled_sample_is_found_by_its_id():
    from sharedtask.spec import load_task

    task = load_task("touche-2021-task1")
    ref = DatasetRef("sample/touche-2021-task1", file_digests(task.sample_dir / "input"))
    assert locate(ref, None) == task.sample_dir / "input"
    check(ref, locate(ref, None))


def test_a_broker_password_never_reaches_a_message():
    assert redacted_url("redis://:s3cret@broker.lab:6379/0") == "redis://:***@broker.lab:6379/0"
    assert "s3cret" not in redacted_url("amqp://user:s3cret@host//")


@pytest.mark.parametrize("argv, message", [
    (["worker", "--broker", "redis://127.0.0.1:1/0", "--concurrency", "0"], "--concurrency must be at least 1"),
    (["worker", "--broker", "redis://127.0.0.1:1/0", "--data-root", "/nonexistent/x"], "is not a folder"),
    (["demo", "--task", "touche-2021-task1", "--images-dir", "/tmp/x", "--output", "/tmp/never-x"], "need --broker URL"),
    (["demo", "--task", "touche-2021-task1", "--parallel", "0", "--output", "/tmp/never-x"], "--parallel must be"),
])
def test_usage_mistakes_are_one_line_and_exit_2(argv, message, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_an_unreachable_broker_is_one_line():
    from sharedtask.executor.remote import CeleryExecutor

    with pytest.raises(SharedTaskError, match="does not answer"):
        CeleryExecutor("redis://127.0.0.1:1/0")
