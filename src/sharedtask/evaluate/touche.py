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

from operator import eq, itemgetter

from sharedtask.evaluate import readers
from sharedtask.evaluate.trec import order_flags
from sharedtask.formats._io import DECODE_ERRORS, open_text

Qrels = dict[str, dict[str, int]]


@dataclass
class TopicLines:
    """What scoring needs of one topic's lines, made in one sort by the rank column."""

    top5: list[str]  # the docs of the five lines with the smallest ranks (file order on equal ranks)
    scores: dict[str, float]  # doc -> score for trec_eval, a repeated doc keeping its first line
    lines: int
    rank_tie_at_top5: bool  # equal ranks straddle or fill the top-5 cut
    tie_reordered: bool  # trec_eval's order differs from the rank column because of tied scores
    scores_contradict: bool  # a score rises down the rank column


@dataclass
class TrecRun:
    """A TREC run as read for Touché and the other plain TREC tasks: a summary per topic."""

    topics: dict[str, TopicLines] = field(default_factory=dict)
    duplicates: int = 0  # lines repeating a (topic, doc) seen before
    lines: int = 0

    def score_dict(self) -> dict[str, dict[str, float]]:
        """{topic: {doc: score}} for trec_eval, a repeated doc keeping its first line."""
        return {topic: summary.scores for topic, summary in self.topics.items()}

    def order_changes(self) -> tuple[int, int]:
        """(topics reordered by tied scores, topics whose scores contradict the rank column),
        as :func:`sharedtask.evaluate.trec.count_order_changes` counts them."""
        return (sum(t.tie_reordered for t in self.topics.values()),
                sum(t.scores_contradict for t in self.topics.values()))


def read_trec_run(path: Path) -> TrecRun:
    """Read a 6-column TREC run, keeping every line."""
    return next(read_trec_run_in_parts(path, None), TrecRun())


class TopicsInterleaved(Exception):
    """A topic came back after other topics: the run cannot be scored a few topics at a time."""


class _Irregular(Exception):
    """A line the one-pass reader does not take: the shared reader reads the file and says why."""


def _summary(docs: list[str], ranks_text: list[str], scores_text: list[str]) -> TopicLines:
    """One topic's summary from its columns as written (whole-column conversions and one
    sort, no per-line Python: this is what keeps evaluation at pytrec_eval's own speed)."""
    ranks = list(map(int, ranks_text))  # ValueError: the shared reader names the line
    scores = list(map(float, scores_text))
    order = sorted(range(len(ranks)), key=ranks.__getitem__)  # stable: file order on equal ranks
    by_rank = itemgetter(*order)
    ranked_docs = list(by_rank(docs)) if len(order) > 1 else [docs[order[0]]]
    ranked_scores = list(by_rank(scores)) if len(order) > 1 else [scores[order[0]]]
    first6 = [ranks[i] for i in order[:6]]
    tie_reordered, contradicts = order_flags(ranked_scores, ranked_docs)
    return TopicLines(
        top5=ranked_docs[:5],
        scores=dict(zip(reversed(docs), reversed(scores))),  # reversed: the first line of a doc wins
        lines=len(docs),
        rank_tie_at_top5=any(map(eq, first6[:5], first6[1:6])),
        tie_reordered=tie_reordered,
        scores_contradict=contradicts,
    )


def read_trec_run_in_parts(path: Path, max_lines: int | None) -> Iterator[TrecRun]:
    """The run as consecutive parts of whole topics, each part about ``max_lines`` lines (a
    topic longer than that is one part), so that scoring a run grouped by topic (every run
    our baselines and TIRA's write) keeps one part in memory, not the whole run. Every
    per-topic figure is the same as over the whole run; with ``max_lines`` set, a topic that
    comes back after another raises :class:`TopicsInterleaved` (the caller reads the whole
    run: ``max_lines=None`` gives it as one part, in any topic order).

    One pass with ``str.split`` per line, as a bare pytrec_eval script reads a run; a line
    that is not six columns, a rank or score that does not convert and text that is not
    UTF-8 hand the file to the shared reader (``formats.read_run``), whose error names the
    line and column."""
    try:
        yield from _parts(path, max_lines)
    except (_Irregular, ValueError, *DECODE_ERRORS):
        for _ in readers.read_run(path, "trec"):
            pass  # raises the shared reader's FormatError
        raise  # the shared reader took the file: a bug of ours, never hidden


def _parts(path: Path, max_lines: int | None) -> Iterator[TrecRun]:
    part = TrecRun()
    columns: dict[str, tuple[list[str], list[str], list[str]]] = {}
    done: set[str] = set()
    topic: str | None = None
    docs = ranks = scores = None  # the current topic's columns

    def close_topic(name: str) -> None:
        summary = part.topics[name] = _summary(*columns.pop(name))
        part.duplicates += summary.lines - len(summary.scores)

    with open_text(path) as handle:
        for line in handle:
            fields = line.split()
            if len(fields) != 6:
                if fields:
                    raise _Irregular
                continue
            if fields[0] != topic:
                if max_lines is not None:
                    if topic is not None:
                        close_topic(topic)  # grouped: the topic is whole, only its summary stays
                    topic = fields[0]
                    if topic in done or topic in part.topics:
                        raise TopicsInterleaved(topic)
                    if part.lines >= max_lines:
                        done.update(part.topics)
                        yield part
                        part = TrecRun()
                else:
                    topic = fields[0]
                columns.setdefault(topic, ([], [], []))
                docs, ranks, scores = columns[topic]
            docs.append(fields[2])
            ranks.append(fields[3])
            scores.append(fields[4])
            part.lines += 1
    for name in list(columns):
        close_topic(name)
    if part.lines:
        yield part


def rank_ties_in_top5(run: TrecRun) -> int:
    """Topics where equal ranks straddle or fill the top-5 cut: there the script's unstable
    sort decides, and its number is not defined."""
    return sum(summary.rank_tie_at_top5 for summary in run.topics.values())


def official_gain(rel: int) -> int:
    """clef21/evaluate.py: -2 (spam) becomes 0; other grades are the gain as they are."""
    return 0 if rel == -2 else rel


def ndcg5_official_topic(top5: list[str], judgments: dict[str, int]) -> float | None:
    """The official nDCG@5 of one topic from the docs of its five lines with the smallest ranks
    (stable on file order), or None when the topic drops out of the mean."""
    gains = [official_gain(judgments[doc]) for doc in top5 if doc in judgments]
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
    for topic, summary in run.topics.items():
        judgments = qrels.get(topic)
        if not judgments:
            continue
        value = ndcg5_official_topic(summary.top5, judgments)
        if value is not None:
            out[topic] = value
    return out
