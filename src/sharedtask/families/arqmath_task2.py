"""ARQMath Task 2 (formula retrieval): a run of formula instances, de-duplicated by visual id
into the prime run the organizers' scripts score with trec_eval."""

from __future__ import annotations

from sharedtask.families.base import Family, register

register(Family(
    name="arqmath-task2",
    title="ARQMath Task 2",
    input="prime",
    evaluator="sharedtask.evaluate.api:score_prime_task2",
    known_ids={"formula_ids": "sharedtask.validate.arqmath:dataset_formula_ids"},
    template="run_arqmath_task2.py",
    approach="LaTeX symbol overlap (Dice) with the topic formula, one streamed pass over the formula index",
    assessment_topics="sharedtask.service.assessment.documents:arqmath_topics_html",
    assessment_items="sharedtask.service.assessment.documents:formula_items_html",
))
