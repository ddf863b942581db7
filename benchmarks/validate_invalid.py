"""Benchmark: `sharedtask validate` of runs whose every line is wrong, beside a valid run and
pyarrow's CSV parse of it (issue 41: the invalid path as fast as the valid one).

From the 2M-line synthetic Touché run (2,000 topics x 1,000; $BENCH_DATA, made once) four
variants are written, each wrong on every line in one way:

  score    the score column is "abc"             RUN-SCORE on every line
  rank     ranks reversed (1000 .. 1)            RUN-RANK-ORDER, RUN-RANK-SCORE, ties re-checked
  columns  five columns (the tag dropped)        RUN-COLUMNS on every line
  q0       column 2 is "X0"                      RUN-Q0 counted per topic

CPU time (user + sys, os.wait4) of whole `sharedtask validate RUN --task touche-2021-task1
--json` processes, interleaved round by round; the anchor is pyarrow.csv.read_csv of the
valid run in a fresh process (CPU summed over its threads). Target: every invalid run
<= 3x pyarrow; peak RSS flat.

    pip install pyarrow   # or .[bench]
    .venv/bin/python benchmarks/validate_invalid.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

DATA = Path(os.environ.get("BENCH_DATA", "/work/bench-data"))
BIN = Path(sys.executable).parent
PYARROW = r'''
import json, sys, time
import pyarrow.csv as csv
cpu = time.process_time()
table = csv.read_csv(sys.argv[1], read_options=csv.ReadOptions(column_names=["qid", "q0", "doc", "rank", "score", "tag"]),
                     parse_options=csv.ParseOptions(delimiter=" "))
print(json.dumps({"cpu": time.process_time() - cpu, "rows": table.num_rows}))
'''


def variants() -> dict[str, Path]:
    valid = DATA / "validate-2m.run.txt"
    if not valid.exists():
        DATA.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "sharedtask.samples.synthetic", "run", str(valid), "--topics", "2000",
                        "--depth", "1000"], check=True, stdout=subprocess.DEVNULL)
    out = {"valid": valid}
    edits = {
        "score": lambda p: [p[0], p[1], p[2], p[3], "abc", p[5]],
        "rank": lambda p: [p[0], p[1], p[2], str(1001 - int(p[3])), p[4], p[5]],
        "columns": lambda p: p[:5],
        "q0": lambda p: [p[0], "X0", *p[2:]],
    }
    for name, edit in edits.items():
        path = DATA / f"validate-2m-invalid-{name}.run.txt"
        if not path.exists():
            with open(valid) as src, open(path.with_suffix(".tmp"), "w") as dst:
                dst.writelines(" ".join(edit(line.split())) + "\n" for line in src)
            path.with_suffix(".tmp").rename(path)
        out[name] = path
    return out


def cpu_of(cmd: list[str]) -> tuple[float, float, str]:
    """(CPU seconds, peak RSS MB, stdout) of one process."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    out = proc.stdout.read().decode() if proc.stdout else ""
    _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) not in (0, 1):
        raise SystemExit(f"failed: {' '.join(cmd)}")
    return usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    runs = variants()
    best: dict[str, tuple[float, float]] = {}
    errors: dict[str, int] = {}
    for _ in range(args.repeat):
        cpu, rss, _ = cpu_of([sys.executable, "-c", PYARROW, str(runs["valid"])])
        best["pyarrow"] = min(best.get("pyarrow", (cpu, rss)), (cpu, rss))
        for name, path in runs.items():
            cpu, rss, out = cpu_of([str(BIN / "sharedtask"), "validate", str(path), "--task", "touche-2021-task1",
                                    "--json"])
            best[name] = min(best.get(name, (cpu, rss)), (cpu, rss))
            errors[name] = json.loads(out)["counts"]["error"]
    anchor = best["pyarrow"][0]
    print(f"2,000,000-line runs; best CPU of {args.repeat} interleaved rounds; x = / pyarrow's parse")
    print(f"{'run':9} {'CPU s':>7} {'x':>6} {'peak MB':>8} {'errors':>10}")
    for name, (cpu, rss) in best.items():
        print(f"{name:9} {cpu:7.2f} {cpu / anchor:6.2f} {rss:8.0f} {errors.get(name, 0):>10,}")
    worst = max(best[n][0] for n in runs if n != "valid") / anchor
    print(f"target: every invalid run <= 3x pyarrow: worst {worst:.2f}x {'met' if worst <= 3 else 'MISSED'}")
    with open("/proc/loadavg") as fh:
        print(f"load average: {fh.read().split()[0]} on {os.cpu_count()} cores")
    return 0


if __name__ == "__main__":
    sys.exit(main())
