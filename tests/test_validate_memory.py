"""The validator's memory is bounded by the task, not the file (validate/budget.py, issue 26).

A run that would need more than the bound in memory (a topic deeper than the bound, an
interleaved run longer than it, more distinct topics or tags than it, or more text) is
refused with RUN-MEMORY-BOUND and the rest is not read. The bound is made small here
(monkeypatched) so that the runs stay a few MB; the benchmark measures it on 1000 MB runs
(benchmarks/validator_memory.py). Memory is traced with tracemalloc, on both engines.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tracemalloc
from pathlib import Path

import pytest

from sharedtask.validate import budget, structure, validate
from sharedtask.spec import load_task

TASK = "touche-2021-task1"
BOUND = 2000


@pytest.fixture()
def small_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(structure, "CHUNK", 1 << 14)
    monkeypatch.setattr(budget, "FLOOR_ROWS", BOUND)
    monkeypatch.setattr(budget, "CEILING_ROWS", BOUND)


def _write(path: Path, lines) -> Path:
    with path.open("w") as fh:
        for line in lines:
            fh.write(line + "\n")
    return path


def _deep(n: int, topic: int = 1):
    return (f"{topic} Q0 S{r:08x}-A{r:08x} {r} {n - r + 1}.5 tag" for r in range(1, n + 1))


def _refusal(result):
    found = [f for f in result.findings if f.code == "RUN-MEMORY-BOUND"]
    assert len(found) == 1, sorted(result.codes())
    return found[0]


@pytest.mark.parametrize("engine", ["lines", "columns"])
def test_a_topic_deeper_than_the_bound_is_refused_at_the_bound(tmp_path, small_bound, monkeypatch, engine) -> None:
    monkeypatch.setenv("SHAREDTASK_VALIDATE_ENGINE", engine)
    run = _write(tmp_path / "run.txt", _deep(50_000))
    result = validate(run, load_task(TASK))
    finding = _refusal(result)
    assert not result.valid and finding.severity.value == "error"
    assert f"more than {BOUND:,}" in finding.message and "result lines in memory" in finding.message
    assert "the rest of the run was not read" in finding.message
    assert BOUND < finding.line < 50_000 and result.stats.lines == finding.line
    assert "RUN-DEPTH" in result.codes()  # the lines read are still checked
    assert "interleaved" not in finding.message and "not interleaved" in finding.hint


def test_an_interleaved_run_longer_than_the_bound_is_refused(tmp_path, small_bound) -> None:
    lines = [f"{t} Q0 S{t:08x}-A{r:08x} {r} {1000 - r}.5 tag" for r in range(1, 101) for t in range(1, 101)]
    result = validate(_write(tmp_path / "run.txt", lines), load_task(TASK))
    finding = _refusal(result)
    assert result.stats.interleaved and finding.line < len(lines)


def test_an_interleaved_run_within_the_bound_is_still_valid(tmp_path, small_bound) -> None:
    lines = [f"{t} Q0 S{t:08x}-A{r:08x} {r} {1000 - r}.5 tag" for r in range(1, 11) for t in range(1, 101)]
    result = validate(_write(tmp_path / "run.txt", lines), load_task(TASK))
    assert result.valid and result.stats.interleaved and "RUN-MEMORY-BOUND" not in result.codes()


def test_more_distinct_topics_than_the_bound_are_refused(tmp_path, small_bound) -> None:
    lines = (f"{t} Q0 S{t:08x}-A{t:08x} 1 1.5 tag" for t in range(1, 20_001))
    result = validate(_write(tmp_path / "run.txt", lines), load_task(TASK))
    assert "distinct topics" in _refusal(result).message


def test_more_distinct_run_tags_than_the_bound_are_refused(tmp_path, small_bound) -> None:
    lines = (f"{t} Q0 S{t:08x}-A{r:08x} {r} {100 - r}.5 tag{t}x{r}" for t in range(1, 301) for r in range(1, 51))
    result = validate(_write(tmp_path / "run.txt", lines), load_task(TASK))
    assert "distinct run tags" in _refusal(result).message


def test_long_lines_are_bounded_by_the_text_they_keep(tmp_path, small_bound, monkeypatch) -> None:
    monkeypatch.setattr(budget, "MAX_KEPT_BYTES", 1 << 20)
    pad = "x" * 2000
    lines = (f"1 Q0 S{r:08x}-A{r:08x} {r} {2000 - r}.5 t{pad}" for r in range(1, 1500))  # 3 MB, < BOUND rows
    result = validate(_write(tmp_path / "run.txt", lines), load_task(TASK))
    assert "1 MiB of result lines" in _refusal(result).message


def test_the_bound_comes_from_the_task_topics_times_depth() -> None:
    task = load_task(TASK)
    depth = task.output.max_results_per_topic
    assert budget.Budget.for_task(task, {str(t) for t in range(300)}).rows == 300 * depth
    assert budget.Budget.for_task(task, {"1"}).rows == budget.FLOOR_ROWS
    assert budget.Budget.for_task(task, {str(t) for t in range(10_000)}).rows == budget.CEILING_ROWS
    assert budget.Budget.for_task(task, None).rows == min(budget.CEILING_ROWS, budget.UNKNOWN_TOPICS * depth)


def _peak(path: Path) -> int:
    tracemalloc.start()
    try:
        validate(path, load_task(TASK))
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("engine", ["lines", "columns"])
@pytest.mark.parametrize("shape", ["one-topic", "interleaved"])
def test_memory_does_not_grow_past_the_bound(tmp_path, small_bound, monkeypatch, engine, shape) -> None:
    """Before: memory grew with the run (11.5 GB RSS for 1000 MB); now 4x the file costs the same."""
    monkeypatch.setenv("SHAREDTASK_VALIDATE_ENGINE", engine)

    def make(name: str, n: int) -> Path:
        if shape == "one-topic":
            return _write(tmp_path / name, _deep(n))
        per = n // 50
        return _write(tmp_path / name, (f"{t} Q0 S{t:08x}-A{r:08x} {r} {per - r + 1}.5 tag"
                                        for r in range(1, per + 1) for t in range(1, 51)))

    small, large = make("small.txt", 10_000), make("large.txt", 40_000)
    peak_small, peak_large = _peak(small), _peak(large)
    assert peak_large < 1.3 * peak_small, (peak_small, peak_large)


def test_the_cli_refuses_such_a_run_with_the_finding(tmp_path) -> None:
    """The CLI's `validate`, with the real bound: the sample's topics x 1000 is below the floor of
    100,000 lines, and the run is one topic of 150,000 lines."""
    run = _write(tmp_path / "run.txt", _deep(150_000))
    sample = load_task(TASK).sample_dir / "input"
    proc = subprocess.run([sys.executable, "-m", "sharedtask", "validate", str(run), "--task", TASK, "--input",
                           str(sample), "--json"], capture_output=True, text=True)
    assert proc.returncode == 1, proc.stderr
    report = json.loads(proc.stdout)
    found = [f for f in report["findings"] if f["code"] == "RUN-MEMORY-BOUND"]
    assert found and found[0]["severity"] == "error" and "100,000" in found[0]["message"]
    assert "Traceback" not in proc.stderr


DEEP_RUN_PY = (
    "import os\n"
    "n = 1_000_000\n"
    "with open(os.path.join(os.environ['outputDir'], 'run.txt'), 'w') as fh:\n"
    "    for r in range(1, n + 1):\n"
    "        fh.write(f'1 Q0 S{r:08x}-A{r:08x} {r} {n - r + 1}.5 deep\\n')\n"
)


@pytest.mark.docker
def test_the_host_validation_after_a_sandbox_run_is_bounded(base_image, tmp_path) -> None:
    """A real container writes one topic of 1M lines (42 MB, legal in size); the host validates it as
    after every run (the service and `demo` go through the same sandbox.run). Before, the host
    kept every line (~620 bytes each: 650 MB RSS here, 11.5 GB for the 1000 MB run)."""
    from sharedtask.sandbox import run

    tracemalloc.start()
    try:
        outcome = run("touche-2020-task1", base_image, command=f"python -c \"{DEEP_RUN_PY}\"",
                      output_dir=tmp_path / "run" / "output", timeout=300)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert outcome.result.status == "success", outcome.result.message
    assert outcome.validation["status"] == "invalid" and not outcome.ok
    codes = [f["code"] for f in outcome.validation["report"]["findings"]]
    assert "RUN-MEMORY-BOUND" in codes
    assert peak < 150 * 2**20, peak  # the bound: 100,000 lines kept (~60 MB traced), not 1,000,000


def test_fix_says_where_reading_stopped(tmp_path, small_bound) -> None:
    from sharedtask.validate import fix_run

    run = _write(tmp_path / "run.txt", _deep(50_000))
    report = fix_run(run, load_task(TASK), tmp_path / "fixed.txt")
    stopped = [n for key, n in report.changes.items() if "RUN-MEMORY-BOUND" in key]
    assert len(stopped) == 1 and BOUND < stopped[0] < 50_000
    assert report.lines_written == load_task(TASK).output.max_results_per_topic


def test_task3_quoting_reads_no_further_than_the_pass(tmp_path, small_bound) -> None:
    """ARQMath-3 Task 3: the csv quoting check stops where the validator stopped (here: more
    distinct topics than the bound); a swallowing answer after that point is not read."""
    lines = [f"{t}\t1\t1.0\trun\tanswer {t}" for t in range(1, 20_001)]
    lines.append('20001\t1\t1.0\trun\t"swallows')  # far past the bound
    lines.append("20002\t1\t1.0\trun\tanswer")
    result = validate(_write(tmp_path / "run.tsv", lines), load_task("arqmath-3-task3"))
    _refusal(result)
    assert "RUN-ANSWER-QUOTE" not in result.codes()
    # within the bound the same answer is found as before
    short = [*lines[:10], *lines[-2:]]
    assert "RUN-ANSWER-QUOTE" in validate(_write(tmp_path / "short.tsv", short), load_task("arqmath-3-task3")).codes()
