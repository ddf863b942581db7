"""``python -m lucene_baseline``: BM25 / Dirichlet LM runs for Touché and ARQMath Task 1.

    python -m lucene_baseline [--model bm25|qld] [--mu 1000] [--task auto|touche|arqmath-task1]

Reads ``$inputDataset``, writes ``$outputDir/run.txt`` (the TIRA contract). The
model can also come from ``$BASELINE_MODEL`` / ``$BASELINE_MU``, so one image
serves every variant without a different command.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time
from pathlib import Path

from sharedtask.formats.trec import RunRow, write_run

from lucene_baseline import arqmath, touche
from lucene_baseline.anserini import Model
from lucene_baseline.contract import RUN_FILE, prepare, scratch_dir
from lucene_baseline.pipeline import build_index, search

log = logging.getLogger("baseline")

#: run layouts of sharedtask.formats.trec per task family
LAYOUT = {"touche": "trec", "arqmath-task1": "arqmath-task1"}


def detect_task(data: Path) -> str:
    """The task family from the dataset's files (the two inputs share no file name)."""
    if (data / "Posts.xml").is_file() or (data / "Posts.xml.gz").is_file():
        return "arqmath-task1"
    if any((data / f"{name}.json{gz}").is_file() for name in ("debateorg", "parliamentary") for gz in ("", ".gz")):
        return "touche"
    raise SystemExit(f"error: {data} holds neither an ARQMath Posts.xml nor the args.me corpus")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="lucene_baseline", description=__doc__.split("\n")[0])
    p.add_argument("--model", choices=("bm25", "qld"), default=os.environ.get("BASELINE_MODEL", "bm25"))
    p.add_argument("--mu", type=float, default=float(os.environ.get("BASELINE_MU", "1000")),
                   help="Dirichlet prior for qld (default 1000)")
    p.add_argument("--k1", type=float, default=0.9, help="BM25 k1 (Anserini default 0.9)")
    p.add_argument("--b", type=float, default=0.4, help="BM25 b (Anserini default 0.4)")
    p.add_argument("--task", choices=("auto", *LAYOUT), default=os.environ.get("BASELINE_TASK", "auto"))
    p.add_argument("--hits", type=int, default=1000, help="results per topic (the tasks allow 1000)")
    p.add_argument("--threads", type=int, default=0, help="indexing/search threads (default: all CPUs)")
    p.add_argument("--tag", default=None, help="run tag (default sharedtask-<model>)")
    p.add_argument("--input", help="dataset folder (default $inputDataset)")
    p.add_argument("--output", help="output folder (default $outputDir)")
    p.add_argument("--work", help="keep scratch files (JSONL, index) in this folder")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    data, out, threads = prepare(args.input, args.output, args.threads)
    task = detect_task(data) if args.task == "auto" else args.task
    model = Model(args.model, k1=args.k1, b=args.b, mu=args.mu)
    tag = args.tag or f"sharedtask-{model.tag()}"
    log.info("task %s, model %s, %d threads, input %s, output %s", task, model.tag(), threads, data, out)
    start = time.monotonic()
    with scratch_dir(args.work) as work:
        if task == "touche":
            index = build_index(work, threads, lambda sink: touche.convert_corpus(data, sink, workers=threads))
            queries = list(touche.queries(data))
        else:
            posts = arqmath.posts_file(data)
            index = build_index(work, threads, lambda sink: arqmath.convert_posts(posts, sink, work, workers=threads - 1))
            queries = list(arqmath.queries(arqmath.read_topics(data)))
        by_topic = search(index, work, queries, model, args.hits, threads, tag)
    rows = (RunRow(topic, hit.docid, hit.rank, float(hit.score), tag, 0)
            for topic, hits in by_topic.items() for hit in hits)
    n = write_run(out / RUN_FILE, rows, LAYOUT[task])
    log.info("wrote %d lines to %s in %.1f s", n, out / RUN_FILE, time.monotonic() - start)
    return 0


if __name__ == "__main__":
    sys.exit(main())
