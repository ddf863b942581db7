"""Property tests: arbitrary bytes never crash the validator (only findings), and
whatever it accepts TIRA's run check accepts too; memory stays flat when streaming."""

from __future__ import annotations

import tempfile
import tracemalloc
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sharedtask.findings import Finding
from sharedtask.spec import load_task
from sharedtask.validate import fix_run, structure, validate

TASKS = ["touche-2021-task1", "arqmath-3-task1", "arqmath-3-task2", "arqmath-3-task3"]

# Lines built from the pieces runs are made of, so that the fuzzer reaches the deep rules.
_token = st.sampled_from(
    ["51", "52", "53", "A.301", "B.302", "Q0", "0", "S0000abcd-A0000abcd", "S0000abcd-A0000abce", "12",
     "1", "2", "3", "-1", "1.5", "1.5", "nan", "1e3", "tag", "x y", "$", "", "\u00a0", "é", "#"]
)
_sep = st.sampled_from([" ", "\t", "  ", "\t\t"])
_line = st.lists(_token, min_size=0, max_size=8).flatmap(
    lambda toks: _sep.map(lambda s: s.join(toks))
)
_run_text = st.lists(_line, max_size=30).flatmap(
    lambda ls: st.sampled_from(["\n", "\r\n", "\r"]).map(lambda nl: nl.join(ls) + nl)
)


def _validate_bytes(data: bytes, task: str, name: str = "run.txt"):  # noqa: ANN202
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / name
        path.write_bytes(data)
        result = validate(path, load_task(task))
        fixed = fix_run(path, load_task(task), Path(tmp) / "fixed.txt")
        tira_ok = None
        if result.valid and task == "touche-2021-task1":
            from tira.check_format import FormatMsgType, check_format

            out = Path(tmp) / "out"
            out.mkdir()
            (out / "run.txt").write_bytes(data)
            tira_ok = check_format(out, "run.txt")[0] == FormatMsgType.OK
        return result, fixed, tira_ok


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.binary(max_size=2000), task=st.sampled_from(TASKS))
def test_arbitrary_bytes_only_produce_findings(data: bytes, task: str) -> None:
    result, fixed, tira_ok = _validate_bytes(data, task)
    assert all(isinstance(f, Finding) and f.code.startswith("RUN-") and f.hint for f in result.findings)
    assert isinstance(result.to_json(), dict)
    assert fixed.after is not None
    assert tira_ok in (None, True)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=_run_text, task=st.sampled_from(TASKS))
def test_run_like_text_never_crashes_and_accepted_means_tira_accepts(text: str, task: str) -> None:
    result, fixed, tira_ok = _validate_bytes(text.encode("utf-8"), task)
    assert tira_ok in (None, True), result.findings
    if fixed.after is not None and fixed.after.valid is False:
        # a fix can only stay invalid for reasons it must not guess: ids, topics, too little data
        allowed = {"RUN-DOC-ID", "RUN-POST-ID", "RUN-TOPIC-ID", "RUN-TIRA-MIN-LINES", "RUN-TIRA-MIN-TOPICS",
                   "RUN-EMPTY", "RUN-ANSWER-EMPTY", "RUN-ANSWER-LENGTH", "RUN-EMPTY-FIELD",
                   "RUN-SPACE-IN-FIELD", "RUN-UNICODE-SPACE", "RUN-SEPARATOR", "RUN-COLUMNS"}
        errors = {f.code for f in fixed.after.findings if f.severity.value == "error"}
        assert errors <= allowed, fixed.after.findings


def _grouped_run(path: Path, topics: int, depth: int = 100) -> None:
    with path.open("w") as fh:
        for t in range(1, topics + 1):
            for r in range(1, depth + 1):
                fh.write(f"{t} Q0 S{t:08x}-A{r:08x} {r} {1000 - r}.5 tag\n")


def _peak(path: Path) -> int:
    task = load_task("touche-2021-task1")
    tracemalloc.start()
    try:
        validate(path, task)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_memory_does_not_grow_with_a_grouped_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(structure, "CHUNK", 1 << 16)
    small, large = tmp_path / "small.txt", tmp_path / "large.txt"
    _grouped_run(small, 100)  # 10k lines
    _grouped_run(large, 1000)  # 100k lines, 10x the file
    peak_small, peak_large = _peak(small), _peak(large)
    assert peak_large < 1.5 * peak_small, (peak_small, peak_large)


def test_interleaved_run_costs_memory_but_stays_correct(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(structure, "CHUNK", 1 << 16)
    path = tmp_path / "inter.txt"
    with path.open("w") as fh:
        for r in range(1, 101):
            for t in range(1, 301):
                fh.write(f"{t} Q0 S{t:08x}-A{r:08x} {r} {1000 - r}.5 tag\n")
    grouped = tmp_path / "grouped.txt"
    _grouped_run(grouped, 300)
    result = validate(path, load_task("touche-2021-task1"))
    assert result.valid and result.stats.interleaved and result.stats.max_depth == 100
    assert _peak(path) > 2 * _peak(grouped)  # the documented cost: every topic's lines are kept


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=_run_text, chunk=st.sampled_from([7, 64, 1 << 22]))
def test_chunk_size_does_not_change_the_findings(text: str, chunk: int) -> None:
    """The whole-chunk fast path and the line loop must agree, wherever chunks are cut."""
    data = text.encode("utf-8")

    def codes(size: int) -> list[tuple[str, int | None]]:
        old = structure.CHUNK
        structure.CHUNK = size
        try:
            with tempfile.TemporaryDirectory() as tmp:
                path = Path(tmp) / "run.txt"
                path.write_bytes(data)
                result = validate(path, load_task("touche-2021-task1"))
                return sorted((f.code, f.line) for f in result.findings)
        finally:
            structure.CHUNK = old

    assert codes(chunk) == codes(1 << 22)
