"""EXAM Cover and EXAM qrels on ARQMath Task 1 runs, and Kendall's tau-b against the official
measure: expected values worked out by hand on a tiny corpus written here (the arithmetic is
in the comments), one end-to-end CLI run through the HTTP grader against a real loopback
server (tests/llm_server.py), and the bundled sample's reference runs."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from llm_server import ChatServer
from sharedtask.evaluate import evaluate
from sharedtask.evaluate.exam_cover import top_k
from sharedtask.evaluate.leaderboard import kendall

REPO = Path(__file__).resolve().parent.parent
SAMPLE = REPO / "tasks" / "samples" / "arqmath-task1"
REFERENCE = REPO / "baselines" / "reference-runs" / "arqmath-3-task1"
#: the four full-retrieval baselines of Task 1 (the re-ranker of BM25 is left out: these
#: tests are about how the measures order four independent systems)
FOUR = [REFERENCE / f"{name}.txt" for name in ("dense-wordllama", "hybrid-rrf", "lucene-bm25", "lucene-dirichlet")]

ANSWERS = {  # post id -> body; which questions each answers (A.1: q1 \frac{1}{1-r}, q2 geometric; A.2: q3 lemma)
    "11": "The sum is $\\frac{1}{1-r}$ for a geometric series.",  # q1 and q2
    "12": "A geometric progression.",  # q2
    "13": "Nothing useful.",  # none
    "14": "Use $\\frac{1}{1-r}$.",  # q1
    "15": "By the lemma.",  # q3
}


def _dataset(tmp: Path) -> tuple[Path, Path]:
    inp, truth = tmp / "input", tmp / "truth"
    inp.mkdir()
    truth.mkdir()
    rows = ['  <row Id="1" PostTypeId="1" Title="t" Body="&lt;p&gt;q&lt;/p&gt;" Score="0" Tags="&lt;a&gt;" />']
    for pid, body in ANSWERS.items():
        html = f"<p>{body}</p>".replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
        rows.append(f'  <row Id="{pid}" PostTypeId="2" ParentId="1" Body="{html}" Score="0" />')
    (inp / "Posts.xml").write_text('<?xml version="1.0" encoding="utf-8"?>\n<posts>\n' + "\n".join(rows)
                                   + "\n</posts>\n", encoding="utf-8")
    (truth / "qrels.tsv").write_text("A.1\t0\t11\t3\nA.1\t0\t13\t0\nA.2\t0\t15\t2\n", encoding="utf-8")
    (truth / "exam.jsonl").write_text(
        '{"topic": "A.1", "id": "q1", "question": "sum?", "answer": "\\\\frac{1}{1-r}"}\n'
        '{"topic": "A.1", "id": "q2", "question": "notion?", "answer": "geometric"}\n'
        '{"topic": "A.2", "id": "q3", "question": "by what?", "answer": "lemma", "choices": ["theorem", "lemma"]}\n',
        encoding="utf-8")
    return inp, truth


def _run(tmp: Path, name: str, lines: list[str]) -> Path:
    path = tmp / name
    path.write_text("".join(f"{line}\tt\n" for line in lines), encoding="utf-8")
    return path


RUN1 = ["A.1\t12\t1\t10.0", "A.1\t13\t2\t9.0", "A.1\t14\t3\t8.0", "A.2\t13\t1\t5.0"]
RUN2 = ["A.1\t11\t1\t3.0", "A.1\t13\t2\t2.0", "A.2\t15\t1\t1.0"]


def test_exam_cover_and_exam_qrels_by_hand(tmp_path: Path) -> None:
    inp, truth = _dataset(tmp_path)
    result = evaluate(_run(tmp_path, "run1.tsv", RUN1), "arqmath-3-task1", truth_dir=truth, input_dir=inp,
                      per_topic=True)
    # Cover: A.1's top 20 = 12 (q2), 13 (-), 14 (q1) -> {q1, q2} = 2/2; A.2's = 13 (-) -> 0/1; mean 0.5
    assert result.per_topic["exam_cover"] == pytest.approx({"A.1": 1.0, "A.2": 0.0})
    assert result.scores["exam_cover"] == pytest.approx(0.5)
    # EXAM qrels: pool A.1 = run {12, 13, 14} + official {11, 13}: 11 -> 2, 12 -> 1, 13 -> 0, 14 -> 1;
    # A.2 = run {13} + official {15}: 13 -> 0, 15 -> 1 (grade = questions answered).
    # nDCG' A.1: prime run 12 (1), 13 (0), 14 (1): DCG = 1/log2(2) + 0 + 1/log2(4) = 1.5;
    #   ideal 2, 1, 1, 0: 2 + 1/log2(3) + 1/log2(4) = 3.1309298; 1.5 / 3.1309298 = 0.4790909
    # A.2: prime run 13 (0): DCG 0 -> 0.  Mean (0.4790909 + 0) / 2 = 0.2395455
    assert result.per_topic["ndcg_exam_qrels"] == pytest.approx({"A.1": 1.5 / (2 + 1 / math.log2(3) + 0.5),
                                                                 "A.2": 0.0})
    assert result.scores["ndcg_exam_qrels"] == pytest.approx(0.2395455, abs=1e-7)


def test_exam_cover_is_the_workbench_s_and_the_all_topics_variant_is_ours(tmp_path: Path) -> None:
    """exam_cover_metric.py (TREMA-UNH/rubric-grading-workbench 156f9e2): a method's passages are
    those with stored rank <= 20 (lines 283-289), and a query enters its mean only when it has one
    (lines 247-255). RUN3 ranks A.1's post 12 at rank 1 (answers q2: 1/2) and A.2's post 15 at
    rank 21 with the best score of the run. Workbench: A.2 has no passage at rank <= 20 and drops
    out -> mean 1/2 over {A.1}. Ours (first 20 posts in trec_eval order, every topic): A.1 = 1/2,
    A.2 = 1 (15 answers q3) -> (1/2 + 1) / 2 = 0.75."""
    inp, truth = _dataset(tmp_path)
    run = _run(tmp_path, "run3.tsv", ["A.1\t12\t1\t1.0", "A.2\t15\t21\t100.0"])
    result = evaluate(run, "arqmath-3-task1", truth_dir=truth, input_dir=inp, per_topic=True)
    assert result.per_topic["exam_cover"] == {"A.1": 0.5}
    assert result.scores["exam_cover"] == 0.5
    assert result.per_topic["exam_cover_all_topics"] == {"A.1": 0.5, "A.2": 1.0}
    assert result.scores["exam_cover_all_topics"] == 0.75
    averaging = {m.key: m.averaging for m in result.measures}
    assert "topics it does not rank drop out" in averaging["exam_cover"]
    assert "a topic the run does not rank scores 0" in averaging["exam_cover_all_topics"]
    # a run that ranks nothing at rank <= 20 anywhere: the workbench has no number for it
    late = _run(tmp_path, "late.tsv", ["A.1\t12\t21\t1.0"])
    assert math.isnan(evaluate(late, "arqmath-3-task1", truth_dir=truth, input_dir=inp).scores["exam_cover"])


def test_top_k_follows_trec_eval_order(tmp_path: Path) -> None:
    # equal scores: trec_eval breaks ties by document id descending, whatever the rank column says
    path = _run(tmp_path, "r.tsv", ["A.1\t12\t1\t1.0", "A.1\t14\t2\t1.0", "A.1\t13\t3\t2.0", "A.1\t12\t4\t0.5"])
    assert top_k(path, 2) == {"A.1": ["13", "14"]}
    assert top_k(path) == {"A.1": ["13", "14", "12"]}  # the repeated 12 counts once (its first line)


def test_without_the_corpus_or_the_questions_exam_is_skipped_with_a_note(tmp_path: Path) -> None:
    inp, truth = _dataset(tmp_path)
    run = _run(tmp_path, "run1.tsv", RUN1)
    result = evaluate(run, "arqmath-3-task1", truth_dir=truth)
    assert "exam_cover" not in result.scores and "ndcg_prime" in result.scores
    assert any("give --input DATASET_DIR" in n for n in result.notes)
    (truth / "exam.jsonl").unlink()
    result = evaluate(run, "arqmath-3-task1", truth_dir=truth, input_dir=inp)
    assert "exam_cover" not in result.scores and any("no exam questions" in n for n in result.notes)


def test_kendall_tau_b_by_hand() -> None:
    # x = 1 2 2 3, y = 1 2 3 4: pairs (a,b) (a,c) (a,d) (b,d) (c,d) concordant, (b,c) tied in x only.
    # tau-b = (5 - 0) / sqrt((5 + 0 + 1) * (5 + 0 + 0)) = 5 / sqrt(30) = 0.9128709
    a = kendall({"a": 1, "b": 2, "c": 2, "d": 3}, {"a": 1, "b": 2, "c": 3, "d": 4}, "m", "o")
    assert a.tau == pytest.approx(5 / math.sqrt(30)) and a.runs == 4
    assert kendall({"a": 1, "b": 2, "c": 3}, {"a": 3, "b": 2, "c": 1}, "m", "o").tau == pytest.approx(-1.0)
    assert math.isnan(kendall({"a": 1, "b": 1}, {"a": 1, "b": 2}, "m", "o").tau)  # all tie: undefined
    assert math.isnan(kendall({"a": 0.1 + 0.2, "b": 0.3}, {"a": 1, "b": 2}, "m", "o").tau)  # last bits: a tie
    assert kendall({"a": 1, "b": float("nan")}, {"a": 1, "b": 2}, "m", "o").tau is None  # one run left


def test_end_to_end_cli_with_the_http_grader(tmp_path: Path) -> None:
    """`sharedtask evaluate` on two runs with --grader pointing at a real server on 127.0.0.1."""
    inp, truth = _dataset(tmp_path)
    runs = [_run(tmp_path, "run1.tsv", RUN1), _run(tmp_path, "run2.tsv", RUN2)]
    with ChatServer() as server:
        grader = tmp_path / "grader.yml"
        grader.write_text(f"grader: http\nbase_url: {server.url()}\nmodel: tiny\nretries: 0\ncache: cache\n",
                          encoding="utf-8")
        cmd = [sys.executable, "-m", "sharedtask", "evaluate", *map(str, runs), "--task", "arqmath-3-task1",
               "--truth", str(truth), "--input", str(inp), "--grader", str(grader), "--json"]
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        asked = server.requests["ok"]
        again = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        assert again.stdout == out.stdout and server.requests["ok"] == asked  # all from the cache
    board = json.loads(out.stdout)
    scores = {r["run"]: r["scores"] for r in board["runs"]}
    # run1 as above (the server's free answer is the passage's one line; q3's choice "lemma" is not in 13);
    # run2: A.1's 11 answers q1 and q2 -> 1; A.2's 15 states the choice "lemma" -> the server picks B -> 1
    assert scores["run1.tsv"]["exam_cover"] == pytest.approx(0.5)
    assert scores["run2.tsv"]["exam_cover"] == pytest.approx(1.0)
    # official nDCG': run1 A.1 prime = 13 (0) -> 0, A.2 has no judged post -> left out: 0; run2: 11 (3) first -> 1, 1
    assert scores["run1.tsv"]["ndcg_prime"] == pytest.approx(0.0)
    assert scores["run2.tsv"]["ndcg_prime"] == pytest.approx(1.0)
    agreement = {a["measure"]: a for a in board["agreement"]}
    assert agreement["exam_cover"]["kendall_tau_b"] == pytest.approx(1.0)  # both order run2 above run1
    assert agreement["exam_cover"]["against"] == "ndcg_prime" and agreement["exam_cover"]["runs"] == 2


def test_the_sample_reference_runs(tmp_path: Path) -> None:
    """The four Task 1 baselines on the bundled sample: every topic's three questions are
    answered within every run's top 20 (the sample is small), so EXAM Cover ties."""
    results = {p.name: evaluate(p, "arqmath-3-task1", truth_dir=SAMPLE / "truth", input_dir=SAMPLE / "input")
               for p in FOUR}
    assert {r.scores["exam_cover"] for r in results.values()} == {1.0}
    from sharedtask.evaluate import leaderboard

    board = leaderboard(results, "arqmath-3-task1")
    cover = next(a for a in board.agreement if a.measure == "exam_cover")
    assert math.isnan(cover.tau) and cover.describe() == "undefined (all runs tie)"


