"""Task families registered once (``sharedtask.families.base``): each module here declares
one family and registers it at its foot.

    from sharedtask import families
    families.get(task.family).evaluator    # "sharedtask.evaluate.api:score_trec_run"

A family module holds declarations only: its hooks name the machinery ("module:function",
imported on first use), so importing the registry loads no reader, no numpy, no spec
(tests/test_startup.py), and no family module imports a package that asks the registry.
"""

from __future__ import annotations

from sharedtask.families.base import INPUTS, REGISTRY, Family, get, register, resolve

# Each import registers its family (ir_datasets' datasets/__init__.py does the same).
from sharedtask.families import arqmath_task1, arqmath_task2, arqmath_task3, mathqa, semantic_search, touche  # noqa: E402,F401  isort: skip


def names() -> list[str]:
    """Every registered family, sorted."""
    return sorted(REGISTRY)


def rerankable() -> list[Family]:
    """The families whose texts a re-ranker can read, in registration order."""
    return [f for f in REGISTRY.values() if f.reranks]


__all__ = ["INPUTS", "REGISTRY", "Family", "get", "names", "register", "rerankable", "resolve"]
