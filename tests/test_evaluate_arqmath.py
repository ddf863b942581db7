"""ARQMath measures vs independent computations.

Tasks 1 and 2: the prime run is built BY HAND in each test (from the fixture's lines,
following docs/evaluation.md) and scored by calling pytrec_eval directly; our
evaluator must agree to 1e-6. Task 3: hand arithmetic written out in the test.
Fixtures (tests/fixtures/eval/) contain ties, duplicates, unjudged documents, a run
topic missing from the qrels and qrels topics missing from the run.
"""

from __future__ import annotations

import math
import random
from pathlib import Path

import pytest
import pytrec_eval

from sharedtask.errors import FormatError, SharedTaskError
from sharedtask.evaluate import evaluate
from sharedtask.evaluate.task3 import math_tags, normalise, set_f1, tokens

FIX = Path(__file__).parent / "fixtures" / "eval"
T1 = FIX / "arqmath-task1"
T2 = FIX / "arqmath-task2"
T3 = FIX / "arqmath-task3"


def _trec(qrels, run, measure, level):
    values = pytrec_eval.RelevanceEvaluator(qrels, {measure}, relevance_level=level).evaluate(run)
    per = {t: v[measure] for t, v in values.items()}
    return per, sum(per.values()) / len(per)


T1_QRELS = {
    "A.1": {"10": 3, "11": 2, "12": 1, "13": 0, "14": 2, "15": 3},
    "A.2": {"20": 0, "21": 1, "22": 2},
    "A.3": {"30": 3},
    "A.4": {"40": 2},
}
# Prime run of run.tsv by hand: 99/98/77/31 unjudged -> removed; the second "A.1 11" line is a
# duplicate -> the first (score 9.0) stays; A.5 is not in the qrels; A.3 keeps nothing; A.4 absent.
T1_PRIME = {"A.1": {"10": 9.0, "11": 9.0, "12": 8.0, "13": 6.0}, "A.2": {"22": 3.0, "20": 2.0}}


@pytest.mark.parametrize("run_file", ["run.tsv", "run-q0.txt"])
def test_task1_prime_measures_match_pytrec_eval_on_hand_built_prime_run(run_file):
    result = evaluate(T1 / run_file, "arqmath-3-task1", qrels=T1 / "qrels.tsv", per_topic=True)
    for key, measure, level in [("ndcg_prime", "ndcg", 1), ("map_prime", "map", 2),
                                ("p10_prime", "P_10", 2), ("bpref_prime", "bpref", 2)]:
        per, mean = _trec(T1_QRELS, T1_PRIME, measure, level)
        assert result.scores[key] == pytest.approx(mean, abs=1e-6), key
        assert result.per_topic[key] == pytest.approx(per, abs=1e-6), key
        assert result.topics_averaged[key] == 2  # A.3 and A.4 drop out (trec_eval without -c)


def test_task1_hand_arithmetic_for_one_topic():
    """A.2 by hand: prime order 22 (rel 2), 20 (rel 0); ideal 22 (2), 21 (1), 20 (0)."""
    result = evaluate(T1 / "run.tsv", "arqmath-3-task1", qrels=T1 / "qrels.tsv", per_topic=True)
    dcg = 2 / math.log2(2) + 0 / math.log2(3)
    idcg = 2 / math.log2(2) + 1 / math.log2(3)
    assert result.per_topic["ndcg_prime"]["A.2"] == pytest.approx(dcg / idcg, abs=1e-6)
    assert result.per_topic["map_prime"]["A.2"] == pytest.approx(1.0)  # the only H+M doc at rank 1
    assert result.per_topic["p10_prime"]["A.2"] == pytest.approx(0.1)


def test_task1_notes_say_what_was_removed_and_how_topics_were_averaged():
    result = evaluate(T1 / "run.tsv", "arqmath-3-task1", qrels=T1 / "qrels.tsv")
    text = "\n".join(result.notes)
    assert "1 repeated (topic, post)" in text
    assert "4 unjudged post(s) removed" in text
    assert "A.3, A.4" in text  # left out of the means
    assert "ties changed the order of 1 topic(s)" in text  # 10 and 11 tie at 9.0 in A.1
    assert "without -c" in result.measure("ndcg_prime").averaging
    assert result.per_topic == {}  # only when asked


