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

from sharedtask.answers.exam import Grader, OfflineGrader, grade_all
from sharedtask.evaluate.task3 import Task3Input


def _scores(inp: Task3Input, texts: list[tuple[str, str]], grader: Grader) -> list[float]:
    """EXAM of each (topic, text): the share of the topic's questions the text answers, graded in one batch."""
    pairs = [(q, text) for topic, text in texts for q in inp.exam[topic]]
    verdicts = iter(grade_all(grader, pairs))
    return [sum(next(verdicts) for _ in inp.exam[topic]) / len(inp.exam[topic]) for topic, _ in texts]


def _grader(inp: Task3Input, grader: Grader | None) -> Grader:
    return grader or inp.grader or OfflineGrader()


def exam(inp: Task3Input, grader: Grader | None = None) -> dict[str, float]:
    """EXAM per topic with questions."""
    answered = [(topic, inp.run.answers[topic]) for topic in sorted(inp.exam) if topic in inp.run.answers]
    scores = dict(zip((t for t, _ in answered), _scores(inp, answered, _grader(inp, grader))))
    return {topic: scores.get(topic, 0.0) for topic in sorted(inp.exam)}


def gold_exam(inp: Task3Input, grader: Grader | None = None) -> dict[str, float]:
    """The best EXAM of a topic's known relevant answers (grade 2 or 3), per topic with questions."""
    texts = []
    for topic in sorted(inp.exam):
        judgments = inp.qrels.get(topic, {})
        texts.extend((topic, t) for aid, t in inp.known.get(topic, {}).items() if 1 < judgments.get(aid, 0) < 4)
    out = {topic: 0.0 for topic in inp.exam}
    for (topic, _), score in zip(texts, _scores(inp, texts, _grader(inp, grader))):
        out[topic] = max(out[topic], score)
    return out


def n_exam(inp: Task3Input, grader: Grader | None = None) -> dict[str, float]:
    """n-EXAM per topic whose gold text answers at least one question."""
    mine, gold = exam(inp, grader), gold_exam(inp, grader)
    return {topic: mine[topic] / gold[topic] for topic in mine if gold[topic] > 0}
