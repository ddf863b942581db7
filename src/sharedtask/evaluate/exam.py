"""EXAM and n-EXAM (Sander and Dietz, "EXAM: How to Evaluate Retrieve-and-Generate Systems
for Users Who Do Not (Yet) Know What They Want", DESIRES 2021) on one answer per topic.

Per topic with exam questions: EXAM = questions the run's text answers / questions
(``sharedtask.answers.exam``: a grader decides, offline by default); a topic the run does
not answer scores 0; the mean is over the topics with questions (macro average, as the
paper). n-EXAM divides a topic's EXAM by the EXAM of its gold text, here the best-scoring
known relevant (H+M) answer of the topic (answers.tsv); topics whose gold text answers no
question drop out (the ratio is undefined). No relevance judgment of the run's own text is
needed, which is what ARQMath-3 Task 3's generated answers lacked.
"""

from __future__ import annotations

from sharedtask.answers.exam import Grader, OfflineGrader
from sharedtask.evaluate.task3 import Task3Input


def _score(inp: Task3Input, topic: str, text: str, grader: Grader) -> float:
    questions = inp.exam[topic]
    return sum(grader.grade(q, text) for q in questions) / len(questions)


def exam(inp: Task3Input, grader: Grader | None = None) -> dict[str, float]:
    """EXAM per topic with questions."""
    grader = grader or OfflineGrader()
    return {topic: _score(inp, topic, inp.run.answers[topic], grader) if topic in inp.run.answers else 0.0
            for topic in sorted(inp.exam)}


def gold_exam(inp: Task3Input, grader: Grader | None = None) -> dict[str, float]:
    """The best EXAM of a topic's known relevant answers (grade 2 or 3), per topic with questions."""
    grader = grader or OfflineGrader()
    out: dict[str, float] = {}
    for topic in inp.exam:
        judgments = inp.qrels.get(topic, {})
        texts = [t for aid, t in inp.known.get(topic, {}).items() if 1 < judgments.get(aid, 0) < 4]
        out[topic] = max((_score(inp, topic, t, grader) for t in texts), default=0.0)
    return out


def n_exam(inp: Task3Input, grader: Grader | None = None) -> dict[str, float]:
    """n-EXAM per topic whose gold text answers at least one question."""
    mine, gold = exam(inp, grader), gold_exam(inp, grader)
    return {topic: mine[topic] / gold[topic] for topic in mine if gold[topic] > 0}
