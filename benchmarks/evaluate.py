"""Benchmark: `sharedtask evaluate` (ARQMath Task 1) beside a bare pytrec_eval script.

Whole-process wall time and peak RSS (os.wait4's ru_maxrss) of

  ours: sharedtask evaluate RUN --task arqmath-3-task1 --qrels QRELS --json
  bare: a script that parses the same two files into dicts and runs pytrec_eval with
        -J (judged only) for ndcg, and -J -l2 for map, P_10, bpref (the same measures)

on a 100k-line run (100 topics x 1,000; 500 judgments per topic) and a 10M-line run
(10,000 topics x 1,000; 500 judgments per topic). About half of each topic's
judgments are retrieved. Data goes to /work/bench-data (generated once, reused).

    .venv/bin/python benchmarks/evaluate.py [--sizes small large] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DATA = Path(os.environ.get("BENCH_DATA", "/work/bench-data"))
SIZES = {"small": (100, 1000, 500), "large": (10_000, 1000, 500)}  # topics, depth, judgments/topic

BARE = r'''
import sys, pytrec_eval
run, qrels = {}, {}
with open(sys.argv[1]) as f:
    for line in f:
        t, d, r, s, _ = line.split()
        run.setdefault(t, {})[d] = float(s)
with open(sys.argv[2]) as f:
    for line in f:
        t, _, d, r = line.split()
        qrels.setdefault(t, {})[d] = int(r)
a = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg"}, judged_docs_only_flag=True).evaluate(run)
b = pytrec_eval.RelevanceEvaluator(qrels, {"map", "P_10", "bpref"}, relevance_level=2,
                                   judged_docs_only_flag=True).evaluate(run)
for m, res in (("ndcg", a), ("map", b), ("P_10", b), ("bpref", b)):
    print(m, sum(v[m] for v in res.values()) / len(res))
'''


def generate(name: str) -> tuple[Path, Path]:
    topics, depth, judged = SIZES[name]
    run, qrels = DATA / f"task1-{name}.run.tsv", DATA / f"task1-{name}.qrels.tsv"
    if run.exists() and qrels.exists():
        return run, qrels
    DATA.mkdir(parents=True, exist_ok=True)
    rnd = random.Random(42)
    with open(run.with_suffix(".tmp"), "w") as r, open(qrels.with_suffix(".tmp"), "w") as q:
        for t in range(1, topics + 1):
            topic = f"A.{t}"
            base = t * 10_000
            # retrieved posts: base + 0..depth-1; judged: half from the retrieved, half not
            judged_ids = rnd.sample(range(depth), judged // 2) + [depth + i for i in range(judged - judged // 2)]
            q.write("".join(f"{topic}\t0\t{base + j}\t{rnd.choice((0, 0, 1, 2, 3))}\n" for j in judged_ids))
            scores = sorted((rnd.random() * 100 for _ in range(depth)), reverse=True)
            r.write("".join(f"{topic}\t{base + i}\t{i + 1}\t{scores[i]:.4f}\tbench\n" for i in range(depth)))
    run.with_suffix(".tmp").rename(run)
    qrels.with_suffix(".tmp").rename(qrels)
    return run, qrels


def measure(cmd: list[str]) -> tuple[float, float, str]:
    """(seconds, peak RSS in MB, stdout) of one process."""
    with tempfile.TemporaryFile() as out:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.PIPE)
        _, status, usage = os.wait4(proc.pid, 0)
        elapsed = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        err = proc.stderr.read().decode()
        if proc.returncode != 0:
            raise SystemExit(f"failed ({proc.returncode}): {' '.join(cmd)}\n{err}")
        out.seek(0)
        return elapsed, usage.ru_maxrss / 1024, out.read().decode()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", nargs="+", default=list(SIZES), choices=list(SIZES))
    parser.add_argument("--repeat", type=int, default=3, help="runs per command; the best time is reported")
    args = parser.parse_args()
    venv_bin = Path(sys.executable).parent
    sharedtask = str(venv_bin / "sharedtask")
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(BARE)
        bare_script = f.name
    print(f"{'size':6} {'lines':>10} {'tool':6} {'time s':>8} {'peak MB':>8}   ratios (ours / pytrec_eval)")
    for name in args.sizes:
        run, qrels = generate(name)
        lines = SIZES[name][0] * SIZES[name][1]
        repeat = args.repeat if name == "small" else 1
        rows = {}
        outputs = {}
        for tool, cmd in (
            ("bare", [sys.executable, bare_script, str(run), str(qrels)]),
            ("ours", [sharedtask, "evaluate", str(run), "--task", "arqmath-3-task1", "--qrels", str(qrels), "--json"]),
        ):
            best = None
            for _ in range(repeat):
                t, rss, out = measure(cmd)
                best = (t, rss) if best is None or t < best[0] else best
            rows[tool] = best
            outputs[tool] = out
            print(f"{name:6} {lines:>10,} {tool:6} {best[0]:8.2f} {best[1]:8.0f}")
        print(f"{'':6} {'':>10} {'ratio':6} {rows['ours'][0] / rows['bare'][0]:8.2f} "
              f"{rows['ours'][1] / rows['bare'][1]:8.2f}   (target <= 1.5)")
        _agree(outputs)
    os.unlink(bare_script)
    return 0


def _agree(outputs: dict[str, str]) -> None:
    """The two tools must report the same numbers, or the timing comparison means nothing."""
    import json

    bare = {line.split()[0]: float(line.split()[1]) for line in outputs["bare"].splitlines()}
    ours = json.loads(outputs["ours"])["scores"]
    pairs = {"ndcg": "ndcg_prime", "map": "map_prime", "P_10": "p10_prime", "bpref": "bpref_prime"}
    diffs = {m: abs(bare[m] - ours[k]) for m, k in pairs.items()}
    status = "agree" if max(diffs.values()) < 1e-9 else f"DIFFER {diffs}"
    print(f"{'':6} {'':>10} scores {status}")


if __name__ == "__main__":
    sys.exit(main())
