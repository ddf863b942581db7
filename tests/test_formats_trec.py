"""TREC / ARQMath runs and qrels: hand-written fixtures in the official formats."""

from __future__ import annotations

import gzip
import math
import os
from pathlib import Path

import pytest

from sharedtask.errors import FormatError
from sharedtask.formats import (
    Qrel,
    RunRow,
    detect_layout,
    load_qrels_dict,
    load_run_dict,
    read_qrels,
    read_run,
    write_qrels,
    write_run,
)

FIX = Path(__file__).parent / "fixtures" / "formats"
TREC = FIX / "trec"
BAD = FIX / "malformed"


def test_touche_run_space_separated_with_tie() -> None:
    rows = list(read_run(TREC / "touche-run.txt", "trec"))
    assert [(r.topic, r.doc, r.rank, r.score, r.tag, r.line) for r in rows] == [
        ("1", "Sb38112c8-A443a9828", 1, 17.25, "myrun", 1),
        ("1", "S1c0e2ec2-A9d7b4a5e", 2, 17.25, "myrun", 2),
        ("1", "Sf3d7e1a0-A00000001", 3, 9.0, "myrun", 3),
        ("2", "Sb38112c8-A443a9828", 1, -0.35, "myrun", 4),
    ]


def test_tabs_blank_line_and_nan_score() -> None:
    reader = read_run(TREC / "touche-run-tabs.txt")
    rows = list(reader)
    assert reader.layout == "trec"
    assert reader.blank_lines == 1
    assert [r.line for r in rows] == [1, 3]
    assert math.isnan(rows[1].score)


def test_arqmath_task1_five_columns() -> None:
    reader = read_run(TREC / "arqmath-task1.tsv")
    rows = list(reader)
    assert reader.layout == "arqmath-task1"
    assert not reader.lenient_q0
    assert rows[0] == RunRow("A.301", "2963391", 1, 12.5, "TeamA-task1-run1-auto-both-P", 1)
    assert rows[2].score == 3.0 and rows[2].topic == "A.302"


def test_arqmath_task1_six_column_lenient_variant_is_flagged() -> None:
    reader = read_run(TREC / "arqmath-task1-6col.tsv", "arqmath-task1")
    rows = list(reader)
    assert reader.lenient_q0 and reader.q0_lines == 2
    assert [(r.doc, r.rank, r.score, r.tag) for r in rows] == [("2963391", 1, 12.5, "TeamA"), ("2963392", 2, 11.0, "TeamA")]


def test_arqmath_task2_has_formula_and_post() -> None:
    reader = read_run(TREC / "arqmath-task2.tsv")
    rows = list(reader)
    assert reader.layout == "arqmath-task2"
    assert rows[0].doc == "12345" and rows[0].post_id == "2963391" and rows[0].score == 0.9
    assert rows[2] == RunRow("B.302", "777", 1, 0.5, "TeamB-task2", 3, "1049861")


def test_arqmath_task3_answer_keeps_spaces() -> None:
    reader = read_run(TREC / "arqmath-task3.tsv")
    rows = list(reader)
    assert reader.layout == "arqmath-task3"
    assert rows[0].sources == "2963391,1049861"
    assert rows[0].answer == r"The sum is $\sum_{i=1}^n i = \frac{n(n+1)}{2}$, by induction."
    assert rows[0].doc == "" and rows[0].rank == 1 and rows[0].tag == "TeamC-task3-gen"
    # CRLF stripped, inner and trailing spaces of the answer kept, empty sources allowed
    assert rows[1].answer == "I do not   know.  " and rows[1].sources == ""


@pytest.mark.parametrize(
    ("line", "layout"),
    [
        ("1 Q0 doc 1 2.0 tag", "trec"),
        ("A.1\t5\t1\t2.0\ttag", "arqmath-task1"),
        ("A.1 Q0 5 1 2.0 tag", "arqmath-task1"),
        ("B.1\t5\t6\t1\t2.0\ttag", "arqmath-task2"),
        ("A.301\t1\t1.0\ttag\t5\tan answer with words", "arqmath-task3"),
        ("A.301\t1\t1.0\ttag\t5\tone", "arqmath-task3"),
        ("7\t5\t6\t1\t2.0\ttag", "arqmath-task2"),
    ],
)
def test_detect_layout(line: str, layout: str) -> None:
    assert detect_layout(line) == layout