def test_task1_tie_breaking_is_trec_evals_not_the_rank_column(tmp_path):
    """Two judged posts with equal scores: trec_eval puts the larger docno first, whatever the ranks say."""
    qrels = tmp_path / "qrels.tsv"
    qrels.write_text("A.1\t0\t10\t0\nA.1\t0\t20\t3\n")
    run = tmp_path / "run.tsv"
    run.write_text("A.1\t10\t1\t5.0\tx\nA.1\t20\t2\t5.0\tx\n")
    result = evaluate(run, "arqmath-3-task1", qrels=qrels)
    assert result.scores["ndcg_prime"] == pytest.approx(1.0)  # 20 first: ideal order
    assert result.scores["p10_prime"] == pytest.approx(0.1)
    assert result.scores["map_prime"] == pytest.approx(1.0)


def _oracle(tmp_path: Path, seed: int = 7) -> tuple[Path, Path, dict]:
    rnd = random.Random(seed)
    qrels: dict[str, dict[str, int]] = {}
    for t in range(1, 31):
        n = rnd.randint(1, 40)
        docs = {str(1000 * t + i): rnd.choice([0, 0, 1, 2, 3]) for i in range(n)}
        docs[str(1000 * t + 999)] = rnd.choice([2, 3])  # every topic has an H+M answer
        qrels[f"A.{t}"] = docs
    qpath, rpath = tmp_path / "qrels.tsv", tmp_path / "oracle.tsv"
    with qpath.open("w") as q, rpath.open("w") as r:
        for topic, docs in qrels.items():
            for doc, rel in docs.items():
                q.write(f"{topic}\t0\t{doc}\t{rel}\r\n")
            ordered = sorted(docs, key=lambda d: -docs[d])
            for rank, doc in enumerate(ordered, 1):
                r.write(f"{topic}\t{doc}\t{rank}\t{1000 - rank}\toracle\n")
                r.write(f"{topic}\t{int(doc) + 500000}\t{rank}\t{1000 - rank}.5\toracle\n")  # unjudged noise
    return qpath, rpath, qrels


def test_oracle_run_scores_one_and_p10_is_bounded_by_hm_counts(tmp_path):
    qpath, rpath, qrels = _oracle(tmp_path)
    result = evaluate(rpath, "arqmath-3-task1", qrels=qpath)
    assert result.scores["ndcg_prime"] == pytest.approx(1.0, abs=1e-9)
    assert result.scores["map_prime"] == pytest.approx(1.0, abs=1e-9)
    expected = sum(min(10, sum(r >= 2 for r in d.values())) / 10 for d in qrels.values()) / len(qrels)
    assert result.scores["p10_prime"] == pytest.approx(expected, abs=1e-9)
    assert expected < 1.0  # the property is not vacuous


# --- Task 2 --------------------------------------------------------------------------------

T2_QRELS = {"B.1": {"100": 3, "200": 1, "300": 2, "400": 0}, "B.2": {"100": 2}}
# By hand, B.1 sorted by score: f2 9.0 (v100) | f1 8.0 (v100, dropped: v100 seen) | f6 7.0 (v500,
# unjudged) | f7 6.5 (v200, kept with 6.5) | f3 6.0 (v200, dropped) | f99 5.5 (not in the index) |
# f4 5.0 (v300) | f5 5.0 (v400). B.2: f3 -> v200, unjudged for B.2 -> nothing. B.3: not in qrels.
T2_PRIME = {"B.1": {"100": 9.0, "200": 6.5, "300": 5.0, "400": 5.0}}


def test_task2_visual_id_dedup_then_prime_matches_pytrec_eval():
    result = evaluate(T2 / "run.tsv", "arqmath-3-task2", truth_dir=T2 / "truth", per_topic=True)
    for key, measure, level in [("ndcg_prime", "ndcg", 1), ("map_prime", "map", 2),
                                ("p10_prime", "P_10", 2), ("bpref_prime", "bpref", 2)]:
        per, mean = _trec(T2_QRELS, T2_PRIME, measure, level)
        assert result.scores[key] == pytest.approx(mean, abs=1e-6), key
        assert result.per_topic[key] == pytest.approx(per, abs=1e-6), key
    text = "\n".join(result.notes)
    assert "1 formula id(s) not in the index" in text
    assert "2 formula instance(s) dropped" in text
    # v300 and v400 tie at 5.0; trec_eval puts "400" first although f4 (v300) has the better rank
    assert "ties changed the order of 1 topic(s)" in text


