"""The run validator: every rule with a failing and a passing case.

Runs are written as bytes into tmp files in the official layouts; expectations come
from the format references (docs/formats.md, docs/evaluation.md) and, for
trec_eval's tie handling, from pytrec_eval itself.
"""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from sharedtask.errors import SharedTaskError
from sharedtask.findings import Severity
from sharedtask.spec import load_task
from sharedtask.validate import engine, find_run_file, validate

FIXTURES = Path(__file__).parent / "fixtures" / "runs"
TOUCHE = "touche-2021-task1"


def doc(i: int) -> str:
    return f"S{i:08x}-A{i:08x}"


def touche_lines(topics: int = 5, depth: int = 10) -> list[str]:
    """A valid Touché run: distinct, decreasing scores, ranks 1..n, one tag."""
    out = []
    for t in range(51, 51 + topics):
        for r in range(1, depth + 1):
            out.append(f"{t} Q0 {doc(t * 100 + r)} {r} {100 - r * 1.5:.2f} tag")
    return out


def write(tmp_path: Path, lines: list[str] | bytes, name: str = "run.txt") -> Path:
    path = tmp_path / name
    data = lines if isinstance(lines, bytes) else ("\n".join(lines) + "\n").encode()
    path.write_bytes(data)
    return path


def check(tmp_path: Path, lines: list[str] | bytes, task: str = TOUCHE, name: str = "run.txt", **kw):  # noqa: ANN201
    return validate(write(tmp_path, lines, name), load_task(task), **kw)


def by_code(result, code: str) -> list:  # noqa: ANN001
    return [f for f in result.findings if f.code == code]


# ------------------------------------------------------------- the valid baselines


def test_valid_touche_run_has_no_errors_or_warnings(tmp_path: Path) -> None:
    result = check(tmp_path, touche_lines())
    assert result.valid
    assert [f for f in result.findings if f.severity is not Severity.INFO] == []
    assert result.stats.topics == 5 and result.stats.data_lines == 50 and result.stats.max_depth == 10


@pytest.mark.parametrize(
    ("fixture", "task", "input_dir"),
    [
        ("touche-2021-valid.txt", "touche-2021-task1", "touche-2021"),
        ("team-task1-bm25-auto-both-P.tsv", "arqmath-3-task1", "arqmath-task1"),
        ("team-task2-tangent-auto-math-P.tsv", "arqmath-3-task2", "arqmath-task2"),
        ("team-task3-qa-auto-both-generate-P.tsv", "arqmath-3-task3", "arqmath-task3"),
    ],
)
def test_fixture_runs_are_clean_against_the_sample_datasets(fixture: str, task: str, input_dir: str) -> None:
    spec = load_task(task)
    result = validate(FIXTURES / fixture, spec, input_dir=spec.sample_dir / "input")
    assert result.valid, result.findings
    assert [f.code for f in result.findings if f.severity is not Severity.INFO] == []


# ------------------------------------------------------------------- structure

STRUCTURE_CASES = [
    # (code, severity, bytes transform of the valid run)
    ("RUN-BOM", Severity.ERROR, lambda b: b"\xef\xbb\xbf" + b),
    ("RUN-CR", Severity.ERROR, lambda b: b.replace(b" Q0 ", b" Q0\r", 1)),
    ("RUN-CRLF", Severity.WARNING, lambda b: b.replace(b"\n", b"\r\n")),
    ("RUN-CONTROL-CHAR", Severity.ERROR, lambda b: b.replace(b"tag\n", b"ta\x00g\n", 1)),
    ("RUN-ENCODING", Severity.ERROR, lambda b: b.replace(b"tag\n", b"t\xe4g\n", 1)),
    ("RUN-UNICODE-SPACE", Severity.ERROR, lambda b: b.replace(b" Q0 ", " Q0\u00a0".encode(), 1)),
    ("RUN-TRAILING-WHITESPACE", Severity.WARNING, lambda b: b.replace(b"tag\n", b"tag \n", 1)),
    ("RUN-LEADING-WHITESPACE", Severity.WARNING, lambda b: b" " + b),
    ("RUN-MIXED-SEPARATORS", Severity.WARNING, lambda b: b.replace(b" Q0 ", b"\tQ0\t", 3)),
    ("RUN-NO-FINAL-NEWLINE", Severity.WARNING, lambda b: b.rstrip(b"\n")),
    ("RUN-BLANK-LINE", Severity.ERROR, lambda b: b.replace(b"\n", b"\n\n", 1)),
    ("RUN-COMMENT", Severity.ERROR, lambda b: b"# my run\n" + b),
    ("RUN-COLUMNS", Severity.ERROR, lambda b: b.replace(b" tag\n", b"\n", 1)),
]


