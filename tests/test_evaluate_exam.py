"""EXAM and n-EXAM (Sander and Dietz 2021) with the offline answer-key grader: the grader's
rules one row each, EXAM of the extractive QA baseline's reference run on the bundled
Task 3 sample (checked by reading each answer for each key, below), and n-EXAM on a tiny
truth folder written here."""

from __future__ import annotations

from pathlib import Path

import pytest

from sharedtask.answers.exam import OfflineGrader
from sharedtask.evaluate import evaluate
from sharedtask.formats.jsonl import ExamQuestion

REPO = Path(__file__).resolve().parent.parent
SAMPLE = REPO / "tasks" / "samples" / "arqmath-task3"
REFERENCE = REPO / "baselines" / "reference-runs" / "arqmath-3-task3" / "extractive-qa.txt"


@pytest.mark.parametrize(("key", "text", "answered", "how"), [
    (r"\sqrt{2}", r"so $\sqrt{2}$ is irrational", True, "exact"),
    (r"\frac{1}{1-r}", r"the sum is $\frac{1}{ 1 - r }$", True, "normalised"),  # spaces inside LaTeX
    (r"\int e^{-x^2}\,dx", r"$\int e^{-x^2} dx$", True, "normalised"),  # LaTeX spacing \, dropped
    ("Polar Coordinates", "switch to polar   coordinates", True, "normalised"),  # words ignore case
    (r"\Gamma(n)", r"$\gamma(n)$", False, None),  # LaTeX is case-sensitive
    ("3 : 8", "the ratio is 0.375", True, "numeric"),  # the MathQA option rules read the key
    ("1,000", "about 1000 of them", True, "numeric"),
    ("0.5", "it is 0.4 or 5", False, None),
    (r"\frac{1}{2}", "it is 0.5", True, "math-equivalent"),  # sharedtask.answers.equivalence
    ("(x+1)^2", r"so $y = x^2 + 2x + 1$", True, "math-equivalent"),
    (r"\frac{1}{2}", "it is 0.4", False, None),
    (r"\frac{1}{2}", "10^{10^{10}} or none", False, None),  # only its numerals (10) are read: the tower never
])
def test_offline_grader_rules(key: str, text: str, answered: bool, how: str | None) -> None:
    grader = OfflineGrader()
    assert grader.grade(ExamQuestion("t", "q", "?", key), text) is answered
    assert grader.how.get("q") == how


def test_exam_of_the_extractive_qa_baseline_on_the_sample_by_reading() -> None:
    result = evaluate(REFERENCE, "arqmath-3-task3", truth_dir=SAMPLE / "truth", per_topic=True)
    # A.301: S_n = a(1-r^n)/(1-r) and "geometric" are in the answer, the series sum is not -> 2/3
    # A.302: neither y=x^x, nor ln y = x ln x, nor "derivative" ("differentiation" only) -> 0
    # A.303: \sqrt{3}, not \sqrt{2}; no p/q; "rational" but not "irrational" -> 0
    # A.304: the Gaussian integral and "gaussian", not I^2 = ... -> 2/3
    # A.305: the matrix A and "eigenvalues", not det(A - lambda I) = 0 -> 2/3
    assert result.per_topic["exam"] == pytest.approx(
        {"A.301": 2 / 3, "A.302": 0.0, "A.303": 0.0, "A.304": 2 / 3, "A.305": 2 / 3})
    assert result.scores["exam"] == pytest.approx(0.4)