def test_task2_map_by_hand():
    """Order 100 (9.0, rel 3), 200 (6.5, rel 1), then the 5.0 tie: 400 (rel 0) before 300 (rel 2)
    by trec_eval's docno-descending tie break. H+M = {100, 300} at positions 1 and 4:
    AP = (1/1 + 2/4) / 2 = 0.75 (300 before 400 would give (1 + 2/3) / 2)."""
    result = evaluate(T2 / "run.tsv", "arqmath-3-task2", truth_dir=T2 / "truth")
    assert result.scores["map_prime"] == pytest.approx((1 / 1 + 2 / 4) / 2, abs=1e-6)


def test_task2_without_a_judged_visual_id_scores_the_official_zero(tmp_path):
    """The run's only judged-topic formulas map to visual ids unjudged for their topic (f3 -> v200 for
    B.2; f6 -> v500 for B.1), so the prime file is empty: task2_get_results.py (approach0/pya0
    e904db1, eval-arqmath1-task2, lines 9-10, 23-24, 37-38, 51-52) writes 0.0 for each of its four
    measures without calling trec_eval."""
    run = tmp_path / "run.tsv"
    run.write_text("B.2\t3\t503\t1\t1.0\tdemo\nB.1\t6\t506\t1\t7.0\tdemo\nB.3\t1\t501\t1\t1.0\tdemo\n")
    result = evaluate(run, "arqmath-3-task2", truth_dir=T2 / "truth", per_topic=True)
    assert result.scores == {"ndcg_prime": 0.0, "map_prime": 0.0, "p10_prime": 0.0, "bpref_prime": 0.0}
    assert all(n == 0 for n in result.topics_averaged.values())
    assert any("prime file is empty" in note for note in result.notes)


def test_task2_formula_index_from_input_dir(tmp_path):
    (tmp_path / "formulas").mkdir()
    src = T2 / "truth" / "formulas" / "latex_representation_v3_1.tsv"
    (tmp_path / "formulas" / src.name).write_bytes(src.read_bytes())
    result = evaluate(T2 / "run.tsv", "arqmath-3-task2", qrels=T2 / "truth" / "qrels.tsv", input_dir=tmp_path)
    per, mean = _trec(T2_QRELS, T2_PRIME, "ndcg", 1)
    assert result.scores["ndcg_prime"] == pytest.approx(mean, abs=1e-6)


def test_task2_without_formula_index_is_a_clear_error():
    with pytest.raises(SharedTaskError, match="formula index"):
        evaluate(T2 / "run.tsv", "arqmath-3-task2", qrels=T2 / "truth" / "qrels.tsv")


# --- Task 3 --------------------------------------------------------------------------------


def test_task3_ar_and_p1_by_hand():
    """evaluate_task3_results_manual.py (approach0/pya0 f2852c9, eval-arqmath3/task3): AR and P@1 are
    means over the topics whose answer has a judgment; 5 and 6 count 0."""
    result = evaluate(T3 / "run.tsv", "arqmath-3-task3", truth_dir=T3, per_topic=True)
    # A.301 = ans1 (whitespace differs) -> 3; A.302, A.303 unjudged texts; A.305 not in the qrels;
    # A.306 = ans8 graded 6 ("do not know") -> 0. Judged: A.301 and A.306.
    assert result.per_topic["ar"] == {"A.301": 3.0, "A.306": 0.0}
    assert result.scores["ar"] == pytest.approx(3 / 2, abs=1e-12)
    assert result.scores["p1"] == pytest.approx(1 / 2, abs=1e-12)
    # our variant over all five qrels topics (A.301-A.304, A.306), missing/unjudged = 0
    assert result.scores["ar_all_topics"] == pytest.approx(3 / 5, abs=1e-12)
    assert result.scores["p1_all_topics"] == pytest.approx(1 / 5, abs=1e-12)
    assert any("2 judged, 3 unjudged, 0 ambiguous" in note for note in result.notes)


