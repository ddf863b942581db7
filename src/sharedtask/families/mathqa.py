"""MathQA: one program per problem, scored against the suite's files (its JSON and broken
list), not against qrels."""

from __future__ import annotations

from sharedtask.families.base import Family, register

register(Family(
    name="mathqa",
    title="MathQA",
    input="programs",
    evaluator="sharedtask.evaluate.api:score_mathqa",
    qrels=False,
    template="run_mathqa.py",
    approach="a one-step program over the problem's first two numbers whose value is an option",
))
