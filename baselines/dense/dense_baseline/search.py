"""Exact cosine top-k over unit vectors, and reciprocal rank fusion.

Exact search is a matrix product of the queries with every document block, keeping a
running top-k per query: the documents are scanned once and never all held as scores.
Ties are broken by document order in the corpus (the earlier one first), so the same
input always gives the same ranking.
"""

from __future__ import annotations

import numpy as np

Hits = list[tuple[str, float]]  # (doc id, score) in rank order


class TopK:
    """The k best (score, position) per query over blocks of documents."""

    def __init__(self, queries: np.ndarray, k: int) -> None:
        self.queries, self.k = queries, k
        self.scores = np.full((len(queries), 0), -np.inf, dtype=np.float32)
        self.positions = np.zeros((len(queries), 0), dtype=np.int64)

    def add(self, block: np.ndarray, offset: int) -> None:
        """Score one block of document vectors (rows ``offset`` onwards) against every query."""
        scores = np.concatenate([self.scores, self.queries @ block.T], axis=1)
        positions = np.concatenate(
            [self.positions, np.broadcast_to(np.arange(offset, offset + len(block)), (len(self.queries), len(block)))],
            axis=1)
        # order by score descending, then by position ascending (stable and total)
        order = np.lexsort((positions, -scores), axis=1)[:, :self.k]
        self.scores = np.take_along_axis(scores, order, axis=1)
        self.positions = np.take_along_axis(positions, order, axis=1)

    def hits(self, ids: list[str]) -> list[Hits]:
        return [[(ids[p], float(s)) for s, p in zip(row_s, row_p) if np.isfinite(s)]
                for row_s, row_p in zip(self.scores, self.positions)]


def rrf(rankings: list[Hits], k: int = 60, depth: int = 1000) -> Hits:
    """Reciprocal rank fusion (Cormack, Clarke and Büttcher, SIGIR 2009): score(d) =
    sum over rankings of 1 / (k + rank of d), k = 60 as in the paper.

    Equal fused scores are common (rank 1 + rank 3 ties rank 3 + rank 1); they are ordered
    by doc id descending, the order trec_eval gives them, so the rank column and trec_eval agree."""
    fused: dict[str, float] = {}
    for ranking in rankings:
        for rank, (doc, _) in enumerate(ranking, 1):
            fused[doc] = fused.get(doc, 0.0) + 1.0 / (k + rank)
    by_id_descending = sorted(fused.items(), reverse=True)
    return sorted(by_id_descending, key=lambda item: -item[1])[:depth]
