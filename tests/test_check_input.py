"""check-input: the bundled samples pass; missing, truncated and malformed files fail clearly."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from sharedtask.cli import main
from sharedtask.data.inputcheck import check_input
from sharedtask.spec import all_tasks, load_task


@pytest.mark.parametrize("task", all_tasks(), ids=lambda t: t.id)
def test_bundled_samples_satisfy_their_contract(task) -> None:
    report = check_input(task, task.sample_dir / "input")
    assert report.valid, [f.message for f in report.findings]
    assert len(report.topics) >= 5
    for check in report.checks:
        if check.entry.required:
            assert check.status == "ok" and check.records > 0


def _copy(task_id: str, tmp_path: Path) -> Path:
    dest = tmp_path / "input"
    shutil.copytree(load_task(task_id).sample_dir / "input", dest)
    return dest


def test_missing_file_is_reported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = _copy("touche-2020-task1", tmp_path)
    (data / "debatewise.json").unlink()
    assert main(["check-input", "--task", "touche-2020-task1", str(data), "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    missing = [f for f in report["findings"] if f["code"] == "INPUT-MISSING"]
    assert len(missing) == 1 and "debatewise.json" in missing[0]["message"]
    assert {f["path"]: f["status"] for f in report["files"]}["debatewise.json"] == "missing"


def test_truncated_json_is_reported_with_a_location(tmp_path: Path) -> None:
    data = _copy("touche-2021-task1", tmp_path)
    corpus = data / "debatepedia.json"
    raw = corpus.read_bytes()
    corpus.write_bytes(raw[: len(raw) // 2])
    report = check_input(load_task("touche-2021-task1"), data)
    assert not report.valid
    (finding,) = [f for f in report.findings if f.code == "INPUT-FORMAT"]
    assert finding.path.endswith("debatepedia.json")
    assert finding.line is not None or "offset" in finding.message or "argument" in finding.message


def test_malformed_topics_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = _copy("arqmath-3-task1", tmp_path)
    topics = data / "topics.xml"
    topics.write_text(topics.read_text(encoding="utf-8").replace("</Topics>", ""), encoding="utf-8")
    assert main(["check-input", "--task", "arqmath-3-task1", str(data)]) == 1
    out = capsys.readouterr().out
    assert "topics.xml" in out and "invalid" in out and "Traceback" not in out


def test_topics_of_another_task_are_rejected(tmp_path: Path) -> None:
    # Task 2 topics (B.x) given to Task 1 (A.x): every file parses, the ids do not fit.
    data = _copy("arqmath-3-task1", tmp_path)
    shutil.copy(load_task("arqmath-3-task2").sample_dir / "input" / "topics.xml", data / "topics.xml")
    report = check_input(load_task("arqmath-3-task1"), data)
    assert [f.code for f in report.findings] == ["INPUT-TOPIC-ID"]


def test_missing_directory_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check-input", "--task", "touche-2020-task1", str(tmp_path / "nope")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "dataset folder not found" in err