def test_task3_issue_example_official_averaging(tmp_path):
    """qrels A.301=3, A.302=2, A.303=1; the run answers A.301 with the judged answer and A.303 with an
    unjudged text: official AR 3.000, P@1 1.000; the all-topics variant 1.0 and 0.333."""
    truth = tmp_path / "truth"
    truth.mkdir()
    (truth / "qrels.tsv").write_text("A.301\t0\t1\t3\nA.302\t0\t2\t2\nA.303\t0\t3\t1\n")
    (truth / "answers.tsv").write_text("answer_id\ttopic\ttext\n1\tA.301\tGood answer.\n2\tA.302\tOther.\n"
                                       "3\tA.303\tThird.\n")
    run = tmp_path / "run.tsv"
    run.write_text("A.301\t1\t1\tx\t\tGood answer.\nA.303\t1\t1\tx\t\tSomething unjudged.\n")
    result = evaluate(run, "arqmath-3-task3", truth_dir=truth)
    assert result.scores["ar"] == 3.0 and result.scores["p1"] == 1.0
    assert result.scores["ar_all_topics"] == pytest.approx(1.0)
    assert result.scores["p1_all_topics"] == pytest.approx(1 / 3)


def test_task3_official_map_file(tmp_path):
    """The organizers' map (run name = file stem, topic, assessment id) decides, not the text."""
    truth = tmp_path / "truth"
    truth.mkdir()
    (truth / "qrels.tsv").write_text("A.301\t0\td_1\t3\nA.301\t0\td_2\t0\nA.302\t0\td_3\t2\n")
    # two assessed answers with the same text but different grades: text matching is ambiguous
    (truth / "answers.tsv").write_text("answer_id\ttopic\ttext\nd_1\tA.301\tSame text.\n"
                                       "d_2\tA.301\tSame text.\nd_3\tA.302\tB.\n")
    run = tmp_path / "TeamX-task3-run1-auto-both-generate-P.tsv"
    run.write_text("A.301\t1\t1\tx\t\tSame text.\nA.302\t1\t1\tx\t\tB.\n")
    by_text = evaluate(run, "arqmath-3-task3", truth_dir=truth, per_topic=True)
    assert by_text.per_topic["ar"] == {"A.302": 2.0}  # A.301 ambiguous: left unjudged, not guessed
    assert any("different grades" in n and "A.301: d_1, d_2" in n for n in by_text.notes)
    mapping = tmp_path / "teams_document_id.tsv"
    mapping.write_text("OtherRun\tA.301\td_1\n"
                       "TeamX-task3-run1-auto-both-generate-P\tA.301\td_2\n"
                       "TeamX-task3-run1-auto-both-generate-P\tA.302\td_3\n")
    by_map = evaluate(run, "arqmath-3-task3", truth_dir=truth, per_topic=True, answer_map=mapping)
    assert by_map.per_topic["ar"] == {"A.301": 0.0, "A.302": 2.0}
    assert by_map.scores["ar"] == 1.0 and by_map.scores["p1"] == 0.5
    with pytest.raises(SharedTaskError, match="no rows for run 'renamed'"):
        renamed = tmp_path / "renamed.tsv"
        renamed.write_bytes(run.read_bytes())
        evaluate(renamed, "arqmath-3-task3", truth_dir=truth, answer_map=mapping)


def test_task3_repeated_topic_without_a_map_is_refused(tmp_path):
    run = tmp_path / "run.tsv"
    run.write_text("A.301\t1\t1\tx\t\tOne answer here.\nA.301\t2\t0.5\tx\t\tTwo answers here.\n")
    with pytest.raises(SharedTaskError, match="topic A.301 is answered again .first on line 1."):
        evaluate(run, "arqmath-3-task3", truth_dir=T3)


def _task3_truth(tmp_path, grades: dict[str, int]) -> Path:
    truth = tmp_path / "truth"
    truth.mkdir()
    (truth / "qrels.tsv").write_text("".join(f"{t}\t0\td_{t[-1]}\t{g}\n" for t, g in grades.items()))
    (truth / "answers.tsv").write_text("answer_id\ttopic\ttext\n" + "".join(f"d_{t[-1]}\t{t}\tKnown {t}.\n" for t in grades))
    return truth


