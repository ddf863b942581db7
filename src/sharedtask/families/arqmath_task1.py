"""ARQMath Task 1 (answer retrieval): a run of answer posts, scored on the prime run
(trec_eval, the organizers' de-duplication), with EXAM on the corpus's passages."""

from __future__ import annotations

from sharedtask.families.base import Family, register

register(Family(
    name="arqmath-task1",
    title="ARQMath Task 1",
    input="prime",
    extra_inputs=("exam-passages",),
    evaluator="sharedtask.evaluate.api:score_prime_task1",
    known_ids={"answer_ids": "sharedtask.validate.arqmath:dataset_answer_ids"},
    rerank_queries="sharedtask.rerank.texts:arqmath_queries",
    rerank_documents="sharedtask.rerank.texts:arqmath_documents",
    template="run_arqmath_task1.py",
    approach="term overlap of each answer post with the topic, one streamed pass over Posts.xml",
    assessment_topics="sharedtask.service.assessment.documents:arqmath_topics_html",
    assessment_items="sharedtask.service.assessment.documents:answer_items_html",
))
