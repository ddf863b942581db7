"""mathlib4-search on the real mathlib4: the build, then BM25, dense and hybrid, sandboxed.

    git clone https://github.com/leanprover-community/mathlib4
    git -C mathlib4 checkout 93594942ef3b93fae5272d7bf368676ff40f8eb1
    python benchmarks/mathlib4.py --checkout mathlib4 [--image sharedtask/baseline-dense:latest]
        [--modes bm25 dense hybrid] [--store DIR] [--runs DIR] [--skip-build]

1. ``sharedtask data build mathlib4-search/known-item --from CHECKOUT`` (into ``--store``, a
   temporary store by default): files read, statements, queries, refusals, wall time, and
   the sha256 of the three files against the registry's.
2. Each mode of the dense baseline image through ``sharedtask run --dataset`` (the sandbox:
   no network, read-only input, the task's 2 cores / 4 GB), one after the other: whole-run
   wall time and peak memory (the run record), the baseline's own log lines (documents
   embedded per second: the dense throughput), then nDCG@20 through ``sharedtask evaluate``
   (the task's primary measure, gains 1 / 0.3 / 0) and MRR@10 by pytrec_eval's
   ``recip_rank`` on the run cut to its first 10 documents per query (trec_eval's order).

Prints one line per step and a table; docs/benchmarks.md ("mathlib4-search on the real mathlib4") quotes it.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DATASET = "mathlib4-search/known-item"
TASK = "mathlib4-search"
_EMBEDDED = re.compile(r"embedded (\d+) documents in ([\d.]+) s \((\d+) documents/s\)")
_INDEXED = re.compile(r"BM25 indexed in ([\d.]+) s")


def cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "sharedtask", *args], env=env, capture_output=True, text=True)


def build(checkout: Path, env: dict[str, str]) -> dict:
    started = time.perf_counter()
    proc = cli("data", "build", DATASET, "--from", str(checkout), "--json", env=env)
    wall = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"data build failed: {proc.stderr.strip()}")
    out = json.loads(proc.stdout)
    out["wall"] = wall
    return out


def mrr_at_10(run: Path, qrels: Path) -> float:
    """Mean reciprocal rank of the first relevant document within the first 10 (0 beyond)."""
    import pytrec_eval

    truth: dict[str, dict[str, int]] = {}
    for line in qrels.read_text(encoding="utf-8").splitlines():
        qid, _, doc, grade = line.split()
        truth.setdefault(qid, {})[doc] = int(grade)
    ranked: dict[str, list[tuple[float, str]]] = {}
    for line in run.read_text(encoding="utf-8").splitlines():
        qid, _, doc, _, score, _ = line.split()
        ranked.setdefault(qid, []).append((float(score), doc))
    # trec_eval orders by score (a C float) descending, then doc id descending: cut after that order
    cut = {q: {d: s for s, d in sorted(rows, key=lambda r: (_single(str(r[0])), r[1]), reverse=True)[:10]}
           for q, rows in ranked.items()}
    per_query = pytrec_eval.RelevanceEvaluator(truth, {"recip_rank"}).evaluate(cut)
    return sum(per_query.get(q, {"recip_rank": 0.0})["recip_rank"] for q in truth) / len(truth)


def _single(score: str) -> float:
    """The score as trec_eval holds it: a C float (two dense scores 8e-9 apart tie there)."""
    return struct.unpack("f", struct.pack("f", float(score)))[0]


def by_rank(run: Path, qrels: Path) -> tuple[float, float]:
    """nDCG@20 and MRR@10 from the definition, as a check: one relevant statement per query
    (gain 1, ideal DCG 1), so nDCG@20 = mean of 1 / log2(rank + 1) over ranks <= 20; the rank
    in trec_eval's order (score as a C float descending, then doc id descending)."""
    import math

    target = {q: d for q, _, d, _ in (line.split() for line in qrels.read_text(encoding="utf-8").splitlines())}
    ranked: dict[str, list[tuple[float, str]]] = {}
    for line in run.read_text(encoding="utf-8").splitlines():
        qid, _, doc, _, score, _ = line.split()
        ranked.setdefault(qid, []).append((_single(score), doc))
    ndcg = mrr = 0.0
    for qid, doc in target.items():
        order = [d for _, d in sorted(ranked.get(qid, []), reverse=True)]
        rank = order.index(doc) + 1 if doc in order else 0
        ndcg += 1 / math.log2(rank + 1) if 0 < rank <= 20 else 0.0
        mrr += 1 / rank if 0 < rank <= 10 else 0.0
    return ndcg / len(target), mrr / len(target)


#: the re-rankers of the BM25 run's top 100 (the task's stage): they need ``bm25`` first
RERANKERS = ("rerank", "bm25f")


