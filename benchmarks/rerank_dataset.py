"""What the re-rank dataset costs a re-ranking run: making ``$inputDataset`` from a stage.

    python benchmarks/rerank_dataset.py [--topics 500] [--depth 100] [--chars 900]

A synthetic stage of TOPICS x DEPTH candidates (texts of about CHARS characters: the real
mathlib4 known-item stage is 500 x 100 statements) is written with the stage writer's
line format; then, each three times, the best of: reading the candidates once (gzip + JSON,
what any re-ranker does first) and :func:`sharedtask.rerank.dataset.make_rerank_dataset`
(the candidates hard-linked, the topics written as queries.jsonl and queries.xml). Prints
both times, their ratio and the files' sizes.
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import tempfile
import time
from pathlib import Path

from sharedtask.formats.tira_layout import atomic, json_line
from sharedtask.rerank.dataset import make_rerank_dataset


def write_stage(folder: Path, topics: int, depth: int, chars: int) -> Path:
    rng = random.Random(38)
    words = [f"w{i}" for i in range(5000)]
    folder.mkdir(parents=True)
    path = folder / "rerank.jsonl.gz"
    with atomic(path) as out:
        for q in range(1, topics + 1):
            query = " ".join(rng.choices(words, k=12))
            for rank in range(1, depth + 1):
                text = " ".join(rng.choices(words, k=chars // 6))
                fields = {"name": text[:40], "informal": "", "formal": text[40:]}
                out.write(json_line({"qid": str(q), "query": query, "original_query": {"query_id": str(q), "text": query},
                                     "docno": f"d{q}-{rank}", "text": text,
                                     "original_document": {"doc_id": f"d{q}-{rank}", **fields},
                                     "rank": rank, "score": float(depth - rank), "fields": fields}))
    (folder / "run.txt").write_text("")
    return path


def best_of(runs: int, work) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--topics", type=int, default=500)
    p.add_argument("--depth", type=int, default=100)
    p.add_argument("--chars", type=int, default=900)
    args = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-rerank-dataset-") as tmp:
        stage = write_stage(Path(tmp) / "stage", args.topics, args.depth, args.chars)

        def read() -> None:
            with gzip.open(stage, "rt", encoding="utf-8") as handle:
                for line in handle:
                    json.loads(line)

        reading = best_of(3, read)
        making = best_of(3, lambda: make_rerank_dataset(stage.parent, Path(tmp) / "dataset"))
        sizes = {p.name: p.stat().st_size for p in (Path(tmp) / "dataset").iterdir()}
    print(f"stage: {args.topics * args.depth:,} candidates, rerank.jsonl.gz {sizes['rerank.jsonl.gz'] / 2**20:.1f} MiB")
    print(f"reading the candidates once:  {reading:6.2f} s")
    print(f"making the re-rank dataset:   {making:6.2f} s  (x{making / reading:.2f} one reading; "
          f"queries.jsonl {sizes['queries.jsonl']:,} B, queries.xml {sizes['queries.xml']:,} B)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
