"""mathlib4-search (semantic-search family): nDCG@20 with LeanSearch's gains 1 / 0.3 / 0,
P@10 and R@10 with partial matches relevant — expected values worked out by hand below.

Fixture tests/fixtures/eval/mathlib4: topic 1 judges d1 exact (2), d2 partial (1), d3
irrelevant (0), d4 exact (2); the run ranks d3, d2, d1 and the unjudged d5. Topic 2 has
one partial match, ranked first. Topic 3 is judged but not in the run (trec_eval without
-c leaves it out).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from sharedtask.cli import main as cli_main
from sharedtask.evaluate import evaluate
from sharedtask.evaluate.trec import integer_gains

FIX = Path(__file__).parent / "fixtures" / "eval" / "mathlib4"
L = math.log2

# Topic 1, gains by position: d3 0, d2 0.3, d1 1, d5 0 (unjudged).
DCG1 = 0 / L(2) + 0.3 / L(3) + 1 / L(4) + 0 / L(5)
# Ideal: the judged gains sorted, 1, 1, 0.3, 0.
IDCG1 = 1 / L(2) + 1 / L(3) + 0.3 / L(4)
NDCG1 = DCG1 / IDCG1


def test_ndcg20_uses_the_task_gains_by_hand() -> None:
    result = evaluate(FIX / "run.txt", "mathlib4-search", qrels=FIX / "qrels.txt", per_topic=True)
    assert result.per_topic["ndcg_cut_20"] == pytest.approx({"1": NDCG1, "2": 1.0}, abs=1e-6)
    assert result.scores["ndcg_cut_20"] == pytest.approx((NDCG1 + 1.0) / 2, abs=1e-6)
    # with the raw grades as gains (what trec_eval does unmapped) topic 1 would differ
    raw = (1 / L(3) + 2 / L(4)) / (2 / L(2) + 2 / L(3) + 1 / L(4))
    assert abs(result.per_topic["ndcg_cut_20"]["1"] - raw) > 0.01
    assert result.primary.key == "ndcg_cut_20"


def test_p10_and_r10_count_partial_matches_by_hand() -> None:
    result = evaluate(FIX / "run.txt", "mathlib4-search", qrels=FIX / "qrels.txt", per_topic=True)
    # topic 1: d2 and d1 relevant in the top 10 -> P 2/10; 2 of the 3 relevant (d1, d2, d4) -> R 2/3
    assert result.per_topic["p10_partial"] == pytest.approx({"1": 0.2, "2": 0.1})
    assert result.per_topic["recall10_partial"] == pytest.approx({"1": 2 / 3, "2": 1.0})
    assert result.topics_averaged["p10_partial"] == 2  # topic 3 is not in the run


@pytest.mark.parametrize(("gains", "expected"), [
    ({"2": 1.0, "1": 0.3, "0": 0.0}, {2: 10, 1: 3, 0: 0}),
    ({"3": 1.0, "2": 0.5, "1": 0.25}, {3: 4, 2: 2, 1: 1}),
    ({"1": 2.0}, {1: 2}),
])
def test_gains_become_whole_numbers_with_the_same_ratios(gains: dict[str, float], expected: dict[int, int]) -> None:
    assert integer_gains(gains) == expected


def test_gains_without_a_small_whole_multiple_are_refused() -> None:
    with pytest.raises(ValueError, match="at most three decimals"):
        integer_gains({"1": 1 / 3 + 1e-7})


def test_cli_json_on_the_bundled_sample_names_the_procedures(tmp_path: Path, capsys) -> None:
    sample = Path(__file__).resolve().parent.parent / "tasks" / "samples" / "mathlib4-search"
    run = tmp_path / "run.txt"
    # a perfect run: every judged statement by grade (exact first)
    rows = []
    for line in (sample / "truth" / "qrels.txt").read_text().splitlines():
        topic, _, doc, grade = line.split()
        rows.append((topic, doc, int(grade)))
    with run.open("w") as out:
        for topic in dict.fromkeys(t for t, _, _ in rows):
            ranked = sorted((r for r in rows if r[0] == topic), key=lambda r: -r[2])
            for rank, (_, doc, _) in enumerate(ranked, 1):
                out.write(f"{topic} Q0 {doc} {rank} {100 - rank} perfect\n")
    code = cli_main(["evaluate", str(run), "--task", "mathlib4-search", "--truth", str(sample / "truth"), "--json"])
    assert code == 0
    data = json.loads(capsys.readouterr().out)
    result = data[0] if isinstance(data, list) else data
    assert result["scores"]["ndcg_cut_20"] == pytest.approx(1.0)
    assert "0.3" in next(m for m in result["measures"] if m["key"] == "ndcg_cut_20")["source"]
