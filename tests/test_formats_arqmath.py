"""ARQMath Posts XML, topics XML, formula index TSV (v2/v3) and Task 3 answer texts."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import pytest

from sharedtask.errors import FormatError
from sharedtask.formats import formulas
from sharedtask.formats import (
    Answer,
    Question,
    formula_spans,
    html_to_text,
    load_visual_ids,
    read_answers_tsv,
    read_arqmath_topics,
    read_formula_index,
    read_posts,
)

FIX = Path(__file__).parent / "fixtures" / "formats"
ARQ = FIX / "arqmath"


def test_posts_questions_and_answers() -> None:
    posts = list(read_posts(ARQ / "Posts.xml"))
    assert [type(p).__name__ for p in posts] == ["Question", "Answer", "Answer", "Question"]  # wiki row skipped
    q = posts[0]
    assert isinstance(q, Question)
    assert (q.id, q.score, q.accepted_answer_id, q.answer_count, q.owner_user_id) == ("1", 13, "3", 2, "10")
    assert q.tags == ("summation", "induction")
    assert q.title == 'Sum of the first <span class="math-container" id="0">$n$</span> integers'
    assert q.body.startswith("<p>How do I prove <span") and q.body.endswith("</p>\n")
    a = posts[1]
    assert isinstance(a, Answer)
    assert (a.id, a.parent_id, a.score, a.line) == ("2", "1", 5, 4)
    assert posts[2].score == -1
    assert posts[3].tags == ("number-theory", "irrational-numbers")
    assert posts[3].accepted_answer_id is None


def test_posts_gzip(tmp_path: Path) -> None:
    gz = tmp_path / "Posts.xml.gz"
    gz.write_bytes(gzip.compress((ARQ / "Posts.xml").read_bytes()))
    assert [p.id for p in read_posts(gz)] == ["1", "2", "3", "5"]


def test_formula_spans_from_posts() -> None:
    q, a, *_ = read_posts(ARQ / "Posts.xml")
    assert formula_spans(q.body) == [("1", r"\sum_{i=1}^n i = \frac{n(n+1)}{2}"), ("2", r"n \ge 1")]
    # $$…$$ stripped, HTML entity inside the LaTeX unescaped
    assert formula_spans(a.body) == [("3", "a < b")]
    assert formula_spans(q.title) == [("0", "n")]
    assert formula_spans("<p>no math</p>") == []
    assert formula_spans('<span class="math-container">x</span>') == [(None, "x")]


def test_html_to_text() -> None:
    _, a, *_ = read_posts(ARQ / "Posts.xml")
    assert html_to_text(a.body) == "Use induction: $a < b$.\nDone."
    assert html_to_text(a.body, math="raw") == "Use induction: a < b .\nDone."
    assert html_to_text("<p>x &amp; y<br/>z</p>") == "x & y\nz"


@pytest.mark.parametrize(
    ("name", "line", "words"),
    [
        ("Posts-truncated.xml", 5, "malformed XML: unclosed token"),
        ("Posts-bad-score.xml", 4, "Score must be an integer, found 'many'"),
        ("Posts-no-parent.xml", 3, "answer 2 has no ParentId"),
    ],
)
def test_malformed_posts(name: str, line: int, words: str) -> None:
    with pytest.raises(FormatError) as err:
        list(read_posts(ARQ / name))
    assert err.value.location.line == line
    assert words in str(err.value)


def test_truncated_posts_yield_complete_rows_first() -> None:
    seen = []
    with pytest.raises(FormatError):
        for post in read_posts(ARQ / "Posts-truncated.xml"):
            seen.append(post.id)
    assert seen == ["1", "2"]


def test_topics_task1_html_unescaped() -> None:
    topics = read_arqmath_topics(ARQ / "topics-task1.xml")
    assert [t.number for t in topics] == ["A.301", "A.302"]
    t = topics[0]
    assert t.title == 'Is <span class="math-container" id="q_1">$x &lt; y$</span> decidable?'
    assert t.question.startswith('<p>Let <span class="math-container" id="q_2">$f(x) = x^2$</span>.')
    assert formula_spans(t.question) == [("q_2", "f(x) = x^2"), ("q_3", "f(-1) = 1")]
    assert formula_spans(t.title) == [("q_1", "x < y")]
    assert html_to_text(t.question).endswith('I tried "expanding".')
    assert t.tags == ("algebra-precalculus", "functions")
    assert t.formula_id is None and t.latex is None


def test_topics_task2_formula() -> None:
    topics = read_arqmath_topics(ARQ / "topics-task2.xml")
    assert [(t.number, t.formula_id, t.latex) for t in topics] == [
        ("B.301", "q_2", "f(x) = x^2"),
        ("B.302", "q_7", r"\int_0^1 x\,dx"),  # $…$ stripped defensively
    ]
    assert topics[1].tags == ("calculus", "integration")


def test_malformed_topics() -> None:
    with pytest.raises(FormatError) as err:
        read_arqmath_topics(ARQ / "topics-unclosed.xml")
    assert err.value.location.line == 9 and "mismatched tag" in str(err.value)
    with pytest.raises(FormatError) as err:
        read_arqmath_topics(ARQ / "topics-no-number.xml")
    assert err.value.location.record == "topic #2" and "number" in str(err.value)
    with pytest.raises(FormatError, match="expected <Topics>"):
        read_arqmath_topics(FIX / "touche" / "topics-2020.xml")


def test_formula_index_v3_directory_sorted() -> None:
    recs = list(read_formula_index(ARQ / "formulas"))
    assert [r.id for r in recs] == ["1", "2", "3", "9", "4"]  # part1 before part2
    r3 = recs[2]
    assert (r3.post_id, r3.thread_id, r3.type, r3.old_visual_id, r3.visual_id, r3.issue) == (
        "2", "1", "answer", "19", "20", "v")
    assert r3.formula == 'a\tb "quoted" c'
    assert r3.comment_id is None
    r9 = recs[3]
    assert (r9.type, r9.comment_id, r9.issue, r9.formula) == ("comment", "44", "d", "x\ny")
    assert recs[0].issue == ""


def test_formula_index_glob_and_file() -> None:
    assert [r.id for r in read_formula_index(str(ARQ / "formulas" / "*part2.tsv"))] == ["4"]
    assert len(list(read_formula_index(ARQ / "formulas" / "latex_representation_v3_part1.tsv"))) == 4


def test_formula_index_v2() -> None:
    recs = list(read_formula_index(ARQ / "formulas-v2.tsv"))
    assert [(r.id, r.visual_id, r.formula) for r in recs] == [
        ("1", "17", r"\sum_{i=1}^n i"), ("3", "20", "a\tb"), ("5", None, "x")]
    assert recs[0].old_visual_id is None and recs[0].issue is None and recs[0].comment_id is None


def test_formula_index_huge_field(tmp_path: Path) -> None:
    big = "x^{" * 100_000 + "}" * 100_000  # 400 KB, beyond csv's default 128 KiB cell limit
    path = tmp_path / "big.tsv"
    path.write_text("id\tpost_id\tthread_id\ttype\tvisual_id\tformula\n"
                    f"7\t1\t1\tanswer\t3\t\"{big}\"\n8\t1\t1\tanswer\t4\ty\n")
    recs = list(read_formula_index(path))
    assert recs[0].formula == big and recs[1].formula == "y"


def test_visual_id_map() -> None:
    assert load_visual_ids(ARQ / "formulas") == {"1": "17", "2": "18", "3": "20", "9": "21", "4": "22"}
    assert load_visual_ids(ARQ / "formulas", only={"3", "4", "404"}) == {"3": "20", "4": "22"}


def test_formula_index_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(FormatError) as err:
        list(read_formula_index(ARQ / "formulas-bad-header.tsv"))
    assert err.value.location.line == 1 and "v3 header" in str(err.value)
    with pytest.raises(FormatError) as err:
        list(read_formula_index(ARQ / "formulas-short-row.tsv"))
    assert err.value.location.line == 3 and "expected 6 tab-separated fields, found 4" in str(err.value)
    with pytest.raises(FormatError, match="no \\*.tsv files"):
        list(read_formula_index(tmp_path))
    with pytest.raises(FormatError, match="no file matches"):
        list(read_formula_index(str(tmp_path / "*.tsv")))
    stray = tmp_path / "stray-quote.tsv"
    shutil.copy(ARQ / "formulas-v2.tsv", stray)
    with stray.open("a") as f:
        f.write("6\t1\t1\tanswer\t1\t\"unterminated\n" + "7\t1\t1\tanswer\t1\tx\n" * 50)
    monkeypatch.setattr(formulas, "FIELD_LIMIT", 100)
    with pytest.raises(FormatError) as err:
        list(read_formula_index(stray))
    assert "malformed TSV: field larger than field limit (100)" in str(err.value)
    monkeypatch.undo()
    formulas._raise_field_limit()  # csv's limit is process-global: restore it for other tests


def test_answers_tsv() -> None:
    answers = list(read_answers_tsv(ARQ / "answers.tsv"))
    assert [(a.answer_id, a.topic) for a in answers] == [("1", "A.301"), ("2", "A.301"), ("3", "A.302")]
    assert answers[1].text == 'Two\tcolumns "quoted" and\na line break'
