"""Terminal tables keep the cell that identifies a row whole, at 80 and at 200 columns.

The field test of issue 40 read "lucene…" for two different runs, "arqmath-3-tas…" for
three tasks, "input/topi…" for file names and image names broken across lines. Each
command runs as a user runs it (a subprocess, COLUMNS set as a terminal would); each
identifying value must appear whole on one line, and no line may be wider than the terminal.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from rich.cells import cell_len

from sharedtask.data import get_dataset
from sharedtask.manifest import load_manifest
from sharedtask.spec import all_tasks, load_task

REPO = Path(__file__).resolve().parents[1]
REFERENCE = REPO / "baselines" / "reference-runs"
WIDTHS = (80, 200)


def _cli(args: list[str], width: int, cwd: Path | None = None) -> str:
    env = dict(os.environ, COLUMNS=str(width), TERM="dumb")
    env.pop("LINES", None)
    done = subprocess.run([sys.executable, "-m", "sharedtask", *args], env=env, cwd=cwd, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _whole(out: str, values: list[str], width: int) -> None:
    lines = out.splitlines()
    for value in values:
        assert any(value in line for line in lines), f"{value!r} is not whole on any line at {width} columns:\n{out}"
    # a path stays on one line for copying (the terminal wraps it); everything else fits
    too_wide = [line for line in lines if cell_len(line) > width and not line.startswith("folder: ")]
    assert not too_wide, f"lines wider than {width} columns: {too_wide}"


@pytest.mark.parametrize("width", WIDTHS)
def test_evaluate_names_every_run_whole(width: int, tmp_path: Path) -> None:
    """Two runs whose names share a long prefix: the prefix alone never tells them apart."""
    task = load_task("touche-2021-task1")
    names = ["lucene-dirichlet-2026-11-27T03-14-15", "lucene-dirichlet-2026-11-27T03-59-01", "dense-rerank"]
    runs = []
    for name, source in zip(names, ("lucene-dirichlet", "lucene-bm25", "dense-rerank")):
        out = tmp_path / "sharedtask-runs" / name / "output"
        out.mkdir(parents=True)
        shutil.copyfile(REFERENCE / task.id / f"{source}.txt", out / "run.txt")
        runs.append(str(out / "run.txt"))
    out = _cli(["evaluate", *runs, "--task", task.id, "--truth", str(task.sample_dir / "truth")], width)
    _whole(out, names, width)
    for label in ("nDCG@5 (quality)", "0.6990"):  # the scores stay readable too (lucene-dirichlet's nDCG@5)
        assert label in out


@pytest.mark.parametrize("width", WIDTHS)
def test_tasks_is_one_line_a_task_with_the_id_whole(width: int) -> None:
    tasks = all_tasks()
    out = _cli(["tasks"], width)
    _whole(out, [t.id for t in tasks], width)
    assert len(out.splitlines()) == len(tasks) + 1  # one line a task and the pointer to `tasks show`


@pytest.mark.parametrize("width", WIDTHS)
def test_data_show_names_every_file_whole(width: int) -> None:
    ds = get_dataset("arqmath-3-task1/test")
    out = _cli(["data", "show", ds.id], width)
    _whole(out, [f.target for f in ds.files], width)


@pytest.mark.parametrize("width", WIDTHS)
def test_baseline_list_keeps_names_and_images_whole(width: int) -> None:
    manifest = load_manifest()
    out = _cli(["baseline", "list"], width)
    _whole(out, [sw.name for sw in manifest.baselines] + [sw.image for sw in manifest.baselines], width)


@pytest.mark.parametrize("width", WIDTHS)
def test_a_failed_run_row_keeps_its_reason_readable(width: int) -> None:
    """The demo's rows for runs without scores: the reason in one place, not a word a line."""
    from rich.console import Console

    from sharedtask.tables import Column, KeyedTable

    table = KeyedTable([Column("#", "right", whole=True), Column("run")]
                       + [Column(h, "right", whole=True) for h in ("nDCG′ *", "MAP′", "P′@10", "bpref′")], key=1)
    table.add_row("1", "lucene-bm25", "0.9234", "0.7978", "0.6400", "0.7493")
    reason = "error: image sharedtask/baseline-dense:latest is missing (its build failed)"
    table.add_note("", "dense-wordllama-with-a-long-name", note=reason)
    console = Console(width=width, record=True, file=open(os.devnull, "w"))
    console.print(table)
    out = console.export_text()
    _whole(out, ["lucene-bm25", "dense-wordllama-with-a-long-name", "0.9234"], width)
    assert "image sharedtask/baseline-dense:latest" in out  # the reason's words stay together


@pytest.mark.parametrize("width", [80, 200])
def test_a_short_word_is_never_folded_and_the_table_keeps_to_the_width(width: int) -> None:
    """`reproduce --all` off a terminal (80 columns) showed its verdict as "identi" / "cal"."""
    import io

    from rich.console import Console

    from sharedtask.tables import Column, KeyedTable

    table = KeyedTable([Column("task/baseline"), Column("verdict"), Column("mean KTU", "right", whole=True),
                        Column("mean RBO", "right", whole=True), Column("max RMSE", "right", whole=True)])
    for name in ("mathlib4-search/lucene-bm25-statements", "touche-2021-task1/bm25f-rerank"):
        table.add_row(name, "identical", "—", "—", "—")
    buffer = io.StringIO()
    Console(file=buffer, width=width, color_system=None).print(table)
    lines = buffer.getvalue().splitlines()
    assert max(len(line) for line in lines) <= width
    assert sum("identical" in line for line in lines) == 2
    assert any("mathlib4-search/lucene-bm25-statements" in line for line in lines)