@pytest.mark.parametrize(("code", "severity", "mutate"), STRUCTURE_CASES, ids=[c[0] for c in STRUCTURE_CASES])
def test_structure_rules(tmp_path: Path, code: str, severity: Severity, mutate) -> None:  # noqa: ANN001
    base = ("\n".join(touche_lines()) + "\n").encode()
    good = check(tmp_path, base)
    assert not by_code(good, code)
    bad = check(tmp_path, mutate(base), name="bad.txt")
    found = by_code(bad, code)
    assert found, bad.findings
    assert found[0].severity is severity
    assert found[0].hint
    assert bad.valid is (severity is not Severity.ERROR) or code in ("RUN-CONTROL-CHAR",)


def test_structure_findings_carry_line_and_column(tmp_path: Path) -> None:
    lines = touche_lines()
    data = ("\n".join(lines) + "\n").encode().replace(b"tag\n", b"t\xe4g\n", 3)
    result = check(tmp_path, data)
    enc = by_code(result, "RUN-ENCODING")
    assert [(f.line, f.column) for f in enc] == [(1, len(lines[0]) - 1), (2, len(lines[1]) - 1),
                                                  (3, len(lines[2]) - 1)]


def test_gzip_run_is_read_and_broken_gzip_reported(tmp_path: Path) -> None:
    data = ("\n".join(touche_lines()) + "\n").encode()
    good = tmp_path / "run.txt.gz"
    good.write_bytes(gzip.compress(data))
    result = validate(good, load_task(TOUCHE))
    assert result.valid and result.stats.gzip and result.stats.data_lines == 50
    broken = tmp_path / "broken.txt.gz"
    broken.write_bytes(gzip.compress(data)[:-30])
    bad = validate(broken, load_task(TOUCHE))
    assert by_code(bad, "RUN-GZIP") and not bad.valid


# ----------------------------------------------------------------------- fields


def _replace_field(lines: list[str], line: int, col: int, value: str) -> list[str]:
    out = list(lines)
    parts = out[line].split(" ")
    parts[col] = value
    out[line] = " ".join(parts)
    return out


FIELD_CASES = [
    # (code, severity, line, column, value)
    ("RUN-Q0", Severity.WARNING, 3, 1, "0"),
    ("RUN-RANK", Severity.ERROR, 3, 3, "4.0"),
    ("RUN-RANK-FORMAT", Severity.WARNING, 3, 3, "04"),
    ("RUN-SCORE", Severity.ERROR, 3, 4, "high"),
    ("RUN-SCORE-NONFINITE", Severity.ERROR, 3, 4, "nan"),
    ("RUN-SCORE-SCIENTIFIC", Severity.INFO, 3, 4, "9.55e1"),  # every scorer reads it: a note
    ("RUN-SCORE-FORMAT", Severity.ERROR, 3, 4, "9_5.5"),
    ("RUN-DOC-ID", Severity.ERROR, 3, 2, "clueweb12-0000"),
    ("RUN-TOPIC-ID", Severity.ERROR, 0, 0, "051"),
    ("RUN-TAG", Severity.WARNING, 0, 5, "tag/with/slashes"),
    ("RUN-TAG-MIXED", Severity.WARNING, 7, 5, "other"),
]


@pytest.mark.parametrize(("code", "severity", "line", "col", "value"), FIELD_CASES, ids=[c[0] for c in FIELD_CASES])
def test_field_rules(tmp_path: Path, code: str, severity: Severity, line: int, col: int, value: str) -> None:
    lines = touche_lines()
    assert not by_code(check(tmp_path, lines), code)
    bad = check(tmp_path, _replace_field(lines, line, col, value), name="bad.txt")
    found = by_code(bad, code)
    assert found, bad.findings
    assert found[0].severity is severity
    if code not in ("RUN-Q0", "RUN-TAG-MIXED"):
        assert found[0].line == line + 1


