"""Official evaluation of runs: ARQMath prime measures, Task 3 AR/P@1/LO, Touché nDCG@5.

Public API::

    from sharedtask.evaluate import evaluate, leaderboard
    result = evaluate("run.txt", "arqmath-3-task1", qrels=Path("qrels.tsv"), per_topic=True)
    result.scores["ndcg_prime"], result.notes, result.to_json()
    board = leaderboard({"runA": result_a, "runB": result_b}, "arqmath-3-task1", test="ttest")
    board.to_json(), board.to_csv(), board.table()

Measures are declared in :mod:`sharedtask.measures` (the registry); their procedures
and sources: docs/evaluation.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sharedtask.evaluate.leaderboard import Leaderboard, leaderboard
from sharedtask.evaluate.result import EvaluationResult, MeasureInfo

if TYPE_CHECKING:
    from sharedtask.evaluate.api import evaluate

__all__ = ["EvaluationResult", "Leaderboard", "MeasureInfo", "evaluate", "leaderboard"]


def __getattr__(name: str) -> Any:
    """``evaluate`` is imported on first use (PEP 562): it loads the readers and pytrec_eval
    (~0.3 s), which the CLI's parser must not pay for the reproduction defaults it reads
    from this package."""
    if name == "evaluate":
        from sharedtask.evaluate.api import evaluate

        return evaluate
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
