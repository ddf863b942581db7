"""Touché Task 1 (argument retrieval): the organizers' nDCG@5 and trec_eval's ndcg_cut.5.

The official procedure (docs/evaluation.md, "Touché Task 1"), as the organizers'
touche-webis-de/touche-code clef21/evaluate.py computes it (commit 82329a4: load_qrels
lines 15-22, load_runs 25-49, calculate_scores 52-92, calculate_mean 95-104; checked by
tests/test_evaluate_touche_script.py):

1. qrels value -2 (spam / non-argument) becomes 0;
2. the run is sorted by its **rank column** and cut to the top 5; every line counts, so a
   document listed twice is counted twice (nDCG can then exceed 1, as in the script);
3. unjudged documents are dropped and the judged ones re-indexed from position 0;
4. DCG = sum(rel_i / log2(i + 2)) over the remaining ones;
5. IDCG from the topic's top-5 qrels values (after step 1);
6. the mean is over the topics with at least one judged document in their top 5.

Where the script's number is not defined we choose, and say so in the result's notes:
equal ranks are sorted by the script in an unspecified order (an unstable sort): we keep
file order; a topic whose IDCG is 0 (no positive judgment) divides by zero there: it is
left out of the mean, as a NaN is left out of a pandas mean.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from sharedtask.evaluate import readers

Qrels = dict[str, dict[str, int]]


@dataclass
class TrecRun:
    """A TREC run as read for Touché: per topic, every (rank, score, doc) line in file order."""

    rows: dict[str, list[tuple[int, float, str]]] = field(default_factory=dict)
    duplicates: int = 0  # lines repeating a (topic, doc) seen before
    lines: int = 0

    def score_dict(self) -> dict[str, dict[str, float]]:
        """{topic: {doc: score}} for trec_eval, a repeated doc keeping its first line."""
        out: dict[str, dict[str, float]] = {}
        for topic, rows in self.rows.items():
            docs = out[topic] = {}
            for _, score, doc in rows:
                docs.setdefault(doc, score)
        return out


def read_trec_run(path: Path) -> TrecRun:
    """Read a 6-column TREC run through ``formats.read_run``, keeping every line."""
    return next(read_trec_run_in_parts(path, None), TrecRun())


class TopicsInterleaved(Exception):
    """A topic came back after other topics: the run cannot be scored a few topics at a time."""


def read_trec_run_in_parts(path: Path, max_lines: int | None) -> Iterator[TrecRun]:
    """The run as consecutive parts of whole topics, each part about ``max_lines`` lines (a
    topic longer than that is one part), so that scoring a run grouped by topic (every run
    our baselines and TIRA's write) keeps one part in memory, not the whole run. Every
    per-topic figure is the same as over the whole run; with ``max_lines`` set, a topic that
    comes back after another raises :class:`TopicsInterleaved` (the caller reads the whole
    run: ``max_lines=None`` gives it as one part, in any topic order)."""
    part = TrecRun()
    seen: dict[str, set[str]] = {}
    done: set[str] = set()
    topic: str | None = None
    for row in readers.read_run(path, "trec"):
        if row.topic != topic and max_lines is not None:
            if row.topic in done or row.topic in part.rows:
                raise TopicsInterleaved(row.topic)
            if topic is not None and part.lines >= max_lines:
                done.update(part.rows)
                yield part
                part, seen = TrecRun(), {}
        topic = row.topic
        part.lines += 1
        docs = seen.setdefault(topic, set())
        if row.doc in docs:
            part.duplicates += 1
        docs.add(row.doc)
        part.rows.setdefault(topic, []).append((row.rank, row.score, row.doc))
    if part.lines:
        yield part


def rank_ties_in_top5(run: TrecRun) -> int:
    """Topics where equal ranks straddle or fill the top-5 cut: there the script's unstable
    sort decides, and its number is not defined."""
    count = 0
    for rows in run.rows.values():
        ranks = sorted(r for r, _, _ in rows)
        if len(ranks) > 1 and any(a == b for a, b in zip(ranks[:5], ranks[1:6])):
            count += 1
    return count


def official_gain(rel: int) -> int:
    """clef21/evaluate.py: -2 (spam) becomes 0; other grades are the gain as they are."""
    return 0 if rel == -2 else rel


def ndcg5_official_topic(rows: list[tuple[int, float, str]], judgments: dict[str, int]) -> float | None:
    """The official nDCG@5 of one topic, or None when the topic drops out of the mean."""
    top5 = sorted(rows, key=lambda r: r[0])[:5]  # rank column, stable on file order
    gains = [official_gain(judgments[doc]) for _, _, doc in top5 if doc in judgments]
    if not gains:
        return None  # no judged document in the top 5: the topic does not count
    dcg = sum(g / math.log2(i + 2) for i, g in enumerate(gains))
    ideal = sorted((official_gain(r) for r in judgments.values()), reverse=True)[:5]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    if idcg == 0:
        return None
    return dcg / idcg


def ndcg5_official(run: TrecRun, qrels: Qrels) -> dict[str, float]:
    """Per-topic official nDCG@5 for the topics that count (see the module docstring)."""
    out: dict[str, float] = {}
    for topic, rows in run.rows.items():
        judgments = qrels.get(topic)
        if not judgments:
            continue
        value = ndcg5_official_topic(rows, judgments)
        if value is not None:
            out[topic] = value
    return out