def test_qrels_crlf_tabs() -> None:
    qrels = list(read_qrels(TREC / "qrels-crlf.tsv"))
    assert qrels == [
        Qrel("A.301", "0", "2963391", 3, 1),
        Qrel("A.301", "0", "2963392", 0, 2),
        Qrel("A.302", "0", "1049861", 2, 3),
    ]


def test_qrels_float_relevance_and_q0() -> None:
    qrels = list(read_qrels(TREC / "qrels-float.txt"))
    assert [(q.iteration, q.rel) for q in qrels] == [("Q0", 2), ("0", -2), ("0", 0), ("0", 5)]
    assert all(type(q.rel) is int for q in qrels)


def test_load_dicts_match_streaming_readers() -> None:
    assert load_qrels_dict(TREC / "qrels-float.txt") == {
        "1": {"Sb38112c8-A443a9828": 2, "S1c0e2ec2-A9d7b4a5e": -2},
        "2": {"Sb38112c8-A443a9828": 0, "Sf3d7e1a0-A00000001": 5},
    }
    assert load_run_dict(TREC / "touche-run.txt") == {
        "1": {"Sb38112c8-A443a9828": 17.25, "S1c0e2ec2-A9d7b4a5e": 17.25, "Sf3d7e1a0-A00000001": 9.0},
        "2": {"Sb38112c8-A443a9828": -0.35},
    }
    assert load_run_dict(TREC / "arqmath-task1-6col.tsv") == {"A.301": {"2963391": 12.5, "2963392": 11.0}}
    assert load_run_dict(TREC / "arqmath-task2.tsv")["B.301"] == {"12345": 0.9, "12346": 0.8}


def test_load_run_dict_duplicates(tmp_path: Path) -> None:
    run = tmp_path / "run.txt"
    run.write_text("1 Q0 d 1 3.0 r\n1 Q0 e 2 2.0 r\n1 Q0 d 3 1.0 r\n")
    assert load_run_dict(run, on_duplicate="first") == {"1": {"d": 3.0, "e": 2.0}}
    assert load_run_dict(run, on_duplicate="last") == {"1": {"d": 1.0, "e": 2.0}}
    with pytest.raises(FormatError) as err:
        load_run_dict(run, on_duplicate="error")
    assert err.value.location.line == 3 and "duplicate" in err.value.detail


def test_load_run_dict_refuses_task3() -> None:
    with pytest.raises(FormatError, match="Task 3"):
        load_run_dict(TREC / "arqmath-task3.tsv")


@pytest.mark.parametrize(
    ("name", "layout", "line", "column", "words"),
    [
        ("run-bad-rank.txt", "trec", 3, 9, "integer rank, found 'x'"),
        ("run-bad-score.txt", "auto", 2, 11, "numeric score, found 'high'"),
        ("run-4cols.txt", "trec", 2, None, "expected 6 columns"),
        ("run-comment.txt", "trec", 1, None, "comment lines"),
        ("task1-6col-noq0.tsv", "auto", 2, 5, "Q0 in column 2"),
        ("task3-spaces.tsv", "arqmath-task3", 1, None, "6 tab-separated columns"),
    ],
)
def test_malformed_runs(name: str, layout: str, line: int, column: int | None, words: str) -> None:
    with pytest.raises(FormatError) as err:
        list(read_run(BAD / name, layout))
    assert err.value.location.line == line
    assert err.value.location.column == column
    assert words in str(err.value)
    assert name in str(err.value)


@pytest.mark.parametrize(
    ("name", "layout", "line"),
    [("run-bad-rank.txt", "trec", 3), ("run-bad-score.txt", "auto", 2), ("run-4cols.txt", "trec", 2),
     ("task1-6col-noq0.tsv", "auto", 2)],
)
def test_load_run_dict_reports_same_location(name: str, layout: str, line: int) -> None:
    with pytest.raises(FormatError) as err:
        load_run_dict(BAD / name, layout)
    assert err.value.location.line == line


