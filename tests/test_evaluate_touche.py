"""Touché official nDCG@5 by hand, ndcg_cut.5 vs pytrec_eval, quality qrels.

Fixture tests/fixtures/eval/touche-2021/run.txt: topic 1's lines are out of rank order
in the file, contain an unjudged doc at rank 1, a -2 judgment, a tie (b and c at 8.0)
and a duplicate (a again at rank 7); topic 3 has its only judged doc at rank 6; topic 4
is judged but not in the run; topic 5 is in the run but not judged.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import pytrec_eval

from sharedtask.errors import FormatError
from sharedtask.evaluate import evaluate

FIX = Path(__file__).parent / "fixtures" / "eval" / "touche-2021"
L = math.log2


def test_official_ndcg5_relevance_by_hand():
    result = evaluate(FIX / "run.txt", "touche-2021-task1", truth_dir=FIX, per_topic=True)
    # Topic 1, by rank: x (unjudged), a (2), b (0), c (-2 -> 0), e (3) | d, a (beyond 5).
    # Unjudged dropped, re-indexed: gains [2, 0, 0, 3] at positions 0..3.
    dcg1 = 2 / L(2) + 0 / L(3) + 0 / L(4) + 3 / L(5)
    # IDCG from the top-5 qrels values after -2 -> 0: 3, 2, 1, 1, 0
    idcg1 = 3 / L(2) + 2 / L(3) + 1 / L(4) + 1 / L(5) + 0 / L(6)
    # Topic 2: gains [0, 0] (the -2 becomes 0); IDCG from [1, 0, 0] = 1 -> nDCG 0.
    # Topic 3: no judged doc in the top 5 -> left out. Topic 4: not in the run -> left out.
    per = result.per_topic["ndcg5_official"]
    assert per == pytest.approx({"1": dcg1 / idcg1, "2": 0.0}, abs=1e-6)
    assert result.scores["ndcg5_official"] == pytest.approx((dcg1 / idcg1 + 0.0) / 2, abs=1e-6)
    assert result.topics_averaged["ndcg5_official"] == 2
    assert result.primary.key == "ndcg5_official"


def test_official_ndcg5_quality_by_hand():
    result = evaluate(FIX / "run.txt", "touche-2021-task1", truth_dir=FIX, per_topic=True)
    # Quality: topic 1 top 5 judged = a (3), e (1.0 written as a float) -> DCG = IDCG; topic 2: g (2) -> 1.
    assert result.per_topic["ndcg5_official_quality"] == pytest.approx({"1": 1.0, "2": 1.0})
    assert result.scores["ndcg5_official_quality"] == pytest.approx(1.0)


def test_trec_eval_variant_matches_pytrec_eval_on_hand_built_run():
    result = evaluate(FIX / "run.txt", "touche-2021-task1", truth_dir=FIX, per_topic=True)
    # the run as trec_eval reads it: scores only, the duplicate of a keeps its first line (9.0)
    run = {
        "1": {"S0000000e-A0000000e": 7.0, "S0000000x-A0000000x": 10.0, "S0000000a-A0000000a": 9.0,
              "S0000000b-A0000000b": 8.0, "S0000000c-A0000000c": 8.0, "S0000000d-A0000000d": 6.0},
        "2": {"S00000001-A00000001": 5.0, "S00000002-A00000002": 4.0},
        "3": {f"S0000003{i}-A0000003{i}": float(s) for i, s in [(2, 9), (3, 8), (4, 7), (5, 6), (6, 5), (1, 4)]},
        "5": {"S00000051-A00000051": 1.0},
    }
    for key, name in [("ndcg_cut_5", "qrels.txt"), ("ndcg_cut_5_quality", "qrels-quality.txt")]:
        with open(FIX / name) as f:
            qrels = pytrec_eval.parse_qrel(f) if name == "qrels.txt" else {
                t: {d: int(float(r)) for d, r in docs.items()} for t, docs in _raw_qrels(FIX / name).items()}
        values = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut_5"}).evaluate(run)
        per = {t: v["ndcg_cut_5"] for t, v in values.items()}
        assert result.per_topic[key] == pytest.approx(per, abs=1e-6), key
        assert result.scores[key] == pytest.approx(sum(per.values()) / len(per), abs=1e-6), key


def _raw_qrels(path: Path) -> dict[str, dict[str, str]]:
    out: dict[str, dict[str, str]] = {}
    for line in path.read_text().splitlines():
        t, _, d, r = line.split()
        out.setdefault(t, {})[d] = r
    return out


def test_notes_report_ties_duplicates_and_dropped_topics():
    result = evaluate(FIX / "run.txt", "touche-2021-task1", truth_dir=FIX)
    text = "\n".join(result.notes)
    assert "1 repeated (topic, doc)" in text
    assert "ties changed the order of 1 topic(s)" in text  # b, c at 8.0: trec_eval puts c first
    assert "ndcg5_official: 2 qrels topic(s)" in text  # topics 3 and 4


def test_quality_measures_skipped_with_a_note_when_only_qrels_given():
    result = evaluate(FIX / "run.txt", "touche-2021-task1", qrels=FIX / "qrels.txt")
    assert set(result.scores) == {"ndcg5_official", "ndcg_cut_5"}
    assert any("ndcg5_official_quality" in n for n in result.notes)


def test_arqmath_run_given_to_touche_is_refused(tmp_path):
    run = tmp_path / "run.txt"
    run.write_text("1\tS0000000a-A0000000a\t1\t1.0\ttag\n")  # 5 columns: ARQMath Task 1 layout
    with pytest.raises(FormatError, match="ARQMath Task 1 run.*expects a TREC run"):
        evaluate(run, "touche-2021-task1", truth_dir=FIX)


def test_rank_column_decides_official_but_not_trec_eval(tmp_path):
    """Same docs, ranks inverted w.r.t. scores: official follows ranks, trec_eval scores."""
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("7 0 good 2\n7 0 bad 0\n")
    run = tmp_path / "run.txt"
    run.write_text("7 Q0 bad 1 9.0 x\n7 Q0 good 2 1.0 x\n")
    result = evaluate(run, "touche-2020-task1", qrels=qrels)
    # official: bad (0) at 0, good (2) at 1 -> DCG = 2/log2(3); IDCG = 2/log2(2)
    assert result.scores["ndcg5_official"] == pytest.approx((2 / L(3)) / 2, abs=1e-6)
    # trec_eval: sorted by score, the same order here -> same value
    assert result.scores["ndcg_cut_5"] == pytest.approx((2 / L(3)) / 2, abs=1e-6)
    assert any("do not decrease with the rank column" in n for n in result.notes) is False
    run.write_text("7 Q0 bad 2 9.0 x\n7 Q0 good 1 1.0 x\n")
    result = evaluate(run, "touche-2020-task1", qrels=qrels)
    assert result.scores["ndcg5_official"] == pytest.approx(1.0)  # rank column: good first
    assert result.scores["ndcg_cut_5"] == pytest.approx((2 / L(3)) / 2, abs=1e-6)  # score: bad first
    assert any("do not decrease with the rank column" in n for n in result.notes)
