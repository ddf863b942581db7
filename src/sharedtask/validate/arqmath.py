"""ARQMath specifics: collection id sets (answers, formulas) and the run-file name.

Posts.xml has ~1.4M answers and the formula index ~28M formulas: ids are kept in a
bitmap (one bit per possible id, numpy) instead of a Python set of ints, i.e. a few
MB instead of GBs, and a topic's ids are looked up in one vectorized step.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sharedtask.errors import SharedTaskError
from sharedtask.findings import Severity
from sharedtask.validate.model import Collector

if TYPE_CHECKING:
    import numpy as np


class IdSet:
    """A set of non-negative integer ids stored as a growable bitmap."""

    def __init__(self) -> None:
        import numpy as np  # lazily: only runs checked against a collection need it

        self._bits = np.zeros(1 << 16, dtype=np.uint8)
        self.size = 0

    def add_many(self, ids: Iterable[int], batch: int = 1 << 20) -> None:
        import numpy as np

        buf: list[int] = []
        for i in ids:
            buf.append(i)
            if len(buf) >= batch:
                self._add(np.asarray(buf, dtype=np.int64))
                buf.clear()
        if buf:
            self._add(np.asarray(buf, dtype=np.int64))

    def _add(self, arr: np.ndarray) -> None:
        import numpy as np

        arr = arr[arr >= 0]
        if arr.size == 0:
            return
        need = int(arr.max() >> 3) + 1
        if need > self._bits.size:
            grown = np.zeros(max(need, self._bits.size * 2), dtype=np.uint8)
            grown[: self._bits.size] = self._bits
            self._bits = grown
        np.bitwise_or.at(self._bits, arr >> 3, (1 << (arr & 7)).astype(np.uint8))
        self.size += int(arr.size)

    def missing(self, ids: list[int]) -> list[int]:
        """Positions in ``ids`` whose id is not in the set (negative ids count as missing)."""
        import numpy as np

        arr = np.asarray(ids, dtype=np.int64)
        inside = (arr >= 0) & ((arr >> 3) < self._bits.size)
        hit = np.zeros(arr.size, dtype=bool)
        sel = arr[inside]
        hit[inside] = (self._bits[sel >> 3] >> (sel & 7).astype(np.uint8)) & 1 == 1
        return np.flatnonzero(~hit).tolist()

    def __contains__(self, i: int) -> bool:
        return not self.missing([i])


# --------------------------------------------------------------------- collection


def answer_ids(path: Path) -> IdSet:
    """Ids of the answer posts (PostTypeId 2) in Posts.xml, read once with the shared reader."""
    from sharedtask.formats import Answer, read_posts

    ids = IdSet()
    ids.add_many(int(p.id) for p in read_posts(path) if isinstance(p, Answer) and p.id.isdigit())
    return ids


def formula_ids(paths: list[Path]) -> IdSet:
    """Formula ids (column ``id``) of the formula index TSV files."""
    from sharedtask.formats import read_formula_index

    ids = IdSet()
    for path in paths:
        ids.add_many(int(r.id) for r in read_formula_index(path) if r.id.isdigit())
    return ids


def dataset_answer_ids(task: Any, dataset: Path) -> IdSet | None:
    """ARQMath Task 1: the answer ids of the dataset's posts file (a run's post ids must be among them)."""
    posts = task.input.file("posts")
    return answer_ids(require(dataset, posts.path, "posts file")[0]) if posts is not None else None


def dataset_formula_ids(task: Any, dataset: Path) -> IdSet | None:
    """ARQMath Task 2: the formula ids of the dataset's formula index (a run's formula ids must be among them)."""
    spec = task.input.file("formulas")
    return formula_ids(require(dataset, spec.path, "formula index")) if spec is not None else None


def input_files(dataset: Path, pattern: str) -> list[Path]:
    if any(ch in pattern for ch in "*?["):
        return sorted(p for p in dataset.glob(pattern) if p.is_file())
    p = dataset / pattern
    return [p] if p.is_file() else []


def require(dataset: Path, pattern: str, what: str) -> list[Path]:
    found = input_files(dataset, pattern)
    if not found:
        raise SharedTaskError(f"{dataset}: no {what} ({pattern}) in the input dataset",
                              hint="--input must be the task's dataset folder ($inputDataset)")
    return found


# ----------------------------------------------------------------------- file name


def check_file_name(out: Collector, name: str, pattern: str | None) -> None:
    """ARQMath's submission naming convention: a warning, casing differences too (lenient)."""
    if pattern is None or name in ("run.txt", "run.txt.gz"):
        return
    if re.fullmatch(pattern, name):
        return
    if re.fullmatch(pattern, name, re.IGNORECASE):
        out.add(
            Severity.WARNING,
            "RUN-FILE-NAME-CASE",
            f"file name {name!r} follows the naming convention only when case is ignored",
            hint=f"the convention is {pattern!r} (e.g. team-task1-run-auto-both-P.tsv)",
        )
        return
    out.add(
        Severity.WARNING,
        "RUN-FILE-NAME",
        f"file name {name!r} does not follow the task's naming convention",
        hint=f"name submitted runs like {pattern!r}: Team-taskN-RunName-{{auto|manual}}-{{math|text|both}}-{{P|A}}.tsv",
    )
