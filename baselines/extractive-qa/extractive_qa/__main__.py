"""``python -m extractive_qa``: ARQMath-3 Task 3 run from the best Task 1 BM25 answer.

    python -m extractive_qa [--model bm25|qld] [--max-chars 1200]

Retrieves answer posts exactly like the Task 1 baseline (answers indexed with their
question's title, LaTeX as tokens), takes the best-ranked answer with any text,
cleans its HTML to text + ``$LaTeX$`` and cuts it at a sentence boundary. Writes
``Topic_Id Rank Score Run_Tag Sources Answer`` (one line per topic; Sources = the
answer's post id) to ``$outputDir/run.txt``.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time

from sharedtask.formats.arqmath import Answer, read_posts
from sharedtask.formats.trec import RunRow, write_run

from extractive_qa.cut import answer_text, cut
from lucene_baseline import arqmath
from lucene_baseline.anserini import Model
from lucene_baseline.contract import RUN_FILE, prepare, scratch_dir
from lucene_baseline.pipeline import build_index, search

log = logging.getLogger("baseline")

#: ARQMath-3 Task 3 answer limit (docs/formats.md; spec max_answer_chars).
MAX_CHARS = 1200
#: Candidates fetched per topic, in case the best ones are empty after cleaning.
CANDIDATES = 10


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="extractive_qa", description=__doc__.split("\n")[0])
    p.add_argument("--model", choices=("bm25", "qld"), default=os.environ.get("BASELINE_MODEL", "bm25"))
    p.add_argument("--mu", type=float, default=float(os.environ.get("BASELINE_MU", "1000")))
    p.add_argument("--max-chars", type=int, default=MAX_CHARS)
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--tag", default=None, help="run tag (default sharedtask-extract-<model>)")
    p.add_argument("--input", help="dataset folder (default $inputDataset)")
    p.add_argument("--output", help="output folder (default $outputDir)")
    p.add_argument("--work", help="keep scratch files (index) in this folder")
    return p.parse_args(argv)


def bodies(posts, wanted: set[str]) -> dict[str, str]:
    """Second pass over Posts.xml: the HTML bodies of the chosen answers only."""
    found: dict[str, str] = {}
    for post in read_posts(posts):
        if isinstance(post, Answer) and post.id in wanted:
            found[post.id] = post.body
    return found


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    data, out, threads = prepare(args.input, args.output, args.threads)
    model = Model(args.model, mu=args.mu)
    tag = args.tag or f"sharedtask-extract-{model.tag()}"
    start = time.monotonic()
    posts = arqmath.posts_file(data)
    topics = arqmath.read_topics(data)
    with scratch_dir(args.work) as work:
        index = build_index(work, threads, lambda sink: arqmath.convert_posts(posts, sink, work, workers=threads - 1))
        by_topic = search(index, work, arqmath.queries(topics), model, CANDIDATES, threads, tag)
    texts = bodies(posts, {hit.docid for hits in by_topic.values() for hit in hits})
    rows = []
    for topic in topics:
        for hit in by_topic.get(topic.number, []):
            text = cut(answer_text(texts.get(hit.docid, "")), args.max_chars)
            if text:
                rows.append(RunRow(topic.number, "", 1, float(hit.score), tag, 0,
                                   sources=hit.docid, answer=text))
                break
        else:
            log.info("topic %s: no answer with text found", topic.number)
    n = write_run(out / RUN_FILE, rows, "arqmath-task3")
    log.info("wrote %d answers to %s in %.1f s", n, out / RUN_FILE, time.monotonic() - start)
    return 0


if __name__ == "__main__":
    sys.exit(main())
