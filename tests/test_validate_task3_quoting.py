"""RUN-ANSWER-QUOTE says exactly what Python's csv reader, as the official Task 3 scripts use it,
does to a run: hypothesis-generated runs (1,000) against ``csv.reader(delimiter='\\t')`` itself.

The official scripts read the run with ``csv.reader(csv_file, delimiter='\\t')`` and default
quoting (approach0/pya0 f2852c9, eval-arqmath3/task3/evaluate_task3_results_manual.py, lines
17-21). The oracle here is that reader: a record spanning lines swallows the non-blank lines
after its first (each named, with the topic written on it); a one-line record whose fields
differ from the line split at its tabs is misread (the warning names the first column that
differs and what csv reads there); every other line gets no warning.
"""

from __future__ import annotations

import csv
import io
import re
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from sharedtask.spec import load_task
from sharedtask.validate import validate

TASK = "arqmath-3-task3"
RUNS = settings(max_examples=1000, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
SWALLOWED = re.compile(r"^topic (.*) will be swallowed by (.*)'s answer: line (\d+) is read")

# pieces that exercise every state of the csv parser: a quote opening a field, closing it,
# doubled inside it, followed by text; tabs inside and outside quotes; plain text
_PIECES = ['"', '"', '""', "a", "b c", " ", "\t", "$x$", "'"]


@st.composite
def field_text(draw, quoted_start: bool) -> str:
    pieces = draw(st.lists(st.sampled_from(_PIECES), min_size=1, max_size=6))
    text = "".join(pieces)
    if quoted_start and draw(st.booleans()):
        text = '"' + text
    return text


@st.composite
def task3_run(draw) -> str:
    lines = []
    for i in range(draw(st.integers(1, 7))):
        if draw(st.integers(0, 12)) == 0:
            lines.append("")  # a blank line
            continue
        sources = draw(st.sampled_from(["s", "s", '"s"', '"s', 's"']))  # a quote in another column too
        answer = draw(field_text(quoted_start=True))
        lines.append(f"A.30{i + 1}\t1\t1.0\ttag\t{sources}\t{answer}")
    return "".join(line + "\n" for line in lines)


def _oracle(text: str) -> tuple[set[tuple[int, int, str]], dict[int, tuple[int, list[str], list[str]]]]:
    """From csv.reader: {(first line, swallowed line, topic written there)} and
    {first line: (1-based first differing column, written fields, csv's fields)} for one-line misreads."""
    physical = text.split("\n")[:-1]
    reader = csv.reader(io.StringIO(text, newline=""), delimiter="\t")
    swallowed, misread = set(), {}
    last = 0
    for fields in reader:
        first, end = last + 1, reader.line_num
        last = end
        taken = {(first, n, physical[n - 1].split("\t", 1)[0].strip()) for n in range(first + 1, end + 1)
                 if physical[n - 1].strip()}
        if taken:
            swallowed |= taken
            continue
        written = physical[first - 1].split("\t")
        if not fields and written == [""]:
            continue
        if fields != written:
            column = next(i for i in range(max(len(fields), len(written)))
                          if i >= len(fields) or i >= len(written) or fields[i] != written[i]) + 1
            misread[first] = (column, written, fields)
    return swallowed, misread


@RUNS
@given(task3_run())
def test_run_answer_quote_is_what_csv_reader_does(text: str) -> None:
    swallowed, misread = _oracle(text)
    event("swallows lines" if swallowed else "no swallowing")
    event("a one-line misread" if misread else "no misread")
    with tempfile.TemporaryDirectory() as tmp:
        run = Path(tmp) / "run.tsv"
        run.write_text(text, encoding="utf-8")
        result = validate(run, load_task(TASK), limit_per_code=10**6)
    found = [f for f in result.findings if f.code == "RUN-ANSWER-QUOTE"]
    got_swallowed, got_misread = set(), {}
    for f in found:
        m = SWALLOWED.match(f.message)
        if m:
            got_swallowed.add((f.line, int(m.group(3)), m.group(1) if m.group(1) != "(blank line)" else ""))
        else:
            assert f.line not in got_misread
            got_misread[f.line] = f
    assert got_swallowed == swallowed
    assert set(got_misread) == set(misread)
    for line, (column, written, fields) in misread.items():
        f = got_misread[line]
        assert f.message.startswith(f"topic {written[0]}: column {column} is written {written[column - 1]!r}")
        if len(fields) == len(written):
            assert f"read it as {fields[column - 1]!r}:" in f.message
        else:
            assert f"read it as {len(fields)} field(s) instead of {len(written)}, from there {fields[column - 1:]!r}" \
                in f.message
        assert f.column == 1 + sum(len(w) + 1 for w in written[:column - 1])


def test_a_quote_closed_on_its_line_is_named_with_what_csv_reads(tmp_path: Path) -> None:
    """The shapes the earlier warning missed: the quote closes on its line, so nothing is
    swallowed, but the answer the scripts see is not the one written."""
    run = tmp_path / "run.tsv"
    run.write_text('A.301\t1\t1\tt\ts\t"Closed" start\nA.302\t1\t1\tt\ts\t"a""b"\nA.303\t1\t1\tt\ts\t"x\ty"\n'
                   'A.304\t1\t1\tt\ts\tin "the" middle\n', encoding="utf-8")
    found = [f for f in validate(run, load_task(TASK)).findings if f.code == "RUN-ANSWER-QUOTE"]
    assert [(f.line, f.column) for f in found] == [(1, 15), (2, 15), (3, 15)]
    assert "read it as 'Closed start':" in found[0].message
    assert "read it as 'a\"b':" in found[1].message
    assert "read it as 6 field(s) instead of 7" in found[2].message
    from sharedtask.evaluate import evaluate

    truth = tmp_path / "truth"
    truth.mkdir()
    (truth / "qrels.tsv").write_text("A.301\t0\td_1\t2\n")
    (truth / "answers.tsv").write_text("answer_id\ttopic\ttext\n")
    notes = evaluate(run, TASK, truth_dir=truth, measures=["ar", "p1"]).notes
    assert any(n.startswith("3 line(s) read as the official scripts' csv quoting reads them") and
               "A.301 (line 1, column 6), A.302 (line 2, column 6), A.303 (line 3, column 6)" in n for n in notes), notes


def _csv_stop_line(path: Path) -> int:
    """The line where csv.reader with its default limit (the official scripts') raises."""
    before = csv.field_size_limit(128 * 1024)
    try:
        with open(path, newline="", encoding="utf-8") as fh:
            reader = csv.reader(fh, delimiter="\t")
            with pytest.raises(csv.Error, match="field larger than field limit"):
                for _ in reader:
                    pass
            return reader.line_num
    finally:
        csv.field_size_limit(before)


@pytest.mark.parametrize("process_limit", [128 * 1024, 64 << 20])
def test_where_csv_stops_the_scripts_stop(tmp_path: Path, process_limit: int) -> None:
    """An answer opening a quote that runs past csv's field size limit (131,072 characters):
    csv.reader raises there, and so do the official scripts, which keep the default limit. The
    same line is named when this process runs with a larger limit (the formula reader's 64 MiB)."""
    run = tmp_path / "run.tsv"
    body = "".join(f"A.{400 + i}\t1\t1\tt\ts\t{'word ' * 100}\n" for i in range(300))
    run.write_text('A.301\t1\t1\tt\ts\tfine\nA.302\t1\t1\tt\ts\t"opens\n' + body, encoding="utf-8")
    expected = _csv_stop_line(run)
    before = csv.field_size_limit(process_limit)
    try:
        found = [f for f in validate(run, load_task(TASK), limit_per_code=10**6).findings
                 if f.code == "RUN-ANSWER-QUOTE"]
        from sharedtask.errors import FormatError
        from sharedtask.evaluate import evaluate

        truth = tmp_path / "truth"
        truth.mkdir()
        (truth / "qrels.tsv").write_text("A.301\t0\t1\t2\n")
        with pytest.raises(FormatError) as refused:
            evaluate(run, TASK, truth_dir=truth, measures=["ar", "p1"])
    finally:
        csv.field_size_limit(before)
    assert len(found) == 1 and found[0].line == expected
    assert "stop reading the run here" in found[0].message and "field larger than field limit (131072)" in found[0].message
    assert refused.value.location.line == expected and "the scripts stop there" in refused.value.message
