"""Differential: the columnar fast path and the line engine give the very same result.

Runs are generated as real files (TREC and ARQMath layouts, plain or gzip), mostly well
formed so that the fast path takes most blocks, with faults injected at random places:
every finding code the engine can emit on such runs (columns, ids, ranks, scores, ties,
depth, unknown/missing topics, duplicates, CRLF, blank/comment lines, non-UTF-8, BOM, broken gzip,
byte and line bounds, interleaved topics, separators, tags, Q0). Both engines run with
small chunks (many blocks, topics carried across them) and small per-code caps; the
whole JSON result (findings in order, omitted counts, statistics, validity) must be equal.
The expected answer is the line engine's, which the rest of the validator suite pins down.
"""

from __future__ import annotations

import dataclasses
import gzip
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sharedtask.spec import load_task
from sharedtask.validate import engine, fastpath, structure, validate
from test_validate_fuzz import _run_text

TASKS = {"trec": "touche-2021-task1", "arq1": "arqmath-3-task1", "arq1-trec": "arqmath-3-task1",
         "arq2": "arqmath-3-task2"}

FAULTS = [
    "columns-fewer", "columns-more", "doc-pattern", "doc-duplicate", "rank-swap", "rank-gap", "rank-zero-padded",
    "rank-not-int", "score-scientific", "score-nan", "score-word", "score-up", "score-long", "score-signed",
    "score-forms", "tie", "tie-float32", "topic-pattern", "crlf", "blank", "comment", "non-utf8", "tab-and-space",
    "double-separator", "leading-space", "trailing-space", "tag-other", "q0-other", "control-char", "unicode-space",
    "interleave", "space-in-field", "long-id", "nul",
]


def _doc(kind: str, t: int, r: int) -> str:
    if kind == "trec":
        return f"S{t:08x}-A{r:08x}"
    return str(100_000 * t + r)


def _topic(kind: str, t: int) -> str:
    return str(t) if kind == "trec" else f"{'B' if kind == 'arq2' else 'A'}.{t}"


def _fields(kind: str, topic: str, doc: str, rank: str, score: str, tag: str, post: str) -> list[str]:
    if kind == "trec" or kind == "arq1-trec":
        return [topic, "Q0", doc, rank, score, tag]
    if kind == "arq1":
        return [topic, doc, rank, score, tag]
    return [topic, doc, post, rank, score, tag]