def run_mode(mode: str, image: str, runs: Path, env: dict[str, str]) -> dict:
    out = runs / mode / "output"
    if out.exists() and any(out.iterdir()):
        raise SystemExit(f"{out} is not empty: give another --runs folder")
    stage: list[str] = []
    if mode in RERANKERS:
        first = runs / "bm25" / "output" / "run.txt"
        if not first.is_file():
            raise SystemExit(f"--modes {mode} re-ranks the BM25 run: run --modes bm25 first (no {first})")
        stage = ["--input-run", str(first)]  # run makes the stage (rerank.jsonl.gz) from it, on the host
    started = time.perf_counter()
    proc = cli("run", "--task", TASK, "--image", image, "--command", f"python -m dense_baseline --mode {mode}",
               "--dataset", DATASET, "--output", str(out), *stage, env=env)
    result = measure(out, env)
    result.update(mode=mode, exit=proc.returncode, wall=time.perf_counter() - started)
    return result


def measure(out: Path, env: dict[str, str]) -> dict:
    """What one run folder shows: its record and log, nDCG@20 (evaluate), MRR@10 and the check."""
    record = json.loads((out.parent / "run-record.json").read_text(encoding="utf-8"))
    log = (out.parent / "stderr.log").read_text(encoding="utf-8", errors="replace")
    result = {"record": record, "log": log}
    run_file = out / "run.txt"
    if record.get("exit_code") == 0 and run_file.is_file():
        truth = Path(cli("data", "path", DATASET, "--truth", env=env).stdout.strip())
        ev = cli("evaluate", str(run_file), "--task", TASK, "--dataset", DATASET, "--json", env=env)
        result["evaluate"] = json.loads(ev.stdout) if ev.returncode == 0 else ev.stderr.strip()
        result["mrr10"] = mrr_at_10(run_file, truth / "qrels.txt")
        result["by_rank"] = by_rank(run_file, truth / "qrels.txt")
    return result


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--checkout", type=Path, required=True, help="mathlib4 clone at the pinned commit")
    p.add_argument("--image", default="sharedtask/baseline-dense:latest")
    p.add_argument("--modes", nargs="+", default=["bm25", "dense", "hybrid", *RERANKERS],
                   choices=["bm25", "dense", "hybrid", *RERANKERS],
                   help="rerank and bm25f re-rank the top 100 of the bm25 run (in the same --runs)")
    p.add_argument("--store", type=Path, help="SHAREDTASK_DATA for the build (default: a temporary folder)")
    p.add_argument("--runs", type=Path, help="where the runs go (default: a temporary folder)")
    p.add_argument("--skip-build", action="store_true", help="the dataset is already built in --store")
    args = p.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="mathlib4-bench-"))
    env = {**os.environ, "SHAREDTASK_DATA": str(args.store or tmp / "store")}
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs", flush=True)
    if not args.skip_build:
        b = build(args.checkout, env)
        print(f"build: {b['files']:,} files, {b['bytes']:,} bytes -> {b['statements']:,} statements "
              f"({b['with_docstring']:,} with a docstring), {b['queries']:,} queries in {b['seconds']:.1f} s "
              f"({b['wall']:.1f} s with start-up; {b['bytes'] / b['seconds'] / 1e6:.1f} MB/s)", flush=True)
        print(f"  refusals: {b['refusals']}")
        for target, sha in b["sha256"].items():
            print(f"  {target}: sha256 {sha} (the registry's: build succeeded)")
    rows = []
    for mode in args.modes:
        r = run_mode(mode, args.image, args.runs or tmp / "runs", env)
        embedded = _EMBEDDED.search(r["log"])
        indexed = _INDEXED.search(r["log"])
        ndcg = r["evaluate"]["scores"]["ndcg_cut_20"] if isinstance(r.get("evaluate"), dict) else None
        peak = (r["record"].get("peak_memory") or {}).get("bytes")
        sandboxed = r["record"].get("wall_seconds")
        rows.append((mode, r["exit"], sandboxed, r["wall"], peak, ndcg, r.get("mrr10"), embedded, indexed))
        line = f"{mode}: exit {r['exit']}, whole run {sandboxed:.1f} s in the sandbox ({r['wall']:.1f} s with the CLI)"
        if embedded:
            line += (f"; dense embedded {int(embedded.group(1)):,} statements in {float(embedded.group(2)):.1f} s = "
                     f"{int(embedded.group(3)):,} statements/s")
        if indexed:
            line += f"; BM25 index {float(indexed.group(1)):.1f} s"
        if "by_rank" in r:
            line += f"; by rank: nDCG@20 {r['by_rank'][0]:.4f}, MRR@10 {r['by_rank'][1]:.4f}"
        print(line, flush=True)
    print(f"\n{'mode':8} {'exit':>4} {'whole run s':>12} {'peak MiB':>9} {'nDCG@20':>8} {'MRR@10':>7}")
    for mode, code, wall, _, peak, ndcg, mrr, _, _ in rows:  # wall: the sandboxed run (the record's)
        peak_s = f"{peak / 2**20:.0f}" if isinstance(peak, (int, float)) else "?"
        ndcg_s = f"{ndcg:.4f}" if isinstance(ndcg, (int, float)) else "?"
        mrr_s = f"{mrr:.4f}" if isinstance(mrr, (int, float)) else "?"
        print(f"{mode:8} {code:>4} {wall:>12.1f} {peak_s:>9} {ndcg_s:>8} {mrr_s:>7}")
    print(f"load average {os.getloadavg()[0]:.1f} at the end")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