def test_score_column_points_at_the_field(tmp_path: Path) -> None:
    lines = _replace_field(touche_lines(), 0, 4, "x")
    (f,) = by_code(check(tmp_path, lines), "RUN-SCORE")
    assert f.column == lines[0].index(" x ") + 2


# ---------------------------------------------------------------------- ranking


def test_duplicate_doc_is_an_error_with_both_lines(tmp_path: Path) -> None:
    lines = touche_lines()
    lines[3] = lines[3].replace(doc(5104), doc(5102))
    result = check(tmp_path, lines)
    (f,) = by_code(result, "RUN-DUPLICATE-DOC")
    assert f.severity is Severity.ERROR and f.line == 4 and "line 2" in f.message
    assert not result.valid


def test_ranks_start_gap_duplicate_order(tmp_path: Path) -> None:
    lines = touche_lines()
    start = [ln.replace(f" {r} ", f" {r + 1} ") if ln.startswith("51 ") else ln
             for ln, r in zip(lines, [i % 10 + 1 for i in range(50)])]
    assert by_code(check(tmp_path, start), "RUN-RANK-START")
    gap = _replace_field(lines, 9, 3, "12")
    assert by_code(check(tmp_path, gap, name="g.txt"), "RUN-RANK-GAP")
    dup = _replace_field(lines, 5, 3, "5")
    f = by_code(check(tmp_path, dup, name="d.txt"), "RUN-RANK-DUPLICATE")
    assert f and f[0].severity is Severity.ERROR  # Touché's scorer sorts by rank
    swapped = list(lines)
    swapped[1], swapped[2] = swapped[2], swapped[1]  # ranks and scores still agree, file order does not
    res = check(tmp_path, swapped, name="s.txt")
    assert by_code(res, "RUN-RANK-ORDER") and by_code(res, "RUN-SCORE-ORDER")
    assert not by_code(res, "RUN-RANK-SCORE") and res.valid
    for ok in (lines,):
        r = check(tmp_path, ok, name="ok.txt")
        assert not {"RUN-RANK-START", "RUN-RANK-GAP", "RUN-RANK-DUPLICATE", "RUN-RANK-ORDER"} & r.codes()


def test_rank_score_disagreement_is_an_error_for_touche_only(tmp_path: Path) -> None:
    lines = _replace_field(touche_lines(), 3, 4, "99.99")  # rank 4 scores above rank 1
    touche = check(tmp_path, lines)
    (f,) = by_code(touche, "RUN-RANK-SCORE")
    assert f.severity is Severity.ERROR and not touche.valid
    arq = [f"A.{301 + i // 10}\t{1000 + i}\t{i % 10 + 1}\t{100 - (i % 10) * 1.5:.2f}\ttag" for i in range(50)]
    arq[3] = arq[3].replace("95.50", "99.99")
    res = check(tmp_path, arq, task="arqmath-3-task1", name="a.tsv")
    (g,) = by_code(res, "RUN-RANK-SCORE")
    assert g.severity is Severity.WARNING and res.valid


def test_tie_is_reported_with_trec_eval_order_that_pytrec_eval_confirms(tmp_path: Path) -> None:
    import pytrec_eval

    lines = touche_lines()
    # rank 1 and rank 2 of topic 51 tie; rank 1 has the smaller docno, so trec_eval swaps them
    lines[1] = _replace_field(lines, 1, 4, "98.50")[1]
    result = check(tmp_path, lines)
    (tie,) = by_code(result, "RUN-TIE")
    assert tie.severity is Severity.WARNING and result.valid
    assert f"docno descending: {doc(5102)}, {doc(5101)}, but your ranks say {doc(5101)}, {doc(5102)}" in tie.message
    run = {"51": {doc(5101): 98.5, doc(5102): 98.5}}
    qrels = {"51": {doc(5102): 1, doc(5101): 0}}
    rr = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}).evaluate(run)["51"]["recip_rank"]
    assert rr == 1.0  # doc(5102) was ranked first: docno descending, as the finding says