def _truth(tmp: Path) -> Path:
    truth = tmp / "truth"
    truth.mkdir()
    (truth / "qrels.tsv").write_text("A.1\t0\t1\t3\nA.1\t0\t2\t0\nA.2\t0\t3\t2\nA.3\t0\t4\t1\n", encoding="utf-8")
    (truth / "answers.tsv").write_text(
        "answer_id\ttopic\ttext\n"
        "1\tA.1\tThe geometric series gives $\\frac{1}{1-r}$.\n"  # H: answers both questions of A.1
        "2\tA.1\tNothing here.\n"
        "3\tA.2\tThe value is 0.5, half.\n"  # M: answers A.2's only question
        "4\tA.3\tunrelated\n", encoding="utf-8")  # L: not a gold text; A.3's gold EXAM is 0
    (truth / "exam.jsonl").write_text(
        '{"topic": "A.1", "id": "1", "question": "sum?", "answer": "\\\\frac{1}{1-r}"}\n'
        '{"topic": "A.1", "id": "2", "question": "notion?", "answer": "geometric"}\n'
        '{"topic": "A.2", "id": "3", "question": "value?", "answer": "1/2"}\n'
        '{"topic": "A.3", "id": "4", "question": "what?", "answer": "lemma"}\n', encoding="utf-8")
    return truth


def test_exam_and_n_exam_by_hand(tmp_path: Path) -> None:
    truth = _truth(tmp_path)
    run = tmp_path / "run.tsv"
    # A.1 names the notion only (1 of 2); A.2 states 0.5 (1 of 1); A.3 states the lemma (1 of 1)
    run.write_text("A.1\t1\t1.0\tt\tsrc\tA geometric progression.\n"
                   "A.2\t1\t1.0\tt\tsrc\tIt equals 0.5.\n"
                   "A.3\t1\t1.0\tt\tsrc\tBy the lemma.\n", encoding="utf-8")
    result = evaluate(run, "arqmath-3-task3", truth_dir=truth, per_topic=True)
    assert result.per_topic["exam"] == pytest.approx({"A.1": 0.5, "A.2": 1.0, "A.3": 1.0})
    assert result.scores["exam"] == pytest.approx(2.5 / 3)
    # gold EXAM: A.1 1.0 (answer 1), A.2 1.0 (answer 3), A.3 0 (no H+M answer) -> A.3 drops out
    assert result.per_topic["n_exam"] == pytest.approx({"A.1": 0.5, "A.2": 1.0})


def test_without_an_exam_file_exam_is_skipped_with_a_note(tmp_path: Path) -> None:
    truth = _truth(tmp_path)
    (truth / "exam.jsonl").unlink()
    run = tmp_path / "run.tsv"
    run.write_text("A.1\t1\t1.0\tt\tsrc\tA geometric progression.\n", encoding="utf-8")
    result = evaluate(run, "arqmath-3-task3", truth_dir=truth)
    assert "exam" not in result.scores and any("EXAM and n-EXAM not computed" in n for n in result.notes)


def test_exam_through_the_http_grader_gives_the_offline_values(tmp_path: Path) -> None:
    """The same tiny truth graded by a model behind a REAL loopback server (tests/llm_server.py,
    no mock): it replies with the answer's one line, which states the key exactly when the
    answer does, so the values are those worked out by hand above."""
    from llm_server import ChatServer
    from sharedtask.answers.llm import HttpGrader, HttpGraderConfig

    truth = _truth(tmp_path)
    run = tmp_path / "run.tsv"
    run.write_text("A.1\t1\t1.0\tt\tsrc\tA geometric progression.\n"
                   "A.2\t1\t1.0\tt\tsrc\tIt equals 0.5.\n"
                   "A.3\t1\t1.0\tt\tsrc\tBy the lemma.\n", encoding="utf-8")
    with ChatServer() as server:
        grader = HttpGrader(HttpGraderConfig(base_url=server.url(), model="m", cache_dir=tmp_path / "cache"))
        result = evaluate(run, "arqmath-3-task3", truth_dir=truth, per_topic=True, grader=grader)
    assert result.per_topic["exam"] == pytest.approx({"A.1": 0.5, "A.2": 1.0, "A.3": 1.0})
    assert result.per_topic["n_exam"] == pytest.approx({"A.1": 0.5, "A.2": 1.0})
    assert grader.sent > 0