@pytest.mark.parametrize("width", [80, 81, 100, 200])
def test_a_table_a_column_too_wide_stays_within_the_width(width: int) -> None:
    """`sample` at 80 columns drew its table one column wider than the terminal, its right edge
    cut: rich shrank a whole column (the widest wrappable one), clamped it back to its minimum
    and never shrank the text column. The text column gives way now."""
    import io

    from rich.console import Console

    from sharedtask.tables import Column, KeyedTable

    table = KeyedTable([Column("file"), Column("format", whole=True), Column("size", "right", whole=True),
                        Column("goes to")])
    table.add_row("input/documents.jsonl.gz", "tira-documents-jsonl", "202.5 KiB", "$inputDataset")
    table.add_row("truth/qrels.txt", "trec-qrels", "2.9 KiB", "evaluation only")
    buffer = io.StringIO()
    Console(file=buffer, width=width, color_system=None).print(table)
    lines = buffer.getvalue().splitlines()
    assert max(len(line) for line in lines) <= width, "\n".join(lines)
    assert all(line.rstrip().endswith(("┓", "┃", "┩", "│", "┘")) for line in lines), "\n".join(lines)  # right edge drawn
    for value in ("input/documents.jsonl.gz", "tira-documents-jsonl", "202.5 KiB"):
        assert any(value in line for line in lines)


@pytest.mark.parametrize("width", WIDTHS)
def test_sample_and_check_input_name_every_file_whole(width: int, tmp_path: Path) -> None:
    task = load_task("touche-2021-task1")
    out = _cli(["sample", task.id, str(tmp_path / "t21")], width)
    files = sorted(p.relative_to(tmp_path / "t21").as_posix() for p in (tmp_path / "t21").rglob("*") if p.is_file())
    _whole("\n".join(line for line in out.splitlines() if not line.startswith(("it with ", "sample of "))), files, width)
    out = _cli(["check-input", "--task", task.id, str(tmp_path / "t21" / "input")], width)
    _whole("\n".join(line for line in out.splitlines() if " input contract of " not in line),
           [f.split("/", 1)[1] for f in files if f.startswith("input/") and f.endswith(".json")], width)


@pytest.mark.parametrize("width", WIDTHS)
def test_significance_and_per_topic_tables_name_both_runs_whole(width: int, tmp_path: Path) -> None:
    """The pairs table names two runs a row and the per-topic table a run a column: each whole."""
    task = load_task("touche-2021-task1")
    names = ["lucene-dirichlet-2026-11-27T03-14-15", "lucene-dirichlet-2026-11-27T03-59-01"]
    runs = []
    for name, source in zip(names, ("lucene-dirichlet", "lucene-bm25")):
        out = tmp_path / name / "output"
        out.mkdir(parents=True)
        shutil.copyfile(REFERENCE / task.id / f"{source}.txt", out / "run.txt")
        runs.append(str(out / "run.txt"))
    out = _cli(["evaluate", *runs, "--task", task.id, "--truth", str(task.sample_dir / "truth"), "--significance",
                "--per-topic"], width)
    pairs = out[out.index("all pairs on"):out.index("per topic:")]
    _whole(pairs, names, width)
    per_topic = out[out.index("per topic:"):]
    _whole(per_topic, names, width)
    assert sum(name in line for line in per_topic.splitlines() for name in names) >= 2


@pytest.mark.parametrize("width", WIDTHS)
def test_docker_doctor_keeps_each_check_whole(width: int) -> None:
    env = dict(os.environ, COLUMNS=str(width), TERM="dumb", DOCKER_HOST="unix:///nonexistent/sharedtask/docker.sock")
    done = subprocess.run([sys.executable, "-m", "sharedtask", "docker-doctor"], env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 1, done.stderr
    _whole("\n".join(line for line in done.stdout.splitlines() if not line.startswith("Fix it all")),
           ["docker CLI", "docker daemon"], width)


@pytest.mark.parametrize("task_id", ["arqmath-3-task2", "touche-2021-task1"])
@pytest.mark.parametrize("width", WIDTHS)
def test_tasks_show_keeps_each_contracts_path_format_and_role_whole(task_id: str, width: int) -> None:
    """`tasks show` at 80 columns cut "formulas/*.t…", "arqmath-posts-…" and the run file pattern."""
    task = load_task(task_id)
    out = _cli(["tasks", "show", task_id], width)
    files = [*task.input.files, *task.truth.files]
    _whole(out, [f.path for f in files] + [f.format for f in files] + [f.role for f in files]
           + [m.key for m in task.measures], width)
    assert "…" not in out
    if task.output.file_name_pattern:  # folded over lines, never cut
        flat = "".join(line.strip("│ ") for line in out.splitlines())
        assert task.output.file_name_pattern in flat
