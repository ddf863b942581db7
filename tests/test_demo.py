"""The main job end to end: `sharedtask demo` builds, runs sandboxed, validates, scores, ranks, reports.

Real Docker, real baseline images, real Lucene indexes, the bundled samples; the
report is opened in a real headless chromium. Two tasks keep it to a few minutes
(CI also runs the full `bash setup.sh` demo over all nine tasks before the tests).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from browser_helpers import DomSummary, browser
from sharedtask.cli import main
from sharedtask.evaluate import evaluate
from sharedtask.manifest import load_manifest
from sharedtask.spec import load_task

pytestmark = [pytest.mark.docker, pytest.mark.slow]
TASKS = ["touche-2021-task1", "arqmath-3-task1"]


@pytest.fixture(scope="module")
def demo_out(base_image, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("demo")
    args = ["demo", "--output", str(out)]
    for task in TASKS:
        args += ["--task", task]
    assert main(args) == 0
    return out


def test_every_baseline_is_ranked(demo_out: Path) -> None:
    manifest = load_manifest()
    for task_id in TASKS:
        board = json.loads((demo_out / task_id / "leaderboard.json").read_text())
        names = {sw.name for sw in manifest.for_task(task_id)}
        assert {row["run"] for row in board["runs"]} == names
        for row in board["runs"]:
            run = demo_out / task_id / row["run"] / "output" / "run.txt"
            record = json.loads((demo_out / task_id / row["run"] / "run-record.json").read_text())
            assert record["status"] == "success" and record["exit_code"] == 0
            assert record["validation"]["status"] == "valid"
            # The leaderboard's number is the evaluator's on the kept run file.
            primary = load_task(task_id).primary_measure.key
            again = evaluate(run, task_id, truth_dir=load_task(task_id).sample_dir / "truth")
            assert row["scores"][primary] == pytest.approx(again.scores[primary], abs=1e-9)


def test_report_renders_with_one_row_per_baseline(demo_out: Path, tmp_path: Path) -> None:
    dom = browser(demo_out / "report.html", tmp_path, "--dump-dom").stdout
    summary = DomSummary()
    summary.feed(dom)
    manifest = load_manifest()
    assert summary.rows == {t: len(manifest.for_task(t)) for t in TASKS}
    for task_id in TASKS:
        assert len(summary.charts[task_id]) == len(load_task(task_id).measures)
        assert all(bars > 0 for bars in summary.charts[task_id])


def test_submissions_are_ranked_with_the_baselines(demo_out: Path, tmp_path: Path, repo_root: Path) -> None:
    """The organizer's flow: a submission list next to the baselines, one broken submission included."""
    subs = tmp_path / "submissions.yml"
    subs.write_text(yaml.safe_dump({
        "version": 1,
        "submissions": {
            # A second copy of a baseline under another name: must score like the baseline.
            "team-a": {"image": "sharedtask/baseline-lucene:latest", "command": "python -m lucene_baseline --model bm25",
                       "tasks": ["touche-2021-task1"]},
            # A submission that crashes: ranked at the bottom with its status, not a crash of the demo.
            "team-b": {"image": "sharedtask/baseline-lucene:latest", "command": "sh -c 'echo broken >&2; exit 3'",
                       "tasks": ["touche-2021-task1"]},
        },
    }))
    out = tmp_path / "organizer"
    code = main(["demo", "--task", "touche-2021-task1", "--submissions", str(subs), "--no-baselines", "--output", str(out)])
    assert code == 1  # one run failed
    board = json.loads((out / "touche-2021-task1" / "leaderboard.json").read_text())
    assert [row["run"] for row in board["runs"]] == ["team-a"]
    baseline = json.loads((demo_out / "touche-2021-task1" / "leaderboard.json").read_text())
    bm25 = next(r for r in baseline["runs"] if r["run"] == "lucene-bm25")
    assert board["runs"][0]["scores"] == pytest.approx(bm25["scores"])
    record = json.loads((out / "touche-2021-task1" / "team-b" / "run-record.json").read_text())
    assert record["status"] == "failed" and record["exit_code"] == 3
    assert "team-b" in (out / "report.html").read_text()


def test_docker_not_running_is_one_line(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from sharedtask.images import client as dockerclient

    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    monkeypatch.setattr(dockerclient, "_CLIENT", None)  # as in a new process: no client yet
    assert main(["demo", "--task", "touche-2020-task1", "--output", "/tmp/never-written"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Docker is not running" in err and "docker-doctor" in err
