"""`sharedtask validate`: exit codes 0/1/2, JSON output, grouped rendering, --fix."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rich.console import Console

from sharedtask.cli import main
from sharedtask.findings import Finding, Severity
from sharedtask.findings.output import findings_json, render_findings

FIXTURES = Path(__file__).parent / "fixtures" / "runs"


def _touche_run(tmp_path: Path, extra: str = "") -> Path:
    lines = [f"{t} Q0 S{t:08x}-A{r:08x} {r} {20 - r}.5 tag" for t in range(51, 56) for r in range(1, 9)]
    path = tmp_path / "run.txt"
    path.write_text("\n".join(lines) + "\n" + extra)
    return path


def test_valid_run_exits_0(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(_touche_run(tmp_path)), "--task", "touche-2021-task1"]) == 0
    assert "VALID" in capsys.readouterr().out


def test_invalid_run_exits_1_and_json_lists_findings(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = _touche_run(tmp_path, extra="\n")
    assert main(["validate", str(run), "--task", "touche-2021-task1", "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["valid"] is False
    (blank,) = [f for f in data["findings"] if f["code"] == "RUN-BLANK-LINE"]
    assert blank["line"] == 41 and blank["severity"] == "error" and blank["hint"]


def test_tool_errors_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(tmp_path / "missing.txt"), "--task", "touche-2021-task1"]) == 2
    assert main(["validate", str(_touche_run(tmp_path)), "--task", "no-such-task"]) == 2
    assert main(["validate", str(tmp_path), "--task", "touche-2021-task1", "--input", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.count("error:") == 3


def test_topics_file_and_tira_output_dir(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from sharedtask.spec import load_task

    topics = load_task("touche-2021-task1").sample_dir / "input" / "topics.xml"
    out = tmp_path / "output"
    out.mkdir()
    _touche_run(out)  # writes output/run.txt: found as TIRA finds it
    code = main(["validate", str(out), "--task", "touche-2021-task1", "--topics", str(topics), "--json"])
    data = json.loads(capsys.readouterr().out)
    assert data["path"].endswith("run.txt")
    (missing,) = [f for f in data["findings"] if f["code"] == "RUN-MISSING-TOPICS"]
    assert "1 of 6 topics have no results: 56" in missing["message"]  # the sample has topics 51-56
    assert code == 0 and data["stats"]["topics_expected"] == 6


def test_fix_writes_a_clean_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = _touche_run(tmp_path, extra="# trailing comment\n51 Q0 S00000033-A000000ff 9 99 tag\n")
    fixed = tmp_path / "fixed.txt"
    assert main(["validate", str(run), "--task", "touche-2021-task1", "--fix", str(fixed)]) == 1
    out = capsys.readouterr().out
    assert "fixed run written" in out and "unreadable lines dropped: 1" in out
    assert main(["validate", str(fixed), "--task", "touche-2021-task1"]) == 0
    first = fixed.read_text().splitlines()[0]
    assert first == "51 Q0 S00000033-A000000ff 1 99 tag"  # interleaved line sorted to the top of 51


def test_render_groups_repeats() -> None:
    findings = [Finding(Severity.WARNING, "RUN-TIE", f"tie {i}", "run.txt", i + 1, None, "hint") for i in range(5)]
    findings.append(Finding(Severity.ERROR, "RUN-COLUMNS", "bad", "run.txt", 9, None, "fix it"))
    console = Console(record=True, width=200)
    render_findings(console, findings, {"RUN-TIE": 1229}, examples=3)
    text = console.export_text()
    assert text.index("RUN-COLUMNS") < text.index("RUN-TIE")
    assert "1,231 more like this" in text and text.count("tie ") == 3
    data = findings_json(findings, {"RUN-TIE": 1229})
    assert data["counts"] == {"error": 1, "warning": 1234, "info": 0}
