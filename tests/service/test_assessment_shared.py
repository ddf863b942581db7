"""A task judged in another task's pools (ARQMath-3 Task 3 in Task 1's), through the service:
the Task 3 answers join Task 1's pool, the assessor reads them as text with their formulae, and
closing the campaign gives each task its own qrels and scores each task's runs against them.

Expected scores are computed here by hand from the grades the test gives, never read from our output.
"""

from __future__ import annotations

import csv
import hashlib
from pathlib import Path

import pytest

from service_helpers import REPO, call, database  # noqa: F401 - fixture
from service.test_assessment import finished_run, served_assessment
from sharedtask.service.models import Submission

TASK1, TASK3 = "arqmath-3-task1", "arqmath-3-task3"
RUN1 = REPO / "baselines" / "reference-runs" / TASK1 / "lucene-bm25.txt"
RUN3 = REPO / "baselines" / "reference-runs" / TASK3 / "extractive-qa.txt"


@pytest.fixture
def served(tmp_path: Path, database: str, monkeypatch):
    monkeypatch.setenv("SHAREDTASK_DATA", str(tmp_path / "store"))  # registered qrels stay in the test
    with served_assessment(tmp_path, database, [TASK1, TASK3]) as server:
        yield server


def answers_of(run: Path) -> dict[str, str]:
    """Task 3's run: topic -> its answer text (tab separated, csv quoting, as the official scripts read it)."""
    with run.open(encoding="utf-8", newline="") as fh:
        return {row[0]: row[5] for row in csv.reader(fh, delimiter="\t")}


def test_task3_answers_are_pooled_judged_and_scored_with_task1(served):
    url, factory, data_dir, tokens = served
    one = finished_run(factory, data_dir, "team-a", "bm25", RUN1.read_text(), task=TASK1)
    three = finished_run(factory, data_dir, "team-b", "qa", RUN3.read_text(), task=TASK3)
    answers = answers_of(RUN3)
    # the pool's answer ids, by the rule pooling documents: "a" + 16 hex digits of the text's sha256
    answer_ids = {t: "a" + hashlib.sha256(" ".join(text.split()).encode()).hexdigest()[:16] for t, text in answers.items()}

    status, pool = call(f"{url}/api/tasks/{TASK1}/pools", "POST", tokens["org"], {"seed": 5})
    assert status == 201, pool
    # six topics: Task 1's run (an alternate) to depth 20, and one answer per topic from Task 3's run
    assert pool["topics"] == 6 and pool["items"] == 6 * 20 + 6, pool
    status, campaign = call(f"{url}/api/tasks/{TASK1}/campaigns", "POST", tokens["org"],
                            {"pool": pool["id"], "assignments": {t: "alice" for t in answers}, "double_share": 0})
    assert status == 201, campaign
    cid = campaign["id"]

    task3_grade = {t: g for t, g in zip(sorted(answers), (3, 2, 0, 1, 0, 0))}
    for topic in sorted(answers):
        status, page = call(f"{url}/api/assess/campaigns/{cid}/topics/{topic}", token=tokens["alice"])
        assert status == 200, page
        items = {i["item"]: i for i in page["items"]}
        assert answer_ids[topic] in items  # Task 3's answer is in Task 1's pool
        shown = call(f"{url}/assess/campaigns/{cid}/topics/{topic}", headers={"Authorization": f"Bearer {tokens['alice']}"})[1]
        first_words = " ".join(answers[topic].split()[:4])
        assert 'class="answer"' in shown and first_words in shown  # read as its text, not "missing"
        for item in items:
            grade = task3_grade[topic] if item == answer_ids[topic] else 2
            status, body = call(f"{url}/api/assess/campaigns/{cid}/judgments", "POST", tokens["alice"],
                                {"topic": topic, "item": item, "grade": grade})
            assert status == 200, body

    status, closed = call(f"{url}/api/campaigns/{cid}/close", "POST", tokens["org"])
    assert status == 200, closed
    assert [s["task"] for s in closed["shared"]] == [TASK3] and closed["shared"][0]["scored_runs"] == 1
    assert closed["qrels"]["items"]["relevance"] == 6 * 20  # Task 1's qrels hold Task 1's items only
    with factory() as session:
        s1, s3 = session.get(Submission, one), session.get(Submission, three)
        scores1, scores3 = dict(s1.scores), dict(s3.scores)
    # Task 1: every pooled document judged 2 (relevant at -l2), so the run's prime top 20 is ideal
    assert scores1["ndcg_prime"] == pytest.approx(1.0) and scores1["p10_prime"] == pytest.approx(1.0)
    # Task 3 (ARQMath-3 overview §4.4): AR is the mean grade of the answers, P@1 the share graded H or M (>= 2)
    assert scores3["ar"] == pytest.approx(sum(task3_grade.values()) / 6)
    assert scores3["p1"] == pytest.approx(sum(g >= 2 for g in task3_grade.values()) / 6)