@st.composite
def runs(draw: st.DrawFn) -> tuple[str, bytes, dict[str, object]]:
    kind = draw(st.sampled_from(sorted(TASKS)))
    sep = " " if kind == "trec" else "\t"
    n_topics = draw(st.integers(1, 9))
    lines: list[str] = []
    topics = []
    for t in range(1, n_topics + 1):
        depth = draw(st.integers(1, 40))
        topics.append(_topic(kind, t))
        score = draw(st.sampled_from([20.0, 1.5, 0.9, 1000.25, 7.0]))
        for r in range(1, depth + 1):
            text = f"{score:.3f}" if r % 5 else f"{score:.4f}"
            fields = _fields(kind, _topic(kind, t), _doc(kind, t, r), str(r), text, "tag1", str(t * 10 + r // 3))
            lines.append(sep.join(fields))
            if draw(st.integers(0, 6)):
                score -= draw(st.sampled_from([0.5, 0.001, 1.25]))
    if draw(st.booleans()) and kind == "trec":
        lines.extend(" ".join([_topic(kind, 99), "Q0", _doc(kind, 99, r), str(r), f"{5000 - r}.5", "tag1"])
                     for r in range(1, 1003))  # deeper than the task's 1,000
    raw: list[bytes] = [ln.encode() for ln in lines]
    for _ in range(draw(st.integers(0, 4))):
        fault = draw(st.sampled_from(FAULTS))
        k = draw(st.integers(0, len(raw) - 1))
        raw[k] = _inject(fault, raw[k], raw, k, sep)
    ending = draw(st.sampled_from([b"\n", b"\n", b"\n", b"\r\n"]))
    data = ending.join(raw) + (ending if draw(st.integers(0, 5)) else b"")
    if draw(st.integers(0, 9)) == 0:
        data = b"\xef\xbb\xbf" + data
    options: dict[str, object] = {
        "gzip": draw(st.sampled_from([None, None, None, None, "whole", "broken"])),
        "topics": draw(st.sampled_from([None, "exact", "fewer", "more"])),
        "limit": draw(st.sampled_from([1, 3, 200])),
        "chunk": draw(st.sampled_from([32, 100, 512, 4096])),
        "bound": draw(st.sampled_from([None, None, None, "bytes", "line"])),
        "all_topics": topics,
    }
    return kind, data, options


def _inject(fault: str, line: bytes, raw: list[bytes], k: int, sep: str) -> bytes:
    s = sep.encode()
    parts = line.split(s)
    if fault == "columns-fewer":
        return s.join(parts[:-1])
    if fault == "columns-more":
        return line + s + b"extra"
    if fault == "doc-pattern":
        parts[-4] = b"Sxyz" if len(parts) == 6 else b"12a"
    elif fault == "doc-duplicate" and k > 0:
        prev = raw[k - 1].split(s)
        if prev[0] == parts[0] and len(prev) == len(parts):
            parts[-4 if len(parts) == 6 else 1] = prev[-4 if len(parts) == 6 else 1]
    elif fault == "rank-swap":
        parts[-3] = str(int(parts[-3]) + 1).encode() if parts[-3].isdigit() else parts[-3]
    elif fault == "rank-gap":
        parts[-3] = b"1000"
    elif fault == "rank-zero-padded":
        parts[-3] = b"0" + parts[-3]
    elif fault == "rank-not-int":
        parts[-3] = b"1.0"
    elif fault == "score-scientific":
        parts[-2] = b"1e3"
    elif fault == "score-nan":
        parts[-2] = b"nan"
    elif fault == "score-word":
        parts[-2] = b"high"
    elif fault == "score-up":
        parts[-2] = b"99999"
    elif fault == "score-long":
        parts[-2] = b"12345678.5" if k % 2 else b"0.12345678901234"
    elif fault == "score-signed":
        parts[-2] = b"+" + parts[-2] if k % 2 else b"-" + parts[-2]
    elif fault == "score-forms":
        parts[-2] = [b".5", b"5.", b"-0", b"007.50", b"1_0", b"+12345678", b"."][k % 7]
    elif fault == "tie" and k > 0:
        prev = raw[k - 1].split(s)
        if len(prev) == len(parts):
            parts[-2] = prev[-2]
    elif fault == "tie-float32" and k > 0:
        prev = raw[k - 1].split(s)
        if len(prev) == len(parts):
            parts[-2] = prev[-2] + b"00000001"
    elif fault == "topic-pattern":
        parts[0] = b"x" + parts[0]
    elif fault == "crlf":
        return line + b"\r"
    elif fault == "blank":
        return line + b"\n"
    elif fault == "comment":
        return b"# a comment\n" + line
    elif fault == "non-utf8":
        parts[-1] = b"t\xffg"
    elif fault == "tab-and-space":
        return line.replace(s, b"\t" if s == b" " else b" ", 1)
    elif fault == "double-separator":
        return line.replace(s, s + s, 1)
    elif fault == "leading-space":
        return b" " + line
    elif fault == "trailing-space":
        return line + b" "
    elif fault == "tag-other":
        parts[-1] = b"tag2"
    elif fault == "q0-other" and len(parts) == 6 and parts[1] == b"Q0":
        parts[1] = b"Q1"
    elif fault == "control-char":
        parts[-1] = b"t\x01g"
    elif fault == "unicode-space":
        parts[-1] = "t\u00a0g".encode()
    elif fault == "interleave":
        return raw[0]
    elif fault == "space-in-field":
        parts[-1] = b"t g"
    elif fault == "long-id":
        parts[-4 if len(parts) == 6 else 1] = b"S" * 30
    elif fault == "nul":
        parts[-1] = b"t\x00g"
    return s.join(parts)


def _result(path: Path, task: object, topics: set[str] | None, limit: int, mode: str,
            monkeypatch: pytest.MonkeyPatch) -> dict[str, object]:
    monkeypatch.setenv(fastpath.ENV, mode)
    return validate(path, task, topics=topics, limit_per_code=limit).to_json()  # type: ignore[arg-type]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                                                    HealthCheck.function_scoped_fixture])
@given(case=runs())
def test_fast_path_and_line_engine_agree(case: tuple[str, bytes, dict[str, object]], tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    kind, data, opt = case
    task = load_task(TASKS[kind])
    if opt["bound"] is not None:
        size = max(40, len(data) // 2)
        output = dataclasses.replace(task.output, max_run_bytes=str(size)) if opt["bound"] == "bytes" else \
            dataclasses.replace(task.output, max_line_bytes="30")
        task = dataclasses.replace(task, output=output)
    name = "run.txt.gz" if opt["gzip"] else "run.txt"
    path = tmp_path / name
    packed = gzip.compress(data)
    path.write_bytes({None: data, "whole": packed, "broken": packed[: len(packed) * 2 // 3]}[opt["gzip"]])  # type: ignore[index]
    all_topics: list[str] = opt["all_topics"]  # type: ignore[assignment]
    topics = {"exact": set(all_topics), "fewer": set(all_topics[1:]), "more": set(all_topics) | {"A.77", "77"},
              None: None}[opt["topics"]]  # type: ignore[index]
    monkeypatch.setattr(structure, "CHUNK", opt["chunk"])
    lines = _result(path, task, topics, opt["limit"], "lines", monkeypatch)  # type: ignore[arg-type]
    columns = _result(path, task, topics, opt["limit"], "columns", monkeypatch)  # type: ignore[arg-type]
    assert columns == lines


def test_the_fast_path_takes_plain_blocks_and_books_their_topics(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Not a vacuous comparison: on a plain run most topics are booked without the line engine."""
    path = tmp_path / "run.txt"
    path.write_text("".join(f"{t} Q0 S{t:08x}-A{r:08x} {r} {100 - r}.25 tag\n" for t in range(1, 41)
                            for r in range(1, 51)))
    booked: list[int] = []
    finish = engine.finish_topic
    monkeypatch.setattr(engine, "finish_topic", lambda ctx, st: (booked.append(1), finish(ctx, st)))
    monkeypatch.setattr(fastpath, "finish_topic", lambda ctx, st: (booked.append(1), finish(ctx, st)))
    monkeypatch.setattr(structure, "CHUNK", 1024)
    monkeypatch.setenv(fastpath.ENV, "columns")
    result = validate(path, load_task("touche-2021-task1"))
    assert result.valid and result.stats.topics == 40 and result.stats.data_lines == 2000
    assert len(booked) <= 3  # the first topic (it registers the run tag) and the last one (end of the run)


def test_the_default_takes_the_fast_path_only_for_large_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(fastpath.ENV, raising=False)
    small = tmp_path / "small.txt"
    small.write_bytes(b"1 Q0 d 1 1 t\n")
    large = tmp_path / "large.txt"
    large.write_bytes(b"x" * fastpath.MIN_BYTES)
    layout = engine.LAYOUTS["trec-run"]
    assert not fastpath.wanted(small, layout) and fastpath.wanted(large, layout)
    monkeypatch.setenv(fastpath.ENV, "lines")
    assert not fastpath.wanted(large, layout)


@settings(max_examples=300, deadline=None)
@given(scores=st.lists(st.one_of(
    st.from_regex(r"[-+]?[0-9]{0,9}(\.[0-9]{0,10})?", fullmatch=True),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.sampled_from(["1e3", "nan", "inf", "1_0", ".", "-", "+", "0.1.2", "--1", "12345678.5", "+12345678"]),
), min_size=1, max_size=40))
def test_plain_scores_read_as_python_floats(scores: list[str]) -> None:
    """Every score the fast path reads itself is Python's float() of it, bit for bit; the
    expected values come from float(), the plain/not-plain split from the decimal grammar."""
    import math
    import re

    from sharedtask.formats.layouts import TREC
    from sharedtask.validate import columnar

    scores = [s for s in scores if s]  # an empty field is not a plain line
    if not scores:
        return
    text = "".join(f"1 Q0 d{k} {k + 1} {s} t\n" for k, s in enumerate(scores)).encode()
    block = columnar.parse(text + columnar.padding(len(text)), len(text), TREC)
    assert block is not None
    bad = np.zeros(block.n, dtype=bool)
    values = block._scores(bad)
    plain = re.compile(r"[-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)")
    for s, value, not_read in zip(scores, values.tolist(), bad.tolist()):
        if not_read:
            continue  # left to the line engine
        assert plain.fullmatch(s), s
        expected = float(s)
        assert value == expected and math.copysign(1, value) == math.copysign(1, expected), (s, value)
    short = [k for k, s in enumerate(scores) if re.fullmatch(r"[-+]?[0-9]{1,6}\.[0-9]{1,6}", s)]
    assert not bad[short].any()  # the common forms are read here, not left to the line engine


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                    HealthCheck.function_scoped_fixture])
@given(text=_run_text, task=st.sampled_from(["touche-2021-task1", "arqmath-3-task1", "arqmath-3-task2"]),
       chunk=st.sampled_from([7, 64, 1 << 16]))
def test_engines_agree_on_run_like_text(text: str, task: str, chunk: int, tmp_path: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """The fuzzer's runs (short fields at the end of a block, odd separators) through both engines."""
    path = tmp_path / "run.txt"
    path.write_bytes(text.encode())
    monkeypatch.setattr(structure, "CHUNK", chunk)
    spec = load_task(task)
    assert _result(path, spec, None, 2, "columns", monkeypatch) == _result(path, spec, None, 2, "lines", monkeypatch)


def test_batches_grow_only_for_large_runs(tmp_path: Path) -> None:
    small, big = tmp_path / "small.txt", tmp_path / "big.txt"
    small.write_bytes(b"1 Q0 d 1 1 t\n")
    with big.open("wb") as fh:
        fh.truncate(fastpath.BIG_BYTES)  # sparse: only the size matters
    assert fastpath.block_bytes(small, 1 << 16) == fastpath.BLOCK_CHUNKS << 16
    assert fastpath.block_bytes(big, 1 << 16) == 4 * fastpath.BLOCK_CHUNKS << 16


def test_a_run_it_cannot_book_is_left_to_the_line_engine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every topic has a finding (ranks from 0): after its warm-up the fast path stops trying,
    and the result is still the line engine's."""
    path = tmp_path / "run.txt"
    path.write_text("".join(f"{t} Q0 S{t:08x}-A{r:08x} {r - 1} {100 - r}.25 tag\n" for t in range(1, 201)
                            for r in range(1, 51)))
    made: list[fastpath.FastPath] = []
    init = fastpath.FastPath.__init__

    def spy(self: fastpath.FastPath, *args: object) -> None:
        init(self, *args)  # type: ignore[arg-type]
        made.append(self)

    monkeypatch.setattr(fastpath.FastPath, "__init__", spy)
    monkeypatch.setattr(structure, "CHUNK", 1024)
    task = load_task("touche-2021-task1")
    columns = _result(path, task, None, 200, "columns", monkeypatch)
    assert len(made) == 1 and not made[0].enabled and made[0].handed > 2 * made[0].booked
    assert columns == _result(path, task, None, 200, "lines", monkeypatch)
    assert any(f["code"] == "RUN-RANK-START" for f in columns["findings"])  # type: ignore[index,union-attr]


@pytest.mark.parametrize("mode", ["lines", "columns"])
@pytest.mark.parametrize("limit", [1, 200, 1000])
def test_ties_already_in_rank_order_are_no_finding(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str,
                                                   limit: int) -> None:
    """Ranks 2k-1 and 2k tie in every topic. In even topics the docnos fall within each pair,
    so trec_eval's order (docno descending) is the ranks' order: nothing to report. In odd
    topics they rise, so trec_eval swaps each pair: 25 groups x 20 topics = 500 RUN-TIE,
    kept or counted past the cap, the same in both engines."""
    path = tmp_path / "run.txt"
    path.write_text("".join(f"{t} Q0 S{t:08x}-A{(1000 - r if t % 2 == 0 else r):08x} {r} {200 - (r + 1) // 2}.5 tag\n"
                            for t in range(1, 41) for r in range(1, 51)))
    monkeypatch.setattr(structure, "CHUNK", 1024)
    monkeypatch.setenv(fastpath.ENV, mode)
    result = validate(path, load_task("touche-2021-task1"), limit_per_code=limit)
    kept = [f for f in result.findings if f.code == "RUN-TIE"]
    assert len(kept) == min(limit, 500)
    assert len(kept) + result.omitted.get("RUN-TIE", 0) == 500
    topics = [int(f.message.split()[1].rstrip(":")) for f in kept]  # "topic 3: 2 documents share ..."
    assert {t % 2 for t in topics} == {1}
    assert all(f"your ranks say S{t:08x}" in f.message for t, f in zip(topics, kept))