def test_the_report_shows_the_agreement(tmp_path: Path) -> None:
    """The sample's reference runs in the HTML report: one agreement row per non-official measure."""
    import re

    from sharedtask.evaluate import leaderboard
    from sharedtask.report import RunEntry, TaskSection, render_html
    from sharedtask.spec import load_task

    results = {p.name: evaluate(p, "arqmath-3-task1", truth_dir=SAMPLE / "truth", input_dir=SAMPLE / "input",
                                per_topic=True) for p in FOUR}
    board = leaderboard(results, "arqmath-3-task1")
    entries = [RunEntry(n, f"img/{n}", None, "success", True, [], r.scores, r.per_topic, {})
               for n, r in results.items()]
    page = render_html([TaskSection(load_task("arqmath-3-task1"), entries, board=board)])
    rows = dict(re.findall(r'<tr class="agreement" data-measure="([^"]+)"><td>[^<]*</td><td class="num">([^<]*)<',
                           page))
    assert "Agreement with the official measure" in page
    # bpref' orders the four runs as nDCG' does; nDCG' on EXAM qrels swaps hybrid and BM25
    # (0.8387 > 0.8327 while nDCG' has 0.9234 > 0.9017): 5 concordant, 1 discordant, (5 - 1) / 6
    assert rows == {"bpref_prime": "+1.000", "exam_cover": "undefined (all runs tie)",
                    "exam_cover_all_topics": "undefined (all runs tie)",
                    "ndcg_exam_qrels": f"{4 / 6:+.3f}"}


