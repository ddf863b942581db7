"""The candidates a first stage hands over: its top ``depth`` documents per topic.

Ranked as trec_eval ranks a run (score descending, ties by document id descending;
trec_eval 9.0.8 ``form_res_rels.c`` sorts that way and ignores the rank column), so a
re-ranker sees exactly the documents that trec_eval would have scored at that depth.
Memory is bounded by topics × depth: each topic keeps a heap of its best ``depth`` rows.
"""

from __future__ import annotations

import heapq
from pathlib import Path
from typing import NamedTuple

from sharedtask.formats.trec import read_run


class Candidate(NamedTuple):
    qid: str
    docno: str
    rank: int  # 1-based, in trec_eval order
    score: float  # the first stage's score


def top_candidates(run: Path, depth: int, layout: str = "auto") -> dict[str, list[Candidate]]:
    """Each topic's best ``depth`` documents of ``run``, in first-appearance order of the topics.

    A document listed twice for a topic counts once, with its first line (trec_eval reads
    both; the validator already refuses such runs, this only keeps the input well-formed).
    """
    if depth < 1:
        raise ValueError("depth must be at least 1")
    heaps: dict[str, list[tuple[float, str]]] = {}
    seen: dict[str, set[str]] = {}
    for row in read_run(run, layout):
        doc = row.doc or (row.post_id or "")
        docs = seen.setdefault(row.topic, set())
        if doc in docs:
            continue
        docs.add(doc)
        heap = heaps.setdefault(row.topic, [])
        item = (row.score, doc)
        if len(heap) < depth:
            heapq.heappush(heap, item)
        elif item > heap[0]:
            heapq.heapreplace(heap, item)
    out: dict[str, list[Candidate]] = {}
    for topic, heap in heaps.items():
        ranked = sorted(heap, reverse=True)
        out[topic] = [Candidate(topic, doc, rank, score) for rank, (score, doc) in enumerate(ranked, 1)]
    return out
