"""ARQMath-3 Task 3 (open-domain answers): one answer per topic, scored as the organizers'
evaluate_task3_results_{manual,automatic}.py score it (assessments, Lexical Overlap, EXAM)."""

from __future__ import annotations

from sharedtask.families.base import Family, register

register(Family(
    name="arqmath-task3",
    title="ARQMath-3 Task 3",
    input="task3",
    evaluator="sharedtask.evaluate.api:score_task3",
    template="run_arqmath_task3.py",
    approach="the text of the best-overlapping answer post, cut to the length limit",
    assessment_topics="sharedtask.service.assessment.documents:arqmath_topics_html",
    assessment_items="sharedtask.service.assessment.documents:answer_items_html",
))