class CountingGrader:
    """The offline grader, counting the pairs it is asked (a real Grader, to see what gets graded)."""

    def __init__(self) -> None:
        from sharedtask.answers.exam import OfflineGrader

        self.inner, self.pairs = OfflineGrader(), 0

    def grade(self, question, text: str) -> bool:
        self.pairs += 1
        return self.inner.grade(question, text)


def test_each_pair_is_graded_once_and_cover_alone_never_grades_the_pool(tmp_path: Path) -> None:
    inp, truth = _dataset(tmp_path)
    run = _run(tmp_path, "run1.tsv", RUN1)
    grader = CountingGrader()
    evaluate(run, "arqmath-3-task1", truth_dir=truth, input_dir=inp, measures=["exam_cover"], grader=grader)
    assert grader.pairs == 3 * 2 + 1 * 1  # A.1: posts 12, 13, 14 x 2 questions; A.2: post 13 x 1
    grader = CountingGrader()
    evaluate(run, "arqmath-3-task1", truth_dir=truth, input_dir=inp, grader=grader)
    assert grader.pairs == 7 + 1 * 2 + 1 * 1  # the pool adds A.1's 11 (2 questions) and A.2's 15 (1)


def test_cli_grader_mistakes_are_one_line(tmp_path: Path) -> None:
    from test_cli_errors import assert_one_line_error, cli

    inp, truth = _dataset(tmp_path)
    run = _run(tmp_path, "run1.tsv", RUN1)
    args = [run, "--task", "arqmath-3-task1", "--truth", truth, "--input", inp, "--grader"]
    assert_one_line_error(cli("evaluate", *args, tmp_path / "none.yml", cwd=tmp_path),
                          "none.yml: cannot read")
    bad = tmp_path / "bad.yml"
    bad.write_text("grader: http\nmodel: m\n", encoding="utf-8")
    assert_one_line_error(cli("evaluate", *args, bad, cwd=tmp_path), "'base_url' is a required property")
    with ChatServer() as server:
        down = tmp_path / "down.yml"
        down.write_text(f"base_url: {server.url('fail')}\nmodel: m\nretries: 1\nbackoff: 0\n", encoding="utf-8")
        assert_one_line_error(cli("evaluate", *args, down, cwd=tmp_path), "failed with HTTP 503 (2 tries)")
