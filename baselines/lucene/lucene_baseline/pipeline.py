"""Convert -> index -> search, the steps every Lucene-based baseline shares."""

from __future__ import annotations

import logging
import shutil
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from lucene_baseline import anserini
from lucene_baseline.anserini import Hit, Model
from lucene_baseline.jsonl import ShardedJsonl

log = logging.getLogger("baseline")


def build_index(work: Path, threads: int, convert: Callable[[ShardedJsonl], int],
                pretokenized: bool = False, timings: dict[str, float] | None = None) -> Path:
    """Write the documents with ``convert`` as JSONL shards, index them, drop the JSONL.

    ``timings`` (if given) receives the seconds spent converting and indexing.
    """
    jsonl_dir, index_dir = work / "jsonl", work / "index"
    t0 = time.monotonic()
    with ShardedJsonl(jsonl_dir, threads) as out:
        count = convert(out)
    t1 = time.monotonic()
    log.info("converted %d documents in %.1f s", count, t1 - t0)
    if count == 0:
        raise RuntimeError("the input holds no documents to index")
    anserini.index(jsonl_dir, index_dir, threads, pretokenized=pretokenized)
    t2 = time.monotonic()
    log.info("indexed in %.1f s", t2 - t1)
    shutil.rmtree(jsonl_dir, ignore_errors=True)  # scratch space may be a small tmpfs
    if timings is not None:
        timings["convert"], timings["index"] = t1 - t0, t2 - t1
    return index_dir


def search(index_dir: Path, work: Path, queries: Iterable[tuple[str, str]], model: Model,
           hits: int, threads: int, run_tag: str, pretokenized: bool = False) -> dict[str, list[Hit]]:
    """Run all queries; hits per topic in rank order, topics in query order.

    Topics whose query is empty after cleaning get no hits (Lucene would reject
    an empty query and abort the whole batch).
    """
    order: list[str] = []
    topics_tsv = work / "topics.tsv"
    with open(topics_tsv, "w", encoding="utf-8") as f:
        for qid, text in queries:
            order.append(qid)
            if text.strip():
                f.write(f"{qid}\t{text}\n")
            else:
                log.info("topic %s has an empty query: no results for it", qid)
    run_file = work / "anserini-run.txt"
    t0 = time.monotonic()
    anserini.search(index_dir, topics_tsv, run_file, model, hits, threads, run_tag,
                    pretokenized=pretokenized)
    by_topic: dict[str, list[Hit]] = {qid: [] for qid in order}
    for hit in anserini.read_run(run_file):
        by_topic.setdefault(hit.topic, []).append(hit)
    for hits_of_topic in by_topic.values():
        hits_of_topic.sort(key=lambda h: h.rank)
    log.info("searched %d topics in %.1f s", len(order), time.monotonic() - t0)
    return by_topic
