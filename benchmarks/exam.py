"""EXAM on the bundled samples: how each EXAM measure orders the baselines compared with the
official measure, and what the HTTP grader costs.

    python benchmarks/exam.py

1. ARQMath-3 Task 1, the four reference runs of baselines/reference-runs/ on the bundled
   sample (Posts.xml + the sample's qrels and exam questions): every measure's leaderboard
   and Kendall's tau-b of each non-official one against the official nDCG′; then EXAM Cover
   at smaller cut-offs than the measure's 20, to show where it can tell the runs apart on a
   corpus this small. ARQMath-3 Task 3: EXAM and n-EXAM of its one baseline (tau needs two).
2. The HTTP grader on the same (question, passage) pairs against the loopback test server
   (tests/llm_server.py, 20 ms per reply like a small model): concurrency 1 vs 4 with a cold
   cache, then the same evaluation again from the cache. Prints times and ratios.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from llm_server import ChatServer  # noqa: E402

from sharedtask.answers.llm import HttpGrader, HttpGraderConfig  # noqa: E402
from sharedtask.evaluate import evaluate, exam_cover, leaderboard  # noqa: E402
from sharedtask.evaluate.leaderboard import kendall  # noqa: E402
from sharedtask.formats import read_exam  # noqa: E402

SAMPLE = REPO / "tasks" / "samples"
RUNS = REPO / "baselines" / "reference-runs"


def task1() -> None:
    truth, inp = SAMPLE / "arqmath-task1" / "truth", SAMPLE / "arqmath-task1" / "input"
    runs = sorted((RUNS / "arqmath-3-task1").glob("*.txt"))
    results = {p.stem: evaluate(p, "arqmath-3-task1", truth_dir=truth, input_dir=inp, per_topic=True) for p in runs}
    board = leaderboard(results, "arqmath-3-task1")
    keys = [m.key for m in board.measures]
    print("ARQMath-3 Task 1, sample, reference runs")
    print(f"  {'run':18}" + "".join(f"{k:>17}" for k in keys))
    for run, scores in board.rows:
        print(f"  {run:18}" + "".join(f"{scores[k]:17.4f}" for k in keys))
    for a in board.agreement:
        print(f"  tau-b {a.measure} vs {a.against}: {a.describe()}")
    exam: dict[str, list] = {}
    for q in read_exam(truth / "exam.jsonl"):
        exam.setdefault(q.topic, []).append(q)
    official = {r: s["ndcg_prime"] for r, s in board.rows}
    for k in (1, 2, 3, 5, 10, 20):
        cover = {}
        for path in runs:
            passages = exam_cover.load(path, exam, inp / "Posts.xml", {})
            passages.ranked = {t: docs[:k] for t, docs in passages.ranked.items()}
            values = exam_cover.exam_cover_all_topics(passages)  # top k in trec_eval order, every topic
            cover[path.stem] = sum(values.values()) / len(values)
        a = kendall(cover, official, f"exam_cover@{k}", "ndcg_prime")
        print(f"  EXAM Cover@{k:<2}: " + ", ".join(f"{r} {v:.3f}" for r, v in sorted(cover.items()))
              + f"; tau-b vs nDCG′ {a.describe()}")


def task3() -> None:
    truth = SAMPLE / "arqmath-task3" / "truth"
    result = evaluate(RUNS / "arqmath-3-task3" / "extractive-qa.txt", "arqmath-3-task3", truth_dir=truth)
    print(f"ARQMath-3 Task 3, sample, extractive-qa: LO {result.scores['lexical_overlap']:.4f}, "
          f"EXAM {result.scores['exam']:.4f}, n-EXAM {result.scores['n_exam']:.4f} (one run: no tau)")


def http_grader() -> None:
    truth, inp = SAMPLE / "arqmath-task1" / "truth", SAMPLE / "arqmath-task1" / "input"
    exam: dict[str, list] = {}
    for q in read_exam(truth / "exam.jsonl"):
        exam.setdefault(q.topic, []).append(q)
    run = RUNS / "arqmath-3-task1" / "lucene-bm25.txt"
    with ChatServer() as server, tempfile.TemporaryDirectory() as tmp:
        timings = {}
        for name, concurrency, cache in (("cold, 1 at a time", 1, "c1"), ("cold, 4 at a time", 4, "c4"),
                                         ("warm cache", 4, "c4")):
            grader = HttpGrader(HttpGraderConfig(base_url=server.url("lag"), model="bench", concurrency=concurrency,
                                                 cache_dir=Path(tmp) / cache))
            passages = exam_cover.load(run, exam, inp / "Posts.xml", {}, grader)
            start = time.perf_counter()
            passages.grades()
            timings[name] = time.perf_counter() - start
            pairs = sum(len(exam[t]) * len([d for d in passages.ranked.get(t, []) if d in passages.texts])
                        for t in exam)
            print(f"HTTP grader, {name}: {pairs} pairs, {grader.sent} requests, {timings[name]:.2f} s")
        print(f"  concurrency 4 vs 1: {timings['cold, 1 at a time'] / timings['cold, 4 at a time']:.2f}x faster; "
              f"warm cache vs cold (4): {timings['cold, 4 at a time'] / timings['warm cache']:.0f}x faster")


if __name__ == "__main__":
    task1()
    task3()
    http_grader()
