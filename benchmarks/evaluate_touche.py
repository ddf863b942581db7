"""Benchmark: `sharedtask evaluate` of a Touché run beside a bare pytrec_eval script.

CPU time (user + sys) and peak RSS (os.wait4) of whole processes, interleaved round by round:

  bare: a script that parses the run and the qrels into dicts (str.split per line) and runs
        pytrec_eval's ndcg_cut.5 (the anchor of issue 41)
  ours: sharedtask evaluate RUN --task touche-2021-task1 --qrels QRELS --json
        (the official nDCG@5 and trec_eval's ndcg_cut.5, the notes' counts: ties at the
        top-5 cut, repeated lines, trec_eval's reordering)
  ours-cut5: the same with --measures ndcg_cut_5 alone

on a 1M-line run (1,000 topics x 1,000 documents; 50 judgments per topic, grades -2..3).
Data goes to /work/bench-data (generated once). Targets: ours <= 1.2x bare in CPU time and
in peak memory. The numbers of both tools must agree (checked and printed).

    .venv/bin/python benchmarks/evaluate_touche.py [--repeat 3] [--topics 1000]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
from pathlib import Path

DATA = Path(os.environ.get("BENCH_DATA", "/work/bench-data"))

BARE = r'''
import sys, pytrec_eval
run, qrels = {}, {}
with open(sys.argv[1]) as f:
    for line in f:
        t, _, d, r, s, _ = line.split()
        run.setdefault(t, {})[d] = float(s)
with open(sys.argv[2]) as f:
    for line in f:
        t, _, d, r = line.split()
        qrels.setdefault(t, {})[d] = max(int(r), 0)
res = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.5"}).evaluate(run)
print(sum(v["ndcg_cut_5"] for v in res.values()) / len(res))
'''


def generate(topics: int) -> tuple[Path, Path]:
    run, qrels = DATA / f"touche-{topics}t.run.txt", DATA / f"touche-{topics}t.qrels"
    if run.exists() and qrels.exists():
        return run, qrels
    DATA.mkdir(parents=True, exist_ok=True)
    rnd = random.Random(7)
    with open(run.with_suffix(".tmp"), "w") as r, open(qrels.with_suffix(".tmp"), "w") as q:
        for t in range(1, topics + 1):
            doc = [f"S{t:05d}{i:05d}-A{i:06d}" for i in range(1020)]
            judged = rnd.sample(range(1000), 30) + list(range(1000, 1020))
            q.write("".join(f"{t} 0 {doc[j]} {rnd.choice((-2, 0, 1, 2, 3))}\n" for j in judged))
            scores = sorted((rnd.random() * 100 for _ in range(1000)), reverse=True)
            r.write("".join(f"{t} Q0 {doc[i]} {i + 1} {scores[i]:.4f} bench\n" for i in range(1000)))
    run.with_suffix(".tmp").rename(run)
    qrels.with_suffix(".tmp").rename(qrels)
    return run, qrels


def measure(cmd: list[str]) -> tuple[float, float, str]:
    """(CPU seconds, peak RSS in MB, stdout) of one process."""
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.PIPE)
        _, status, usage = os.wait4(proc.pid, 0)
        if os.waitstatus_to_exitcode(status) != 0:
            raise SystemExit(f"failed: {' '.join(cmd)}\n{proc.stderr.read().decode()}")
        out.seek(0)
        return usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, out.read().decode()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=3, help="rounds; the least CPU time of each command counts")
    ap.add_argument("--topics", type=int, default=1000)
    args = ap.parse_args()
    run, qrels = generate(args.topics)
    sharedtask = str(Path(sys.executable).parent / "sharedtask")
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(BARE)
    ours = [sharedtask, "evaluate", str(run), "--task", "touche-2021-task1", "--qrels", str(qrels), "--json"]
    cmds = {"bare": [sys.executable, f.name, str(run), str(qrels)], "ours": ours,
            "ours-cut5": ours + ["--measures", "ndcg_cut_5"]}
    best: dict[str, tuple[float, float]] = {}
    outputs: dict[str, str] = {}
    for _ in range(args.repeat):
        for name, cmd in cmds.items():
            cpu, rss, outputs[name] = measure(cmd)
            old = best.get(name)
            best[name] = (cpu, rss) if old is None else (min(old[0], cpu), min(old[1], rss))
    os.unlink(f.name)
    lines = sum(1 for _ in open(run))
    print(f"Touché run of {lines:,} lines, {args.topics:,} topics; best of {args.repeat} interleaved rounds")
    print(f"{'tool':10} {'CPU s':>7} {'peak MB':>8} {'CPU x':>6} {'mem x':>6}   (x = / bare, target <= 1.2)")
    for name, (cpu, rss) in best.items():
        print(f"{name:10} {cpu:7.2f} {rss:8.0f} {cpu / best['bare'][0]:6.2f} {rss / best['bare'][1]:6.2f}")
    bare = float(outputs["bare"])
    for name in ("ours", "ours-cut5"):
        value = json.loads(outputs[name])["scores"]["ndcg_cut_5"]
        print(f"ndcg_cut_5 {name}: {value:.12f}  bare: {bare:.12f}  {'agree' if abs(value - bare) < 1e-12 else 'DIFFER'}")
    with open("/proc/loadavg") as fh:
        print(f"load average: {fh.read().split()[0]} on {os.cpu_count()} cores")
    return 0


if __name__ == "__main__":
    sys.exit(main())
