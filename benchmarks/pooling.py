"""Pooling benchmark: 100 runs x 100 topics x 1,000 lines -> one pool (docs/assessment.md).

The budget (issue 37): at most 10 s and 500 MB. Runs are ``sharedtask.samples.synthetic`` ARQMath
Task 1 runs (each topic's posts distinct, ties every 7th line), written once under
``--data`` (default /work/bench-data/pooling, never in the repo). Each measurement runs
in a fresh subprocess, so its peak RSS is the pooler's alone:

* ``pool``: ``build_pool`` + ``Pool.write`` at the ARQMath-3 depths (45 primary, 20 alternate;
  half the runs each), as ``sharedtask pool`` does it;
* ``read``: only reading the same runs line by line with ``str.split`` (the floor any
  pure-Python pooler pays), for the ratio pool / read.

    .venv/bin/python benchmarks/pooling.py                 # 100 x 100 x 1,000, one process
    .venv/bin/python benchmarks/pooling.py --workers auto  # as `sharedtask pool` reads them (a process per CPU)
    .venv/bin/python benchmarks/pooling.py --runs 10       # a quick look
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

BUDGET_SECONDS = 10.0
BUDGET_MB = 500.0

CHILD_POOL = r"""
import json, sys, time, resource
from pathlib import Path
from sharedtask.edition.pooling import PoolRun, build_pool
from sharedtask.spec import load_task
workers = None if sys.argv[1] == "auto" else int(sys.argv[1])
files = sys.argv[2:-1]
out = Path(sys.argv[-1])
task = load_task("arqmath-3-task1")
runs = [PoolRun(Path(f), "primary" if i % 2 == 0 else "alternate", f"run{i}") for i, f in enumerate(files)]
start = time.perf_counter()
pool = build_pool(task, runs, seed=1, workers=workers)
pool.write(out)
seconds = time.perf_counter() - start
ru = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"seconds": seconds, "cpu": ru.ru_utime + ru.ru_stime, "items": sum(pool.counts().values()), "topics": len(pool.topics),
                  "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""

CHILD_READ = r"""
import json, sys, time, resource
start = time.perf_counter()
n = 0
for f in sys.argv[1:]:
    with open(f, encoding="utf-8") as fh:
        for line in fh:
            parts = line.split()
            float(parts[3])
            n += 1
seconds = time.perf_counter() - start
ru = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"seconds": seconds, "cpu": ru.ru_utime + ru.ru_stime, "lines": n, "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def make_runs(folder: Path, runs: int, topics: int, depth: int) -> list[Path]:
    from sharedtask.samples.synthetic import write_run

    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for i in range(runs):
        path = folder / f"run{i:03d}-{topics}x{depth}.tsv"
        if not path.is_file():
            # a 200,000-post corpus: runs overlap, as submissions to one task do
            write_run(path, topics, depth, fmt="arqmath-task1", corpus=200_000, seed=i, tag=f"run{i}")
        paths.append(path)
    return paths


def child(code: str, args: list[str]) -> dict:
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--topics", type=int, default=100)
    parser.add_argument("--depth", type=int, default=1000)
    parser.add_argument("--data", type=Path, default=Path("/work/bench-data/pooling"))
    parser.add_argument("--workers", default="1", metavar="N",
                        help="processes reading runs at once (default 1; auto: sharedtask pool's choice)")
    args = parser.parse_args()
    files = [str(p) for p in make_runs(args.data, args.runs, args.topics, args.depth)]
    size = sum(Path(f).stat().st_size for f in files) / 1e6
    read = child(CHILD_READ, files)
    pool = child(CHILD_POOL, [args.workers, *files, str(args.data / "pool-out")])
    workers = args.workers if args.workers == "auto" else int(args.workers)
    lines = read["lines"]
    print(f"pooling {args.runs} runs x {args.topics} topics x {args.depth} lines "
          f"({lines:,} lines, {size:,.0f} MB) at depths 45 primary / 20 alternate")
    print(f"  load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs (wall time grows with it; CPU time less)")
    if workers == 1:
        rss, cpu = pool["rss_mb"], f"{pool['cpu']:.2f} s CPU (with start-up)"
        mem = f"peak RSS {rss:.0f} MB"
    else:  # worker processes are the forkserver's children: neither their CPU nor their RSS is counted here
        rss, cpu = pool["rss_mb"], "CPU of the worker processes not measured"
        mem = f"peak RSS {rss:.0f} MB in the main process (workers not counted)"
    print(f"  workers: {workers}")
    print(f"  pool + write: {pool['seconds']:.2f} s wall, {cpu}, {mem}, "
          f"{pool['items']:,} items over {pool['topics']} topics ({lines / pool['seconds'] / 1e6:.2f} M lines/s)")
    print(f"  read only (str.split + float): {read['seconds']:.2f} s wall, {read['cpu']:.2f} s CPU, peak RSS {read['rss_mb']:.0f} MB")
    cpu_ratio = f", {pool['cpu'] / BUDGET_SECONDS:.2f} CPU" if workers == 1 else ""
    print(f"  ratios: time / budget {pool['seconds'] / BUDGET_SECONDS:.2f} wall{cpu_ratio} "
          f"(budget {BUDGET_SECONDS:.0f} s), memory / budget {rss / BUDGET_MB:.2f} (budget {BUDGET_MB:.0f} MB), "
          f"pool / read-only {pool['seconds'] / read['seconds']:.1f}x")
    ok = pool["seconds"] <= BUDGET_SECONDS and rss <= BUDGET_MB
    print("  within budget" if ok else "  OVER BUDGET")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
