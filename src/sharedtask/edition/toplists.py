"""Each topic's top ``k`` documents of one run, in trec_eval's order: the pooler's hot path.

Order: a document a run lists twice counts once, with its first line (as the ARQMath
evaluation keeps the first line of each (topic, post), sharedtask.evaluate.arqmath); then
score descending as a C float, ties by document id descending (trec_eval,
docs/evaluation.md). A contributor's rank is the 1-based place in that order.

Why two paths: pooling 100 runs x 100 topics x 1,000 lines must take seconds
(benchmarks/pooling.py), and building a record per line in Python costs more than the
budget. The fast path reads a run's bytes, checks with numpy that every line has the
layout's column count, and parses ranks and scores and sorts column-wise. Anything it does
not handle exactly as the project's reader does (non-ASCII bytes, a BOM, lone CRs, mixed
column counts, a rank or score that does not parse) goes to the slow path, which is the
project's streaming reader (sharedtask.formats.trec.read_run): its errors name the file,
line and column, and its rows give the same top lists (tests/test_edition_pooling.py
compares both paths with a naive pooler).
"""

from __future__ import annotations

import hashlib
from array import array
from collections import deque
from pathlib import Path

import numpy as np

from sharedtask.errors import FormatError
from sharedtask.formats._io import open_binary
from sharedtask.formats.trec import read_run

#: (columns, document column, rank column, score column) of the layouts pooled by document
_COLUMNS = {"trec": (6, 2, 3, 4), "arqmath-task1": (5, 1, 2, 3)}
_Q0 = (b"Q0", b"q0", b"0")
_WHITESPACE = np.zeros(256, dtype=bool)
_WHITESPACE[list(b" \t\n\r\x0b\x0c")] = True
#: printable ASCII and the whitespace bytes.split() splits on: what the fast path reads
_ORDINARY = bytes(range(0x20, 0x7F)) + b"\t\n\r\x0b\x0c"

TopLists = dict[str, list[tuple[str, int]]]  # topic -> [(doc, place)], place 1..k


def top_lists(path: Path, layout: str, depth: int, max_bytes: int | None = None) -> tuple[TopLists, int, str]:
    """({topic: [(doc, place)]} of the first ``depth`` places, lines read, sha256 of the file)."""
    with open_binary(path) as fh:
        data = fh.read() if max_bytes is None else fh.read(max_bytes + 1)
    if max_bytes is not None and len(data) > max_bytes:
        raise FormatError(path, f"run larger than {max_bytes:,} bytes (the task's output.max_run_bytes)",
                          hint="a run holds at most the task's results per topic")
    digest = hashlib.sha256(data).hexdigest() if not str(path).endswith(".gz") else _file_sha256(path)
    fast = _fast(data, layout, depth)
    if fast is not None:
        return fast[0], fast[1], digest
    lists, lines = _slow(path, layout, depth)
    return lists, lines, digest


def _file_sha256(path: Path) -> str:
    from sharedtask.data.checksum import sha256

    return sha256(Path(path))


def _fast(data: bytes, layout: str, depth: int) -> tuple[TopLists, int] | None:
    """The column-wise path; None when the run needs the record reader."""
    if layout not in _COLUMNS or not data:
        return None
    if data.translate(None, _ORDINARY):
        return None  # non-ASCII (or a BOM) or control bytes: str.split and bytes.split may differ
    if data.count(b"\r") != data.count(b"\r\n"):
        return None  # lone CRs end lines for the text reader
    raw = np.frombuffer(data, dtype=np.uint8)
    space = _WHITESPACE[raw]
    starts = np.flatnonzero(space[:-1] & ~space[1:]) + 1  # first byte of each token but the first
    if not space[0]:
        starts = np.concatenate(([0], starts))
    before = np.searchsorted(starts, np.flatnonzero(raw == 0x0A))  # tokens before each newline
    per_line = np.diff(np.concatenate(([0], before, [len(starts)])))  # tokens on each line
    per_line = per_line[per_line > 0]  # blank lines are skipped, as the reader does
    tokens = data.split()
    if not tokens:
        return {}, 0
    ncols, doc_col, rank_col, score_col = _COLUMNS[layout]
    if layout == "arqmath-task1" and per_line[0] == 6:
        ncols, doc_col, rank_col, score_col = 6, 2, 3, 4  # the lenient 6-column form with Q0
        if not np.isin(np.array(tokens[1::6]), _Q0).all():
            return None
    if (per_line != ncols).any():
        return None
    try:  # int() and float() as the reader parses them; the order ignores the rank
        deque(map(int, tokens[rank_col::ncols]), maxlen=0)
        scores = np.fromiter(map(float, tokens[score_col::ncols]), dtype=np.float64, count=len(per_line))
    except ValueError:
        return None  # the reader names the line and column
    topics, t_inv = _topic_ids(np.array(tokens[0::ncols]))
    docs, d_inv = np.unique(np.array(tokens[doc_col::ncols]), return_inverse=True)
    t_inv = t_inv.ravel()
    d_inv = d_inv.ravel()
    # first line of each (topic, doc), in file order
    _, first = np.unique(t_inv.astype(np.int64) * len(docs) + d_inv, return_index=True)
    first.sort()
    t_k, d_k = t_inv[first], d_inv[first]
    s_k = scores[first].astype(np.float32)
    order = np.lexsort((-d_k, -s_k, t_k))  # topic, then score desc (C float), then doc id desc
    t_sorted = t_k[order]
    place = np.arange(len(order)) - np.searchsorted(t_sorted, t_sorted, side="left") + 1
    take = place <= depth
    out: TopLists = {}
    for t, d, p in zip(t_sorted[take].tolist(), d_k[order][take].tolist(), place[take].tolist()):
        topic = topics[t].decode()
        rows = out.get(topic)
        if rows is None:
            rows = out[topic] = []
        rows.append((docs[d].decode(), p))
    return out, int(len(per_line))


def _topic_ids(column: np.ndarray) -> tuple[list[bytes], np.ndarray]:
    """(topic names, each line's topic index): by runs of equal topics, as runs list a topic's
    lines together; cheaper than sorting the column, and right in any order."""
    cut = np.flatnonzero(column[1:] != column[:-1]) + 1
    starts = np.concatenate(([0], cut))
    ids: dict[bytes, int] = {}
    segment = np.fromiter((ids.setdefault(name, len(ids)) for name in column[starts].tolist()), dtype=np.int64,
                          count=len(starts))
    return list(ids), np.repeat(segment, np.diff(np.append(starts, len(column))))


def _slow(path: Path, layout: str, depth: int) -> tuple[TopLists, int]:
    """The record reader's path: the same order, with the reader's exact errors."""
    per_topic: dict[str, dict[str, float]] = {}
    reader = read_run(path, layout)
    for row in reader:
        docs = per_topic.get(row.topic)
        if docs is None:
            docs = per_topic[row.topic] = {}
        if row.doc not in docs:
            docs[row.doc] = row.score
    out: TopLists = {}
    for topic, docs in per_topic.items():
        names = list(docs)
        scores = array("f", docs.values()).tolist()  # C floats, as trec_eval compares them
        order = sorted(range(len(names)), key=lambda i: (scores[i], names[i]), reverse=True)[:depth]
        out[topic] = [(names[i], place) for place, i in enumerate(order, 1)]
    return out, reader.rows