@pytest.mark.parametrize(
    ("name", "line", "words"),
    [("qrels-fraction.txt", 2, "whole number, found '2.5'"), ("qrels-3cols.txt", 2, "expected 4 columns"),
     ("qrels-text-rel.txt", 1, "integer relevance, found 'high'")],
)
def test_malformed_qrels(name: str, line: int, words: str) -> None:
    for load in (lambda p: list(read_qrels(p)), load_qrels_dict):
        with pytest.raises(FormatError) as err:
            load(BAD / name)
        assert err.value.location.line == line
        assert words in str(err.value)


def test_missing_file_is_a_format_error(tmp_path: Path) -> None:
    with pytest.raises(FormatError, match="cannot open"):
        list(read_run(tmp_path / "nope.txt"))


def test_gzip_and_bom(tmp_path: Path) -> None:
    data = (TREC / "qrels-crlf.tsv").read_bytes()
    gz = tmp_path / "qrels.tsv.gz"
    gz.write_bytes(gzip.compress(b"\xef\xbb\xbf" + data))
    assert [q.doc for q in read_qrels(gz)] == ["2963391", "2963392", "1049861"]


def test_invalid_utf8_names_the_line(tmp_path: Path) -> None:
    bad = tmp_path / "run.txt"
    bad.write_bytes(b"1 Q0 d 1 1.0 r\n1 Q0 \xff 2 0.5 r\n")
    with pytest.raises(FormatError, match="UTF-8"):
        list(read_run(bad))


@pytest.mark.parametrize("layout", ["trec", "arqmath-task1", "arqmath-task2", "arqmath-task3"])
def test_write_run_round_trip(tmp_path: Path, layout: str) -> None:
    src = {"trec": "touche-run.txt", "arqmath-task1": "arqmath-task1.tsv",
           "arqmath-task2": "arqmath-task2.tsv", "arqmath-task3": "arqmath-task3.tsv"}[layout]
    rows = list(read_run(TREC / src, layout))
    out = tmp_path / ("run.txt.gz" if layout == "trec" else "run.tsv")
    assert write_run(out, rows, layout) == len(rows)
    again = list(read_run(out, "auto"))
    strip = lambda rs: [r._replace(line=0, answer=(r.answer or "").strip() or None, sources=r.sources or None)
                        for r in rs]  # noqa: E731
    assert strip(again) == strip(rows)
    if layout != "trec":
        assert "\t" in out.read_text() and " Q0 " not in out.read_text()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temp file left


def test_write_run_is_atomic_on_error(tmp_path: Path) -> None:
    out = tmp_path / "run.txt"
    out.write_text("old content\n")
    bad = [RunRow("1", "d", 1, 1.0, "r", 0), RunRow("1", "has space", 2, 0.5, "r", 0)]
    with pytest.raises(ValueError):
        write_run(out, bad, "trec")
    assert out.read_text() == "old content\n"
    assert os.listdir(tmp_path) == ["run.txt"]


def test_write_qrels_round_trip(tmp_path: Path) -> None:
    rows = list(read_qrels(TREC / "qrels-float.txt"))
    out = tmp_path / "qrels.txt"
    write_qrels(out, rows, sep="\t")
    assert out.read_text().splitlines()[0] == "1\tQ0\tSb38112c8-A443a9828\t2"
    assert [q[:4] for q in read_qrels(out)] == [q[:4] for q in rows]


def test_load_run_dict_gzip_bom_and_leading_blank_lines(tmp_path: Path) -> None:
    gz = tmp_path / "run.txt.gz"
    gz.write_bytes(gzip.compress(b"\xef\xbb\xbf\r\n\n" + (TREC / "arqmath-task1.tsv").read_bytes()))
    assert load_run_dict(gz) == {"A.301": {"2963391": 12.5, "2963392": 11.0}, "A.302": {"1049861": 3.0}}
    with pytest.raises(FormatError) as err:
        gz.write_bytes(gzip.compress(b"\n" + (BAD / "run-bad-rank.txt").read_bytes()))
        load_run_dict(gz)
    assert err.value.location.line == 4
