"""``python -m dense_baseline``: dense, BM25 or hybrid runs for mathlib4-search, Touché
Task 1 and ARQMath Task 1.

    python -m dense_baseline [--mode dense|bm25|hybrid|rerank|bm25f] [--hits 1000] [--block 4096]

``dense``: WordLlama vectors (encode.py), exact cosine top-k (search.py). ``bm25``:
Anserini BM25 (k1 0.9, b 0.4) over the same document text. ``hybrid``: both, fused by
reciprocal rank fusion (k = 60); on mathlib4 BM25 also indexes and searches the words of
each Lean name (corpus.bm25_text). ``rerank``: the dense scores of a first stage's
candidates (the re-rank dataset's ``$inputDataset/rerank.jsonl.gz``, rerank.py), no index;
``bm25f``: the same candidates by cross-field BM25 (bm25f.py). Reads ``$inputDataset``,
writes ``$outputDir/run.txt``.
No network at any point: the model's weights are inside the image's wordllama wheel.
"""

from __future__ import annotations

import argparse
import logging
import os
import time

from lucene_baseline.anserini import Model
from lucene_baseline.anserini import index as anserini_index
from lucene_baseline.contract import RUN_FILE, prepare, scratch_dir
from lucene_baseline.jsonl import ShardedJsonl, clean_query
from lucene_baseline.pipeline import search as bm25_search
from sharedtask.formats.trec import RunRow, write_run

from dense_baseline import bm25f, corpus, encode, rerank
from dense_baseline.search import Hits, TopK, rrf

log = logging.getLogger("baseline")

#: run layouts of sharedtask.formats.trec per task family
LAYOUT = {"semantic-search": "trec", "touche": "trec", "arqmath-task1": "arqmath-task1"}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="dense_baseline", description=__doc__.split("\n")[0])
    p.add_argument("--mode", choices=("dense", "bm25", "hybrid", "rerank", "bm25f"),
                   default=os.environ.get("BASELINE_MODE", "dense"))
    p.add_argument("--hits", type=int, default=1000, help="results per topic (the tasks allow 1000)")
    p.add_argument("--block", type=int, default=4096, help="documents embedded and scored per block")
    p.add_argument("--rrf-k", type=int, default=60, help="reciprocal rank fusion constant (Cormack et al.: 60)")
    p.add_argument("--threads", type=int, default=0, help="conversion/indexing threads (default: all CPUs)")
    p.add_argument("--tag", default=None, help="run tag (default sharedtask-<mode>)")
    p.add_argument("--input", help="dataset folder (default $inputDataset)")
    p.add_argument("--output", help="output folder (default $outputDir)")
    p.add_argument("--input-run", help="a stage folder for --mode rerank and bm25f when $inputDataset holds no rerank.jsonl.gz "
                   "(default $inputRun)")
    p.add_argument("--work", help="keep scratch files (JSONL, index) in this folder")
    return p.parse_args(argv)


def dense_hits(jsonl_dir, queries: list[tuple[str, str]], hits: int, block: int) -> list[Hits]:
    """Embed the queries, then the documents block by block, keeping each query's top ``hits``."""
    t0 = time.monotonic()
    model = encode.load()
    log.info("loaded %s in %.1f s", encode.MODEL, time.monotonic() - t0)
    top = TopK(encode.embed(model, [text for _, text in queries]), hits)
    count = 0
    embedding = scoring = 0.0
    for batch in encode.batches(corpus.read_documents(jsonl_dir), block):
        t1 = time.monotonic()
        vectors = encode.embed(model, [text for _, text in batch])
        t2 = time.monotonic()
        top.add(vectors, [doc for doc, _ in batch])
        embedding, scoring = embedding + t2 - t1, scoring + time.monotonic() - t2
        count += len(batch)
    log.info("embedded %d documents in %.1f s (%.0f documents/s); exact cosine top-%d for %d queries in %.1f s",
             count, embedding, count / embedding if embedding else float("inf"), hits, len(queries), scoring)
    return top.hits()


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    data, out, threads = prepare(args.input, args.output, args.threads)
    tag = args.tag or f"sharedtask-{args.mode}"
    start = time.monotonic()
    if args.mode in ("rerank", "bm25f"):  # the re-rank dataset: candidates and topics, no corpus
        stage = rerank.stage_file(data, args.input_run)
        task = rerank.family(stage)
        log.info("task %s, mode %s, candidates %s, output %s", task, args.mode, stage, out)
        queries = rerank.queries(stage, task)
        if args.mode == "rerank":
            final, count = rerank.rerank_hits(stage, queries, args.hits)
        else:
            final, count = bm25f.bm25f_hits(stage, queries, args.hits, task)
        log.info("re-ranked %d candidates of %d queries in %.1f s", count, len(queries), time.monotonic() - start)
        return _write(out, tag, task, queries, final, start)
    task = corpus.detect_task(data)
    log.info("task %s, mode %s, input %s, output %s", task, args.mode, data, out)
    queries = corpus.queries(task, data)
    with scratch_dir(args.work) as work:
        jsonl_dir = work / "jsonl"
        t0 = time.monotonic()
        with ShardedJsonl(jsonl_dir, threads) as sink:
            count = corpus.convert(task, data, sink, work, threads)
        log.info("converted %d documents in %.1f s", count, time.monotonic() - t0)
        if count == 0:
            raise SystemExit(f"error: {data} holds no documents")
        runs: list[list[Hits]] = []
        if args.mode in ("bm25", "hybrid"):
            t1 = time.monotonic()
            indexed, searched = jsonl_dir, queries
            if task == "semantic-search":  # Lean names split into words (corpus.bm25_text)
                indexed = work / "jsonl-bm25"
                with ShardedJsonl(indexed, threads) as sink:
                    corpus.bm25_view(jsonl_dir, sink)
                searched = [(qid, clean_query(corpus.bm25_text(q))) for qid, q in queries]
            anserini_index(indexed, work / "index", threads)
            log.info("BM25 indexed in %.1f s", time.monotonic() - t1)
            by_topic = bm25_search(work / "index", work, searched, Model("bm25"), args.hits, threads, tag)
            runs.append([[(h.docid, float(h.score)) for h in by_topic.get(qid, [])] for qid, _ in queries])
        if args.mode in ("dense", "hybrid"):
            runs.append(dense_hits(jsonl_dir, queries, args.hits, args.block))
    final = runs[0] if len(runs) == 1 else [rrf([r[i] for r in runs], args.rrf_k, args.hits) for i in range(len(queries))]
    return _write(out, tag, task, queries, final, start)


def _write(out, tag: str, task: str, queries: list[tuple[str, str]], final: list[Hits], start: float) -> int:
    rows = (RunRow(qid, doc, rank, score, tag, 0)
            for (qid, _), hits in zip(queries, final) for rank, (doc, score) in enumerate(hits, 1))
    n = write_run(out / RUN_FILE, rows, LAYOUT[task])
    log.info("wrote %d lines to %s in %.1f s", n, out / RUN_FILE, time.monotonic() - start)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
