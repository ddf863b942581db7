"""ARQMath Task 2 (formula retrieval): a run of formula instances, de-duplicated by visual id
into the prime run the organizers' scripts score with trec_eval."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from sharedtask.families.base import Family, register

if TYPE_CHECKING:
    from sharedtask.spec import Task


def known_formula_ids(task: Task, dataset: Path) -> object | None:
    """The formula ids of the dataset's formula index: a run's formula ids must be among them."""
    from sharedtask.validate import arqmath

    spec = task.input.file("formulas")
    if spec is None:
        return None
    return arqmath.formula_ids(arqmath.require(dataset, spec.path, "formula index"))


register(Family(
    name="arqmath-task2",
    title="ARQMath Task 2",
    input="prime",
    evaluator="sharedtask.evaluate.api:score_prime_task2",
    known_ids={"formula_ids": f"{__name__}:known_formula_ids"},
    template="run_arqmath_task2.py",
    approach="LaTeX symbol overlap (Dice) with the topic formula, one streamed pass over the formula index",
))