def test_task3_repeated_topic_the_map_does_not_name_is_missing_as_in_the_official_script(tmp_path):
    """evaluate_task3_results_manual.py (approach0/pya0 f2852c9, lines 86-93) looks the topic up in the map
    before it checks for repetition: an unmapped topic, however often it comes, is only missing.
    By hand: judged A.301 = 3, A.302 = 0 -> AR (3 + 0) / 2 = 1.5, P@1 1 / 2 = 0.5."""
    truth = _task3_truth(tmp_path, {"A.301": 3, "A.302": 0})
    run = tmp_path / "Team-task3-run.tsv"
    run.write_text("A.301\t1\t1\tx\t\tAnswer one.\nA.302\t1\t1\tx\t\tAnswer two.\nA.303\t1\t1\tx\t\tAnswer three.\n"
                   "A.303\t1\t1\tx\t\tThree again.\n")
    mapping = tmp_path / "map.tsv"
    mapping.write_text("Team-task3-run\tA.301\td_1\nTeam-task3-run\tA.302\td_2\n")
    result = evaluate(run, "arqmath-3-task3", truth_dir=truth, answer_map=mapping)
    assert result.scores["ar"] == 1.5 and result.scores["p1"] == 0.5
    assert any("not named by the answer map: A.303" in n for n in result.notes)
    mapping.write_text("Team-task3-run\tA.301\td_1\nTeam-task3-run\tA.303\td_2\n")  # now the map names it
    with pytest.raises(SharedTaskError, match=":4: topic A.303 is answered again .*Repeated topic"):
        evaluate(run, "arqmath-3-task3", truth_dir=truth, answer_map=mapping)


def test_task3_an_answer_opening_an_unclosed_quote_swallows_the_next_topic_as_officially(tmp_path):
    """The official script reads the run with csv.reader(delimiter='\\t') and default quoting
    (pya0 f2852c9, lines 17-21): A.303's answer begins with a " that closes only at the first " of
    line 4, so line 4 (A.304) is part of that answer. By hand, grades A.301 2, A.302 0, A.303 1, A.304 0, A.305 0: the official script judges
    A.301, A.302, A.303, A.305 -> P@1 1/4 = 0.25, AR 3/4; reading every line would give 0.2 and 0.6."""
    truth = _task3_truth(tmp_path, {"A.301": 2, "A.302": 0, "A.303": 1, "A.304": 0, "A.305": 0})
    run = tmp_path / "Team-task3-run.tsv"
    run.write_text("A.301\t1\t1\tx\t\tAnswer one.\nA.302\t1\t1\tx\t\tAnswer two.\nA.303\t1\t1\tx\t\t\"Three, quoted.\n"
                   "A.304\t1\t1\tx\t\tAnswer \"four\" here.\nA.305\t1\t1\tx\t\tAnswer five.\n")
    mapping = tmp_path / "map.tsv"
    mapping.write_text("".join(f"Team-task3-run\tA.30{i}\td_{i}\n" for i in range(1, 6)))
    result = evaluate(run, "arqmath-3-task3", truth_dir=truth, answer_map=mapping, per_topic=True)
    assert result.scores["p1"] == 0.25 and result.scores["ar"] == 0.75
    assert set(result.per_topic["ar"]) == {"A.301", "A.302", "A.303", "A.305"}
    assert any("line 3: the answer to topic A.303 opens a quote" in n and "A.304 (line 4)" in n for n in result.notes)


def test_task3_lexical_overlap_by_hand():
    """evaluate_task3_results_automatic.py (ARQMath-3): $ -> [MATH]/[/MATH] (consuming the character
    before each $), whitespace collapsed, token SETS, mean over answered topics with references."""
    result = evaluate(T3 / "run.tsv", "arqmath-3-task3", truth_dir=T3, per_topic=True)
    lo = result.per_topic["lexical_overlap"]
    # references (grade 2 or 3): A.301 {ans1}, A.302 {ans4}, A.304 {ans7}; A.304 is not answered:
    # it drops out (the script only scores the run's lines).
    assert set(lo) == {"A.301", "A.302"}
    # A.301: both sides normalise to "The derivative of [MATH] x^ [/MATH] is [MATH] 2 [/MATH] ."
    assert lo["A.301"] == pytest.approx(1.0)
    # A.302: answer pre-tokens { The, area, under, a, curve, is, an, integral, ",", I, think, "."} (12)
    # reference {An, integral, is, the, area, under, curve, "."} (8); common: integral is area under
    # curve "." = 6 -> P = 1/2, R = 3/4, F1 = 0.6 (case matters: RoBERTa is cased)
    assert lo["A.302"] == pytest.approx(0.6, abs=1e-12)
    assert result.scores["lexical_overlap"] == pytest.approx(0.8, abs=1e-12)
    assert result.primary.key == "lexical_overlap"


