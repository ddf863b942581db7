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

from sharedtask.evaluate.api import evaluate
from sharedtask.evaluate.leaderboard import Leaderboard, leaderboard
from sharedtask.evaluate.result import EvaluationResult, MeasureInfo

__all__ = ["EvaluationResult", "Leaderboard", "MeasureInfo", "evaluate", "leaderboard"]
