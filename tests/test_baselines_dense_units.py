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

from dense_baseline.corpus import bm25_text, lean_words, statement_text  # noqa: E402
from dense_baseline.encode import SCALE_BITS, quantize  # noqa: E402
from dense_baseline.search import TopK, rrf  # noqa: E402


def _unit(rows: list[list[float]]) -> np.ndarray:
    m = np.asarray(rows, dtype=np.float64)
    return m / np.linalg.norm(m, axis=1, keepdims=True)


def test_exact_top_k_over_blocks_equals_one_sort_and_breaks_ties_by_doc_id_descending() -> None:
    docs = _unit([[1, 0], [0, 1], [1, 1], [1, 0], [-1, 0]])  # d0 and d3 are the same vector
    ids = ["d0", "d1", "d2", "d3", "d4"]
    query = _unit([[1, 0.1]])
    top = TopK(query, 3)
    top.add(docs[:2], ids[:2])  # blocks of 2, 2, 1: the running top-k must still be exact
    top.add(docs[2:4], ids[2:4])
    top.add(docs[4:], ids[4:])
    (hits,) = top.hits()
    # cosines: d0 = d3 = 0.995, d2 = 0.774, d1 = 0.0995, d4 = -0.995 -> the twins by id
    # descending (trec_eval's order for equal scores), whatever block each came in
    assert [doc for doc, _ in hits] == ["d3", "d0", "d2"]
    assert hits[0][1] == pytest.approx(1 / np.sqrt(1.01), abs=1e-6)
    assert hits[0][1] == hits[1][1]


def test_the_order_of_the_documents_does_not_change_the_ranking() -> None:
    # the conversion's thread count decides the order documents are read in
    rng = np.random.default_rng(7)
    docs = _unit(rng.integers(-3, 4, size=(60, 4)).tolist())  # many exact twins and ties
    ids = [f"doc{i:02d}" for i in range(60)]
    query = _unit([[1, 2, 0, -1]])
    forward, backward = TopK(query, 10), TopK(query, 10)
    for lo in range(0, 60, 7):
        forward.add(docs[lo:lo + 7], ids[lo:lo + 7])
    order = list(range(59, -1, -1))
    for lo in range(0, 60, 11):
        backward.add(docs[order[lo:lo + 11]], [ids[i] for i in order[lo:lo + 11]])
    assert forward.hits() == backward.hits()
    scores = [s for _, s in forward.hits()[0]]
    assert len(set(scores)) < len(scores)  # the test has ties to break


@pytest.mark.parametrize(("k", "block"), [(5, 16), (40, 16), (7, 7), (1, 50)])
def test_top_k_equals_a_full_sort_by_score_then_id_descending(k: int, block: int) -> None:
    # the pruned top-k (block's own k-th score, each query's running floor) against the
    # definition: every (score, id) of every document, sorted, first k; many ties on purpose
    rng = np.random.default_rng(11)
    docs = _unit(rng.integers(-2, 3, size=(200, 3)).tolist())
    docs = docs[np.isfinite(docs).all(axis=1)]
    ids = [f"d{rng.integers(10 ** 6):06d}-{i}" for i in range(len(docs))]
    queries = _unit([[1, 0, 0], [1, 1, 0], [0, -1, 2], [1, 1, 1]])
    top = TopK(queries, k)
    for lo in range(0, len(docs), block):
        top.add(docs[lo:lo + block], ids[lo:lo + block])
    exact = quantize(queries) @ quantize(docs).T * 2.0 ** (-2 * SCALE_BITS)
    for q, hits in enumerate(top.hits()):
        want = sorted(zip(exact[q].tolist(), ids), reverse=True)[:k]
        assert hits == [(doc, score) for score, doc in want]
        assert len({s for s, _ in want}) < len(want) or k == 1  # ties were there to break


def test_quantised_scores_are_exact_whatever_order_the_sum_takes() -> None:
    # BLAS sums in a CPU-dependent order; the quantised products must not care. Summed
    # here in three orders (BLAS, forward, reversed) in float64: the same bits each time.
    rng = np.random.default_rng(3)
    vectors = _unit(rng.normal(size=(50, 256)).tolist())
    q = quantize(vectors[:5])
    d = quantize(vectors[5:])
    blas = q @ d.T
    for i in range(5):
        for j in range(45):
            products = q[i] * d[j]
            forward = 0.0
            for x in products:
                forward += x
            backward = 0.0
            for x in products[::-1]:
                backward += x
            assert blas[i, j] == forward == backward == float(sum(int(a) * int(b) for a, b in zip(q[i], d[j])))
    assert np.abs(q).max() <= 2 ** SCALE_BITS


def test_top_k_keeps_fewer_hits_than_k_when_the_corpus_is_small() -> None:
    top = TopK(_unit([[0, 1], [1, 0]]), 10)
    top.add(_unit([[1, 0], [0, 1]]), ["a", "b"])
    assert [[d for d, _ in h] for h in top.hits()] == [["b", "a"], ["a", "b"]]


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


def test_an_empty_field_leaves_no_double_space_as_the_reranking_input_joins_them() -> None:
    """The real mathlib4 has informal = "" everywhere: the text must be the candidates' text
    (sharedtask.rerank.texts), or the dense re-ranked scores are not the full run's."""
    obj = {"id": "Nat.Prime.two_le", "name": "Nat.Prime.two_le", "informal": "", "formal": "theorem two_le : 2 ≤ p"}
    assert statement_text(obj) == "Nat.Prime.two_le theorem two_le : 2 ≤ p"
    assert statement_text({"name": "a", "informal": "", "formal": "b"}) == "a b"


def test_lean_names_are_split_into_words_at_dots_underscores_and_camel_case() -> None:
    assert lean_words("Nat.Prime.two_le") == "Nat Prime two le"
    assert lean_words("IsLeftRegular.all") == "Is Left Regular all"
    assert lean_words("HTTPServer") == "HTTP Server"
    assert lean_words("theorem mul_le_mul' (h : a ≤ b)") == "mul le mul"
    assert lean_words("plain words, two of them.") == ""  # nothing splits: nothing is added
    assert bm25_text("theorem Nat.succ_le") == "theorem Nat.succ_le Nat succ le"
    assert bm25_text("x y") == "x y"
