"""``python -m formula_baseline``: ARQMath Task 2 formula retrieval run.

    python -m formula_baseline [--engine approach0|lucene] [--hits 1000]

Reads ``$inputDataset`` (``topics.xml`` with B.x topics, ``formulas/*.tsv``) and
writes ``$outputDir/run.txt`` in the 6-column Task 2 layout
``Topic_Id Formula_Id Post_Id Rank Score Run_Tag`` (docs/formats.md).
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time
from pathlib import Path

from sharedtask.formats.arqmath import read_arqmath_topics
from sharedtask.formats.trec import RunRow, write_run

from formula_baseline import approach0
from formula_baseline.collection import Formula, representatives
from formula_baseline.tokens import formula_text
from lucene_baseline.anserini import Model
from lucene_baseline.contract import RUN_FILE, prepare, scratch_dir
from lucene_baseline.jsonl import ShardedJsonl, clean_query
from lucene_baseline.pipeline import build_index, search

log = logging.getLogger("baseline")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="formula_baseline", description=__doc__.split("\n")[0])
    p.add_argument("--engine", choices=("approach0", "lucene"),
                   default=os.environ.get("BASELINE_ENGINE", "approach0"))
    p.add_argument("--hits", type=int, default=1000)
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--tag", default=None, help="run tag (default sharedtask-<engine>)")
    p.add_argument("--input", help="dataset folder (default $inputDataset)")
    p.add_argument("--output", help="output folder (default $outputDir)")
    p.add_argument("--work", help="keep scratch files (index) in this folder")
    return p.parse_args(argv)


def _queries(data: Path) -> list[tuple[str, str]]:
    """(topic, LaTeX) of every B.x topic; topics without LaTeX are logged and skipped."""
    out = []
    for topic in read_arqmath_topics(data / "topics.xml"):
        if topic.latex:
            out.append((topic.number, topic.latex))
        else:
            log.info("topic %s has no <Latex>: no results for it", topic.number)
    return out


def run_approach0(formulas: list[Formula], queries: list[tuple[str, str]], hits: int,
                  work: Path) -> dict[str, list[tuple[Formula, float]]]:
    a0 = approach0.load()
    index_dir = work / "approach0-index"
    t0 = time.monotonic()
    approach0.build(a0, formulas, index_dir)
    log.info("Approach Zero indexed %d formulae in %.1f s", len(formulas), time.monotonic() - t0)
    return approach0.search(a0, index_dir, queries, formulas, hits)


def run_lucene(formulas: list[Formula], queries: list[tuple[str, str]], hits: int, threads: int,
               work: Path, tag: str) -> dict[str, list[tuple[Formula, float]]]:
    by_id = {f.formula_id: f for f in formulas}

    def convert(sink: ShardedJsonl) -> int:
        for formula in formulas:
            sink.write(formula.formula_id, formula_text(formula.latex))
        return sink.count

    index = build_index(work, threads, convert, pretokenized=True)
    texts = [(topic, clean_query(formula_text(latex))) for topic, latex in queries]
    found = search(index, work, texts, Model("bm25"), hits, threads, tag, pretokenized=True)
    return {topic: [(by_id[h.docid], float(h.score)) for h in topic_hits]
            for topic, topic_hits in found.items()}


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    data, out, threads = prepare(args.input, args.output, args.threads)
    tag = args.tag or f"sharedtask-formula-{args.engine}"
    log.info("engine %s, input %s, output %s", args.engine, data, out)
    start = time.monotonic()
    formulas = representatives(data / "formulas")
    queries = _queries(data)
    with scratch_dir(args.work) as work:
        if args.engine == "approach0":
            results = run_approach0(formulas, queries, args.hits, work)
        else:
            results = run_lucene(formulas, queries, args.hits, threads, work, tag)
    rows = (RunRow(topic, formula.formula_id, rank, score, tag, 0, post_id=formula.post_id)
            for topic, _latex in queries
            for rank, (formula, score) in enumerate(results.get(topic, []), 1))
    n = write_run(out / RUN_FILE, rows, "arqmath-task2")
    log.info("wrote %d lines to %s in %.1f s", n, out / RUN_FILE, time.monotonic() - start)
    return 0


if __name__ == "__main__":
    sys.exit(main())