def test_float32_tie_matches_pytrec_eval(tmp_path: Path) -> None:
    import pytrec_eval

    lines = touche_lines()
    lines[0] = _replace_field(lines, 0, 4, "0.1234567892")[0]
    lines[1] = _replace_field(lines, 1, 4, "0.1234567891")[1]
    for i in range(2, 10):
        lines[i] = _replace_field(lines, i, 4, f"0.{10 - i}")[i]
    result = check(tmp_path, lines)
    (f,) = by_code(result, "RUN-FLOAT32-TIE")
    assert not by_code(result, "RUN-TIE")
    assert f"docno descending: {doc(5102)}, {doc(5101)}" in f.message
    run = {"51": {doc(5101): 0.1234567892, doc(5102): 0.1234567891}}
    qrels = {"51": {doc(5102): 1, doc(5101): 0}}
    rr = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}).evaluate(run)["51"]["recip_rank"]
    assert rr == 1.0  # lower double score, yet first: the scores tied as 32-bit floats


def test_depth_limit(tmp_path: Path) -> None:
    ok = touche_lines(topics=3, depth=1000)
    assert not by_code(check(tmp_path, ok), "RUN-DEPTH")
    too_deep = ok[:1000] + [f"51 Q0 {doc(999_999)} 1001 -100 tag"] + ok[1000:]
    (f,) = by_code(check(tmp_path, too_deep, name="deep.txt"), "RUN-DEPTH")
    assert f.severity is Severity.ERROR and f.line == 1001


def test_topics_unknown_and_missing(tmp_path: Path) -> None:
    topics = {str(t) for t in range(51, 60)}
    result = check(tmp_path, touche_lines(), topics=topics)
    assert not by_code(result, "RUN-UNKNOWN-TOPIC")
    (miss,) = by_code(result, "RUN-MISSING-TOPICS")
    assert miss.severity is Severity.WARNING and "56, 57, 58, 59" in miss.message
    bad = check(tmp_path, touche_lines(), topics={"51", "52", "53", "54"}, name="b.txt")
    (unk,) = by_code(bad, "RUN-UNKNOWN-TOPIC")
    assert unk.severity is Severity.ERROR and unk.line == 41


def test_topics_from_the_input_dataset(tmp_path: Path) -> None:
    spec = load_task(TOUCHE)
    result = validate(FIXTURES / "touche-2021-valid.txt", spec, input_dir=spec.sample_dir / "input")
    assert result.stats.topics_expected == result.stats.topics and not by_code(result, "RUN-TOPICS-UNCHECKED")


def test_interleaved_topics_are_validated_correctly(tmp_path: Path) -> None:
    lines = touche_lines(topics=3)
    mixed = lines[0:5] + lines[10:15] + lines[5:10] + lines[15:]
    mixed[12] = mixed[12].replace(doc(5108), doc(5101))  # a duplicate across the two stretches of topic 51
    result = check(tmp_path, mixed)
    assert result.stats.interleaved and by_code(result, "RUN-INTERLEAVED")
    (dup,) = by_code(result, "RUN-DUPLICATE-DOC")
    assert dup.line == 13 and "line 1" in dup.message
    assert not by_code(result, "RUN-RANK-ORDER")  # topic 51 is still in rank order once merged
    grouped = check(tmp_path, lines, name="g.txt")
    assert not grouped.stats.interleaved


