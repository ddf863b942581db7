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
    """The k best (score, doc id) per query over blocks of documents.

    Per block, only the documents that can still enter a query's top k are looked at: those
    scoring at least both the block's own k-th best score (``np.partition``) and the query's
    k-th best so far. Ties at that floor are kept and settled by doc id, so the result is
    the exact top k of the total order. Why not one ``lexsort`` of every score with its id:
    the ids were broadcast to every query, (queries x (k + block)) strings per block, which
    for 1,000 queries over mathlib4's 185k statements (ids up to ~150 characters) took
    3.9 GB and minutes per block; the candidates are a handful of rows after the first blocks.
    """

    def __init__(self, queries: np.ndarray, k: int) -> None:
        self.queries, self.k = quantize(queries), k
        self.best: list[list[tuple[float, str]]] = [[] for _ in range(len(queries))]  # (score, id) descending
        self.floor = np.full(len(queries), -np.inf)  # each query's k-th best score (-inf until it has k)

    def add(self, block: np.ndarray, ids: list[str]) -> None:
        """Score one block of unit document vectors (with their ids) against every query."""
        scores = (self.queries @ quantize(block).T) * _UNSCALE
        threshold = self.floor
        if scores.shape[1] > self.k:
            kth = np.partition(scores, scores.shape[1] - self.k, axis=1)[:, scores.shape[1] - self.k]
            threshold = np.maximum(threshold, kth)
        rows, cols = np.nonzero(scores >= threshold[:, None])  # row-major: each query's candidates together
        if not len(rows):
            return
        bounds = (np.flatnonzero(np.diff(rows)) + 1).tolist()
        for start, end in zip([0, *bounds], [*bounds, len(rows)]):
            r = int(rows[start])
            picked = cols[start:end]
            merged = self.best[r] + list(zip(scores[r, picked].tolist(), [ids[c] for c in picked.tolist()]))
            # descending by (score, id): score descending, then id descending
            self.best[r] = sorted(merged, reverse=True)[:self.k]
            if len(self.best[r]) == self.k:
                self.floor[r] = self.best[r][-1][0]

    def hits(self) -> list[Hits]:
        return [[(doc, score) for score, doc in row if np.isfinite(score)] for row in self.best]


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