def test_task3_run_with_no_judged_answer_gets_no_ar_or_p1(tmp_path):
    # Every answer is new to the assessors: AR/P@1 would be a row of zeros that reads as
    # "all wrong". They are left out with a note; LO is still computed.
    run = tmp_path / "run.tsv"
    run.write_text("A.301\t1\t1.0\tdemo\t\tA brand new answer about derivatives.\n"
                   "A.302\t1\t1.0\tdemo\t\tIntegrals measure the area under a curve.\n", encoding="utf-8")
    result = evaluate(run, "arqmath-3-task3", truth_dir=T3, per_topic=True)
    assert "ar" not in result.scores and "p1" not in result.scores
    assert any("AR and P@1 not computed" in note for note in result.notes)
    assert set(result.per_topic["lexical_overlap"]) == {"A.301", "A.302"}


def test_a_tira_output_directory_is_evaluated_through_its_run_txt(tmp_path):
    out = tmp_path / "output"
    out.mkdir()
    (out / "run.txt").write_bytes((T1 / "run.tsv").read_bytes())
    from_dir = evaluate(out, "arqmath-3-task1", qrels=T1 / "qrels.tsv")
    from_file = evaluate(T1 / "run.tsv", "arqmath-3-task1", qrels=T1 / "qrels.tsv")
    assert from_dir.scores == from_file.scores


def test_lexical_overlap_normalisation_and_tokens():
    # replace_dollars_with_math_tags consumes the character before each unescaped $
    assert math_tags("a $x$ b") == "a [MATH]  [/MATH]  b"  # the x before the closing $ goes too
    assert math_tags("$x$") == " [MATH]  [/MATH] "
    assert math_tags("cost \\$5") == "cost \\$5"  # an escaped dollar stays
    assert normalise("  [MATH] x [/MATH] [MATH] y [/MATH] ") == " [MATH] x y"
    assert normalise("a\n\n b  ") == "a b"
    assert tokens("x^2 = 4, isn't it") == {" x", "^", "2", " =", " 4", ",", " isn", "'t", " it"}
    assert set_f1(frozenset({"a", "b"}), frozenset({"b", "c", "d"})) == pytest.approx(2 * 0.5 * (1 / 3) / (0.5 + 1 / 3))
    assert set_f1(frozenset({"a"}), frozenset({"b"})) == 0.0  # the script divides by zero here


# --- errors --------------------------------------------------------------------------------


def test_qrels_in_the_wrong_format_is_a_clear_error():
    with pytest.raises(FormatError, match="looks like a run"):
        evaluate(T1 / "run.tsv", "arqmath-3-task1", qrels=T1 / "run.tsv")


def test_run_of_another_task_is_refused():
    with pytest.raises(FormatError, match="ARQMath Task 2 run"):
        evaluate(T2 / "run.tsv", "arqmath-3-task1", qrels=T1 / "qrels.tsv")


def test_no_topic_overlap_is_an_error_not_zero(tmp_path):
    qrels = tmp_path / "qrels.tsv"
    qrels.write_text("A.900\t0\t10\t3\n")
    with pytest.raises(SharedTaskError, match="no topic of the run is in the qrels"):
        evaluate(T1 / "run.tsv", "arqmath-3-task1", qrels=qrels)


def test_unknown_measure_lists_the_known_ones():
    with pytest.raises(SharedTaskError, match="known measures: ndcg_prime"):
        evaluate(T1 / "run.tsv", "arqmath-3-task1", qrels=T1 / "qrels.tsv", measures=["ndcg"])


def test_measures_can_be_narrowed():
    result = evaluate(T1 / "run.tsv", "arqmath-3-task1", qrels=T1 / "qrels.tsv", measures=["p10_prime"])
    assert list(result.scores) == ["p10_prime"]
