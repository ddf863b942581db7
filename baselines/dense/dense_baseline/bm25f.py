"""Cross-field BM25 (BM25F) re-ranking of a first stage's candidates, with no index.

BM25F as Robertson, Zaragoza and Taylor define it ("Simple BM25 extension to multiple
weighted fields", CIKM 2004): each field's term frequency is normalised by that field's
length, weighted, and summed before the one saturation,

    tf~(t, d) = sum_f  w_f * tf(t, f, d) / ((1 - b) + b * len(f, d) / avglen(f))
    score(d)  = sum_{t in query} idf(t) * tf~(t, d) / (k1 + tf~(t, d))

with Lucene's idf, ln(1 + (N - df + 0.5) / (df + 0.5)), and Anserini's k1 = 0.9, b = 0.4.
A re-ranker sees no collection, so N, df and the average field lengths are those of the
candidate pool (every distinct candidate of every topic): the statistics of the documents
the first stage found, not of the corpus. The field weights favour the short field that
states the document's point (a conclusion, a question title, a statement's name) two to one;
they are set by hand, not tuned. Terms: lower-cased letters and digits, English stopwords
dropped (Lucene's default English stop set), no stemming. Sums run in a fixed term order
over Python floats, so the scores are the same bits on every CPU.
"""

from __future__ import annotations

import math
import re
from collections import Counter

from dense_baseline.rerank import read_candidates
from dense_baseline.search import Hits

K1, B = 0.9, 0.4
#: field weights per task family (the fields of rerank.jsonl.gz, docs/formats.md)
WEIGHTS: dict[str, dict[str, float]] = {
    "touche": {"conclusion": 2.0, "premises": 1.0},
    "arqmath-task1": {"title": 2.0, "body": 1.0},
    "semantic-search": {"name": 2.0, "informal": 1.0, "formal": 1.0},
}
#: Lucene's EnglishAnalyzer default stop words
STOPWORDS = frozenset("a an and are as at be but by for if in into is it no not of on or such that the their then "
                      "there these they this to was will with".split())
_WORD = re.compile(r"[^\W_]+")


def terms(text: str) -> list[str]:
    return [w for w in _WORD.findall(text.lower()) if w not in STOPWORDS]


class Pool:
    """The candidate pool's statistics: documents, document frequencies, mean field lengths."""

    def __init__(self, docs: dict[str, dict[str, list[str]]], weights: dict[str, float]) -> None:
        self.weights = weights
        self.n = len(docs)
        self.df: Counter[str] = Counter()
        lengths: dict[str, float] = {f: 0.0 for f in weights}
        for fields in docs.values():
            self.df.update({t for f in weights for t in fields.get(f, [])})
            for f in weights:
                lengths[f] += len(fields.get(f, []))
        self.avg = {f: (lengths[f] / self.n if self.n else 0.0) for f in weights}

    def idf(self, term: str) -> float:
        df = self.df.get(term, 0)
        return math.log(1.0 + (self.n - df + 0.5) / (df + 0.5))

    def score(self, query: list[str], fields: dict[str, list[str]]) -> float:
        counts = {f: Counter(fields.get(f, [])) for f in self.weights}
        total = 0.0
        for term in sorted(set(query)):
            tf = 0.0
            for f, w in self.weights.items():
                if counts[f][term]:
                    norm = (1.0 - B) + B * (len(fields.get(f, [])) / self.avg[f] if self.avg[f] else 0.0)
                    tf += w * counts[f][term] / norm
            if tf:
                total += self.idf(term) * tf / (K1 + tf)
        return total


def bm25f_hits(path, queries: list[tuple[str, str]], hits: int, family: str) -> tuple[list[Hits], int]:
    """Each query's candidates re-scored by BM25F (ties by doc id descending, trec_eval's order)."""
    weights = WEIGHTS[family]
    candidates = read_candidates(path)
    docs: dict[str, dict[str, list[str]]] = {}
    for rows in candidates.values():
        for c in rows:
            if c.docno not in docs:
                docs[c.docno] = {f: terms(c.fields.get(f, "")) for f in weights}
    pool = Pool(docs, weights)
    out: list[Hits] = []
    count = 0
    for qid, query in queries:
        rows = candidates.get(qid, [])
        words = terms(query or (rows[0].query if rows else ""))
        scored = sorted(((pool.score(words, docs[c.docno]), c.docno) for c in rows), reverse=True)[:hits]
        out.append([(doc, score) for score, doc in scored])
        count += len(rows)
    return out, count
