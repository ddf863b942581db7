"""Benchmark: `sharedtask validate` against the parse speed limit, pyarrow's CSV reader.

On the same synthetic Touché-style TREC run (grouped by topic, a tie every 7th document),
in one run and interleaved round by round (the machine is shared: the best of the rounds
is kept, and CPU time is the fair figure):

  pyarrow  pyarrow.csv.read_csv(RUN, delimiter " ") into six typed columns (the call only,
           in a fresh process; its default thread pool, CPU time summed over threads)
  cli      sharedtask validate RUN --task touche-2021-task1 --json (the whole process)
  api      sharedtask.validate.validate(RUN, task) (the call only, in a fresh process)

each for our default engine (the columnar fast path) and, as "before", the line engine
(SHAREDTASK_VALIDATE_ENGINE=lines) or another checkout's src/ (--before-src, e.g. main at
the branch point). Peak RSS is the process's ru_maxrss. Target: api and cli within 2x of
pyarrow's time at 10M lines, peak RSS <= 100 MB.

    pip install -e '.[bench]'
    .venv/bin/python benchmarks/validate_parse_speed.py [--sizes 2m 10m] [--repeat 3] [--before-src DIR]

Runs come from `python -m sharedtask.samples.synthetic run` into $BENCH_DATA (default
/work/bench-data), reused when present.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

DATA = Path(os.environ.get("BENCH_DATA", "/work/bench-data"))
SIZES = {"2m": (2000, 1000), "10m": (10_000, 1000)}
FILES = {"2m": "validate-2m.run.txt", "10m": "validate-large.run.txt"}  # the 10M run benchmarks/validate.py makes
BIN = Path(sys.executable).parent
TASK = "touche-2021-task1"

PYARROW = r'''
import json, sys, time
import pyarrow.csv as csv
wall, cpu = time.perf_counter(), time.process_time()
table = csv.read_csv(sys.argv[1], read_options=csv.ReadOptions(column_names=["qid", "q0", "doc", "rank", "score", "tag"]),
                     parse_options=csv.ParseOptions(delimiter=" "))
print(json.dumps({"wall": time.perf_counter() - wall, "cpu": time.process_time() - cpu, "rows": table.num_rows}))
'''

API = r'''
import json, sys, time
from pathlib import Path
from sharedtask.spec import load_task
from sharedtask.validate import validate
task = load_task(sys.argv[2])
wall, cpu = time.perf_counter(), time.process_time()
result = validate(Path(sys.argv[1]), task)
print(json.dumps({"wall": time.perf_counter() - wall, "cpu": time.process_time() - cpu,
                  "lines": result.stats.lines, "findings": len(result.findings), "omitted": result.omitted}))
'''


def generate(name: str) -> Path:
    topics, depth = SIZES[name]
    run = DATA / FILES[name]
    if not run.exists():
        tmp = run.with_name(run.name + ".part")
        subprocess.run([sys.executable, "-m", "sharedtask.samples.synthetic", "run", str(tmp), "--topics", str(topics),
                        "--depth", str(depth)], check=True)
        tmp.rename(run)
    return run


def process(cmd: list[str], env: dict[str, str]) -> dict[str, float]:
    """Whole-process wall and CPU seconds and peak RSS (MB); the JSON the process printed, if any."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    out = proc.stdout.read() if proc.stdout else b""
    err = proc.stderr.read() if proc.stderr else b""
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    code = os.waitstatus_to_exitcode(status)
    if code not in (0, 1):
        raise SystemExit(f"{cmd[:3]} failed ({code}): {err.decode()[-2000:]}")
    figures = {"proc_wall": wall, "proc_cpu": usage.ru_utime + usage.ru_stime, "rss": usage.ru_maxrss / 1024}
    try:
        figures.update(json.loads(out.decode().strip().splitlines()[-1]))
    except (ValueError, IndexError):
        pass
    return figures


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", nargs="+", default=["2m", "10m"], choices=list(SIZES))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--before-src", type=Path, help="src/ of another checkout as 'before' (default: the line engine)")
    args = ap.parse_args()
    base = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "SHAREDTASK_VALIDATE_ENGINE")}
    before = dict(base, SHAREDTASK_VALIDATE_ENGINE="lines")
    if args.before_src is not None:
        before = dict(base, PYTHONPATH=str(args.before_src.resolve()))
    for name in args.sizes:
        run = generate(name)
        print(f"\n== {name}: {SIZES[name][0] * SIZES[name][1]:,} lines, {run.stat().st_size / 2**20:,.0f} MB ({run})",
              flush=True)
        cli = [str(BIN / "sharedtask"), "validate", str(run), "--task", TASK, "--json"]
        api = [sys.executable, "-c", API, str(run), TASK]
        jobs = {
            "pyarrow": ([sys.executable, "-c", PYARROW, str(run)], base),
            "api": (api, base),
            "cli": (cli, base),
            "api before": (api, before),
            "cli before": (cli, before),
        }
        best: dict[str, dict[str, float]] = {}
        for _ in range(args.repeat):
            for label, (cmd, env) in jobs.items():
                got = process(cmd, env)
                keep = best.setdefault(label, got)
                for key, value in got.items():
                    if isinstance(value, float):
                        keep[key] = max(keep[key], value) if key == "rss" else min(keep[key], value)
        arrow = best["pyarrow"]
        print(f"{'':12} {'wall s':>8} {'CPU s':>8} {'RSS MB':>8}   {'/arrow wall':>11} {'/arrow CPU':>10}")
        for label, fig in best.items():
            # the call's own time for pyarrow and the API, the whole process for the CLI
            wall, cpu = (fig["proc_wall"], fig["proc_cpu"]) if label.startswith("cli") else (fig["wall"], fig["cpu"])
            print(f"{label:12} {wall:8.2f} {cpu:8.2f} {fig['rss']:8.0f}   {wall / arrow['wall']:10.2f}x "
                  f"{cpu / arrow['cpu']:9.2f}x", flush=True)
        same = best["api"].get("omitted") == best["api before"].get("omitted")
        print(f"findings identical to before: {same and best['api']['findings'] == best['api before']['findings']}; "
              f"target (api CPU <= 2x pyarrow CPU, RSS <= 100 MB): "
              f"{'met' if best['api']['cpu'] <= 2 * arrow['cpu'] and best['cli']['rss'] <= 100 else 'MISSED'}")


if __name__ == "__main__":
    main()
