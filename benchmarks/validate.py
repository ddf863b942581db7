"""Benchmark: `sharedtask validate` beside pytrec_eval (parse + evaluate) and tira.check_format.

Whole-process wall time and peak RSS (os.wait4's ru_maxrss) of three processes on the
same Touché-style TREC run (grouped by topic, args.me ids, ties every 7th document):

  ours:  sharedtask validate RUN --task touche-2021-task1 --json
  trec:  pytrec_eval.parse_run + parse_qrel + RelevanceEvaluator({map, ndcg}).evaluate
  tira:  tira.check_format.check_format(DIR, "run.txt") (size limit lifted, else it stops at 75 MB)

Sizes: small = 100 topics x 1,000 (100k lines), medium = 1,000 x 1,000 (1M lines, for
profiling; not run by default), large = 10,000 topics x 1,000 (10M lines).
Runs come from `python -m sharedtask.samples.synthetic run` into /work/bench-data (reused).
Targets: large validated in no more time than pytrec_eval's parse+evaluate,
peak RSS < 400 MB.

    .venv/bin/python benchmarks/validate.py [--sizes small large] [--repeat 1] [--skip tira]
        [--ours-src DIR]   # time another checkout's src/ (e.g. an older commit) as "ours"
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO

DATA = Path(os.environ.get("BENCH_DATA", "/work/bench-data"))
SIZES = {"small": (100, 1000), "medium": (1000, 1000), "large": (10_000, 1000)}
ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent

TREC = r'''
import sys, pytrec_eval
with open(sys.argv[1]) as f:
    run = pytrec_eval.parse_run(f)
with open(sys.argv[2]) as f:
    qrels = pytrec_eval.parse_qrel(f)
res = pytrec_eval.RelevanceEvaluator(qrels, {"map", "ndcg"}).evaluate(run)
print(sum(v["map"] for v in res.values()) / len(res))
'''

TIRA = r'''
import sys
from pathlib import Path
from tira.check_format import check_format
print(check_format(Path(sys.argv[1]), "run.txt", {"max_size_mb": 10**6}))
'''


def generate(name: str) -> tuple[Path, Path]:
    topics, depth = SIZES[name]
    run = DATA / f"validate-{name}.run.txt"
    qrels = run.with_name(run.name + ".qrels")
    if not (run.exists() and qrels.exists()):
        subprocess.run(
            [sys.executable, "-m", "sharedtask.samples.synthetic", "run", str(run), "--topics", str(topics),
             "--depth", str(depth), "--judged", "50"],
            check=True,
        )
    return run, qrels


def measure(cmd: list[str], env: dict[str, str] | None = None, stdout: IO[bytes] | None = None
            ) -> tuple[float, float, int, float]:
    """(wall seconds, peak RSS MB, exit code, CPU seconds user+sys) of one process.

    CPU time is printed too because the benchmark machine is shared: wall time then
    mostly measures the other tenants. Its output goes to ``stdout`` (default: discarded)."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=stdout or subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode() if proc.stderr else ""
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{cmd[:3]} failed ({proc.returncode}): {err[-2000:]}")
    return wall, usage.ru_maxrss / 1024, proc.returncode, usage.ru_utime + usage.ru_stime


def best(cmd: list[str], repeat: int, env: dict[str, str] | None = None) -> tuple[float, float, int, float]:
    runs = [measure(cmd, env) for _ in range(repeat)]
    return min(r[0] for r in runs), max(r[1] for r in runs), runs[0][2], min(r[3] for r in runs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", nargs="+", default=["small", "large"], choices=list(SIZES))
    ap.add_argument("--ours-src", type=Path, help="src/ folder to import sharedtask from (default: installed)")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--skip", nargs="*", default=[], choices=["trec", "tira"])
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.sizes:
            run, qrels = generate(name)
            lines = SIZES[name][0] * SIZES[name][1]
            mb = run.stat().st_size / 2**20
            print(f"\n== {name}: {lines:,} lines, {mb:,.0f} MB ({run})", flush=True)
            env = None
            if args.ours_src is not None:  # PYTHONPATH wins over the editable install
                env = dict(os.environ, PYTHONPATH=str(args.ours_src.resolve()))
            ours = best([str(BIN / "sharedtask"), "validate", str(run), "--task", "touche-2021-task1", "--json"],
                        args.repeat, env)
            print(f"ours  sharedtask validate     {ours[0]:8.2f} s wall {ours[3]:8.2f} s cpu {ours[1]:8.0f} MB"
                  f"  exit {ours[2]}", flush=True)
            results = {"ours": ours}
            if "trec" not in args.skip:
                script = Path(tmp) / "trec.py"
                script.write_text(TREC)
                results["trec"] = best([sys.executable, str(script), str(run), str(qrels)], args.repeat)
                t = results["trec"]
                print(f"trec  pytrec_eval parse+eval  {t[0]:8.2f} s wall {t[3]:8.2f} s cpu {t[1]:8.0f} MB", flush=True)
            if "tira" not in args.skip:
                out = Path(tmp) / f"out-{name}"
                out.mkdir()
                (out / "run.txt").symlink_to(run)
                script = Path(tmp) / "tira_check.py"
                script.write_text(TIRA)
                results["tira"] = best([sys.executable, str(script), str(out)], args.repeat)
                t = results["tira"]
                print(f"tira  tira.check_format       {t[0]:8.2f} s wall {t[3]:8.2f} s cpu {t[1]:8.0f} MB", flush=True)
            for other in ("trec", "tira"):
                if other in results:
                    o = results[other]
                    print(f"ratio ours/{other}: wall {ours[0] / o[0]:.2f}x, cpu {ours[3] / o[3]:.2f}x, "
                          f"peak RSS {ours[1] / o[1]:.2f}x")
            print(f"throughput ours: {lines / ours[0] / 1e6:.2f} M lines/s; target RSS < 400 MB: "
                  f"{'met' if ours[1] < 400 else 'MISSED'}")


if __name__ == "__main__":
    main()