def test_tira_minimums_and_size(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert by_code(check(tmp_path, touche_lines()[:4]), "RUN-TIRA-MIN-LINES")
    assert by_code(check(tmp_path, touche_lines(topics=2), name="t.txt"), "RUN-TIRA-MIN-TOPICS")
    assert not by_code(check(tmp_path, touche_lines(topics=3), name="o.txt"), "RUN-TIRA-MIN-TOPICS")
    monkeypatch.setattr(engine, "TIRA_MAX_BYTES", 1000)
    assert by_code(check(tmp_path, touche_lines(), name="big.txt"), "RUN-TIRA-SIZE")
    assert not by_code(check(tmp_path, touche_lines()[:15], name="small.txt"), "RUN-TIRA-SIZE")


def test_empty_run(tmp_path: Path) -> None:
    result = check(tmp_path, b"")
    assert by_code(result, "RUN-EMPTY") and not result.valid


# ---------------------------------------------------------------------- ARQMath


def test_task1_answers_and_separator_and_layout(tmp_path: Path) -> None:
    spec = load_task("arqmath-3-task1")
    base = (FIXTURES / "team-task1-bm25-auto-both-P.tsv").read_text().splitlines()
    question = "11"  # PostTypeId 1 in the sample Posts.xml
    bad = [base[0].replace(base[0].split("\t")[1], question, 1)] + base[1:]
    res = validate(write(tmp_path, bad), spec, input_dir=spec.sample_dir / "input")
    (f,) = by_code(res, "RUN-NOT-ANSWER")
    assert f.line == 1 and not res.valid
    spaced = [ln.replace("\t", " ") for ln in base]
    res = validate(write(tmp_path, spaced, "s.tsv"), spec)
    assert by_code(res, "RUN-SEPARATOR") and not res.valid
    six = [ln.replace("\t", "\tQ0\t", 1) for ln in base]
    res = validate(write(tmp_path, six, "six.tsv"), spec)
    assert res.valid and by_code(res, "RUN-LAYOUT-VARIANT") and not by_code(res, "RUN-TIRA-LAYOUT")
    res = validate(write(tmp_path, base, "five.tsv"), spec)
    assert by_code(res, "RUN-TIRA-LAYOUT")[0].severity is Severity.INFO


def test_task2_formula_ids_and_tira_post_duplicates(tmp_path: Path) -> None:
    spec = load_task("arqmath-3-task2")
    base = (FIXTURES / "team-task2-tangent-auto-math-P.tsv").read_text().splitlines()
    unknown = ["\t".join([p if i != 1 else "99999999" for i, p in enumerate(base[0].split("\t"))])] + base[1:]
    res = validate(write(tmp_path, unknown), spec, input_dir=spec.sample_dir / "input")
    assert by_code(res, "RUN-UNKNOWN-FORMULA") and not res.valid
    cols = base[1].split("\t")
    cols[2] = base[0].split("\t")[2]  # a second formula from the same post
    same_post = [base[0], "\t".join(cols)] + base[2:]
    res = validate(write(tmp_path, same_post, "p.tsv"), spec)
    (f,) = by_code(res, "RUN-TIRA-DUPLICATE-POST")
    assert f.severity is Severity.INFO and res.valid  # legal for Task 2: a note about TIRA's generic check
    dup = [base[0], base[0].replace("\t1\t9.5\t", "\t2\t9.0\t")] + base[2:]
    assert by_code(validate(write(tmp_path, dup, "d.tsv"), spec), "RUN-DUPLICATE-DOC")


TASK3_CASES = [
    ("RUN-ANSWER-COUNT", Severity.ERROR, lambda ls: ls[:1] + [ls[0].replace("\t1\t", "\t2\t", 1)] + ls[1:]),
    ("RUN-ANSWER-LENGTH", Severity.ERROR, lambda ls: [ls[0].rsplit("\t", 1)[0] + "\t" + "é" * 1201] + ls[1:]),
    ("RUN-ANSWER-DOLLAR", Severity.WARNING, lambda ls: [ls[0] + " costs $5"] + ls[1:]),
    ("RUN-ANSWER-RANK", Severity.WARNING, lambda ls: [ls[0].replace("\t1\t", "\t2\t", 1)] + ls[1:]),
    ("RUN-ANSWER-EMPTY", Severity.ERROR, lambda ls: [ls[0].rsplit("\t", 1)[0] + "\t "] + ls[1:]),
]


@pytest.mark.parametrize(("code", "severity", "mutate"), TASK3_CASES, ids=[c[0] for c in TASK3_CASES])
def test_task3_rules(tmp_path: Path, code: str, severity: Severity, mutate) -> None:  # noqa: ANN001
    spec = load_task("arqmath-3-task3")
    base = (FIXTURES / "team-task3-qa-auto-both-generate-P.tsv").read_text().splitlines()
    assert not by_code(validate(write(tmp_path, base), spec), code)
    res = validate(write(tmp_path, mutate(base), "bad.tsv"), spec)
    (f,) = by_code(res, code)
    assert f.severity is severity and f.line == 1 + (code == "RUN-ANSWER-COUNT")


def test_task3_answer_of_exactly_1200_characters_passes(tmp_path: Path) -> None:
    spec = load_task("arqmath-3-task3")
    base = (FIXTURES / "team-task3-qa-auto-both-generate-P.tsv").read_text().splitlines()
    lines = [base[0].rsplit("\t", 1)[0] + "\t" + "é" * 1200] + base[1:]  # 1,200 chars, 2,400 bytes
    assert not by_code(validate(write(tmp_path, lines), spec), "RUN-ANSWER-LENGTH")


def test_file_name_convention(tmp_path: Path) -> None:
    spec = load_task("arqmath-3-task1")
    lines = (FIXTURES / "team-task1-bm25-auto-both-P.tsv").read_text().splitlines()
    assert not validate(write(tmp_path, lines, "team-task1-bm25-auto-both-P.tsv"), spec).codes() & {
        "RUN-FILE-NAME", "RUN-FILE-NAME-CASE"}
    assert by_code(validate(write(tmp_path, lines, "Team-Task1-bm25-Auto-both-p.tsv"), spec), "RUN-FILE-NAME-CASE")
    assert by_code(validate(write(tmp_path, lines, "mysubmission.tsv"), spec), "RUN-FILE-NAME")
    assert not by_code(validate(write(tmp_path, lines, "run.txt"), spec), "RUN-FILE-NAME")  # TIRA's name


# ------------------------------------------------------------------ find_run_file


def test_find_run_file_like_tira(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(SharedTaskError, match="no run.txt"):
        find_run_file(out)
    (out / "run.txt.gz").write_bytes(gzip.compress(b"x\n"))
    assert find_run_file(out) == out / "run.txt.gz"
    (out / "run.txt").write_text("x\n")
    with pytest.raises(SharedTaskError, match="both"):
        find_run_file(out)
    (out / "run.txt.gz").unlink()
    assert find_run_file(out) == out / "run.txt"
    assert find_run_file(out / "run.txt") == out / "run.txt"
    with pytest.raises(SharedTaskError):
        find_run_file(tmp_path / "nope")


# ------------------------------------------------------------ capping and JSON


def test_repeated_findings_are_capped_but_counted(tmp_path: Path) -> None:
    lines = [ln.replace(" tag", " tag ") for ln in touche_lines(topics=5, depth=100)]
    result = validate(write(tmp_path, lines), load_task(TOUCHE), limit_per_code=10)
    assert len(by_code(result, "RUN-TRAILING-WHITESPACE")) == 10
    assert result.omitted["RUN-TRAILING-WHITESPACE"] == 490
    assert result.count(Severity.WARNING) == 500
    data = result.to_json()
    assert data["valid"] is True and data["counts"]["warning"] == 500 and data["stats"]["data_lines"] == 500


def test_omitted_errors_still_make_the_run_invalid(tmp_path: Path) -> None:
    lines = touche_lines(topics=5, depth=20)
    lines = lines + [""] * 30
    result = validate(write(tmp_path, lines), load_task(TOUCHE), limit_per_code=1)
    assert not result.valid and result.omitted["RUN-BLANK-LINE"] == 29


def test_task3_answer_opening_an_unclosed_quote_names_the_topics_it_will_swallow(tmp_path: Path) -> None:
    """The official Task 3 scripts read runs with csv.reader(delimiter='\\t') and default quoting
    (approach0/pya0 f2852c9, evaluate_task3_results_manual.py, lines 17-21): a field that begins with
    " runs to the next ". A quote inside an answer is harmless and not reported."""
    run = tmp_path / "run.tsv"
    run.write_text("A.301\t1\t1\tx\t\tFine \"quoted\" word.\nA.303\t1\t1\tx\t\t\"Quoted start\n"
                   "A.304\t1\t1\tx\t\tFour.\nA.305\t1\t1\tx\t\tFive.\n", encoding="utf-8")
    result = validate(run, load_task("arqmath-3-task3"))
    quotes = [f for f in result.findings if f.code == "RUN-ANSWER-QUOTE"]
    assert [f.message.split(":")[0] for f in quotes] == ["topic A.304 will be swallowed by A.303's answer",
                                                         "topic A.305 will be swallowed by A.303's answer"]
    assert all(f.severity is Severity.WARNING for f in quotes)
    run.write_text("A.301\t1\t1\tx\t\tFine \"quoted\" word.\nA.303\t1\t1\tx\t\t\"Closed\" start\n")
    (closed,) = [f for f in validate(run, load_task("arqmath-3-task3")).findings if f.code == "RUN-ANSWER-QUOTE"]
    assert closed.line == 2 and "read it as 'Closed start'" in closed.message  # nothing swallowed, quotes dropped
