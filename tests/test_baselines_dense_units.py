"""The dense baseline's ranking code (no Docker, no model): exact cosine top-k and
reciprocal rank fusion, with expected orders worked out by hand. The encoder itself
(WordLlama) only exists inside the baseline image; tests/test_baselines_docker.py runs it."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parent.parent
for folder in ("lucene", "dense"):
    sys.path.insert(0, str(REPO / "baselines" / folder))

from dense_baseline.corpus import statement_text  # noqa: E402
from dense_baseline.search import TopK, rrf  # noqa: E402


def _unit(rows: list[list[float]]) -> np.ndarray:
    m = np.asarray(rows, dtype=np.float32)
    return m / np.linalg.norm(m, axis=1, keepdims=True)


def test_exact_top_k_over_blocks_equals_one_sort_and_breaks_ties_by_corpus_order() -> None:
    docs = _unit([[1, 0], [0, 1], [1, 1], [1, 0], [-1, 0]])  # d0 and d3 are the same vector
    ids = ["d0", "d1", "d2", "d3", "d4"]
    query = _unit([[1, 0.1]])
    top = TopK(query, 3)
    top.add(docs[:2], 0)  # blocks of 2, 2, 1: the running top-k must still be exact
    top.add(docs[2:4], 2)
    top.add(docs[4:], 4)
    (hits,) = top.hits(ids)
    # cosines: d0 = d3 = 0.995, d2 = 0.774, d1 = 0.0995, d4 = -0.995 -> d0 before its twin d3
    assert [doc for doc, _ in hits] == ["d0", "d3", "d2"]
    assert hits[0][1] == pytest.approx(1 / np.sqrt(1.01), abs=1e-6)


def test_top_k_keeps_fewer_hits_than_k_when_the_corpus_is_small() -> None:
    top = TopK(_unit([[0, 1], [1, 0]]), 10)
    top.add(_unit([[1, 0], [0, 1]]), 0)
    assert [[d for d, _ in h] for h in top.hits(["a", "b"])] == [["b", "a"], ["a", "b"]]


def test_rrf_by_hand() -> None:
    bm25 = [("a", 9.0), ("b", 8.0), ("c", 7.0)]
    dense = [("c", 0.9), ("a", 0.8), ("d", 0.7)]
    fused = rrf([bm25, dense], k=60)
    # a: 1/61 + 1/62, c: 1/63 + 1/61, b: 1/62, d: 1/63
    assert [doc for doc, _ in fused] == ["a", "c", "b", "d"]
    assert fused[0][1] == pytest.approx(1 / 61 + 1 / 62)
    assert fused[1][1] == pytest.approx(1 / 63 + 1 / 61)


def test_rrf_ties_in_trec_eval_order_and_depth() -> None:
    # x at 1 and 2, y at 2 and 1: equal fused scores -> doc id descending, as trec_eval orders ties
    fused = rrf([[("x", 1.0), ("y", 0.5)], [("y", 1.0), ("x", 0.5)]], depth=1)
    assert fused == [("y", pytest.approx(1 / 61 + 1 / 62))]


def test_statement_text_puts_the_informal_name_and_text_before_the_formal_statement() -> None:
    obj = {"id": "x", "name": "Lagrange", "informal": "order divides", "formal": "theorem x : a ∣ b"}
    assert statement_text(obj) == "Lagrange order divides theorem x : a ∣ b"
    assert statement_text({"id": "y", "formal": "theorem y"}) == "theorem y"
