"""Exact cosine top-k over unit vectors, and reciprocal rank fusion.

Exact search is a matrix product of the queries with every document block, keeping a
running top-k per query: the documents are scanned once and never all held as scores.

The same input gives the same bytes on every CPU: the vectors are quantised
(:func:`dense_baseline.encode.quantize`) so that the matrix product is exact whatever
order BLAS sums in, and the ranking is a total order, score descending and then doc id
descending (trec_eval's order for equal scores), so neither the CPU nor the number of
conversion threads (which decides the order documents are read in) can change it.
"""

from __future__ import annotations

import numpy as np

from dense_baseline.encode import SCALE_BITS, quantize

Hits = list[tuple[str, float]]  # (doc id, score) in rank order

#: exact dot products of quantised unit vectors back to cosines (a power of two: exact)
_UNSCALE = 2.0 ** (-2 * SCALE_BITS)


class TopK:
    """The k best (score, doc id) per query over blocks of documents."""

    def __init__(self, queries: np.ndarray, k: int) -> None:
        self.queries, self.k = quantize(queries), k
        self.scores = np.full((len(queries), 0), -np.inf, dtype=np.float64)
        self.ids = np.full((len(queries), 0), "", dtype=str)

    def add(self, block: np.ndarray, ids: list[str]) -> None:
        """Score one block of unit document vectors (with their ids) against every query."""
        scores = np.concatenate([self.scores, (self.queries @ quantize(block).T) * _UNSCALE], axis=1)
        names = np.concatenate([self.ids, np.broadcast_to(np.array(ids, dtype=str), (len(self.queries), len(ids)))],
                               axis=1)
        # ascending by (score, id), read backwards: score descending, then id descending
        order = np.lexsort((names, scores), axis=1)[:, ::-1][:, :self.k]
        self.scores = np.take_along_axis(scores, order, axis=1)
        self.ids = np.take_along_axis(names, order, axis=1)

    def hits(self) -> list[Hits]:
        return [[(str(i), float(s)) for s, i in zip(row_s, row_i) if np.isfinite(s)]
                for row_s, row_i in zip(self.scores, self.ids)]


def rrf(rankings: list[Hits], k: int = 60, depth: int = 1000) -> Hits:
    """Reciprocal rank fusion (Cormack, Clarke and Büttcher, SIGIR 2009): score(d) =
    sum over rankings of 1 / (k + rank of d), k = 60 as in the paper.

    Each document's terms are added in the order of ``rankings`` (Python floats, no
    vector code), so the fused score is the same bits everywhere. Equal fused scores are
    common (rank 1 + rank 3 ties rank 3 + rank 1); they are ordered by doc id descending,
    the order trec_eval gives them, so the rank column and trec_eval agree."""
    fused: dict[str, float] = {}
    for ranking in rankings:
        for rank, (doc, _) in enumerate(ranking, 1):
            fused[doc] = fused.get(doc, 0.0) + 1.0 / (k + rank)
    by_id_descending = sorted(fused.items(), reverse=True)
    return sorted(by_id_descending, key=lambda item: -item[1])[:depth]
