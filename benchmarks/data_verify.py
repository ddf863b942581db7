"""Benchmark: `sharedtask data verify` on a 1 GB file against hashlib's sha256 of the same
bytes already in memory (the ceiling: no I/O at all).

The file is a synthetic args.me part of 1 GB (random bytes would do as well: sha256's
speed does not depend on content), declared in a throw-away copy of tasks/ as a dataset
file with its sha256 and imported with `sharedtask data import`. The file is read once
before the measurement so that it is in the page cache, as the issue asks.

  in memory: hashlib.sha256(data) on the bytes in memory, best of --repeat
  verify:    the `sharedtask data verify ID --json` process, whole wall time (start-up
             included), best of --repeat; and store.verify() alone in this process
Target: verify's throughput >= 70 % of the in-memory figure.

    .venv/bin/python benchmarks/data_verify.py [--size-mb 1024] [--repeat 3]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DATA = Path(os.environ.get("BENCH_DATA", "/work/bench-data"))
ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def _make(path: Path, size: int) -> None:
    if path.is_file() and path.stat().st_size == size:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    rng = random.Random(14)
    with open(path, "wb") as out:
        block = 1 << 24
        for _ in range(size // block):
            out.write(rng.randbytes(block))
        out.write(rng.randbytes(size % block))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size-mb", type=int, default=1024)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    size = args.size_mb << 20
    big = DATA / f"verify-{args.size_mb}mb.bin"
    _make(big, size)
    data = big.read_bytes()  # also warms the page cache
    best_mem = min(_timed(lambda: hashlib.sha256(data).hexdigest()) for _ in range(args.repeat))
    digest = hashlib.sha256(data).hexdigest()
    del data

    with tempfile.TemporaryDirectory(dir=DATA) as tmp:
        tasks = Path(tmp) / "tasks"
        shutil.copytree(ROOT / "tasks", tasks)
        (tasks / "datasets" / "zz-bench.yml").write_text(
            "version: 1\ndatasets:\n  touche-2020-task1/bench:\n    task: touche-2020-task1\n"
            "    title: one large file\n    files:\n"
            f"      - {{path: debateorg.json, role: input, format: argsme-json, origin: {big.name}, sha256: {digest}}}\n")
        env = dict(os.environ, SHAREDTASK_TASKS=str(tasks), SHAREDTASK_DATA=str(Path(tmp) / "store"))
        cli = [str(BIN / "sharedtask"), "data"]
        subprocess.run(cli + ["import", "touche-2020-task1/bench", "--from", str(big)], env=env, check=True,
                       stdout=subprocess.DEVNULL)
        placed = Path(tmp) / "store/datasets/touche-2020-task1/bench/input/debateorg.json"
        with open(placed, "rb") as fh:  # page cache
            while fh.read(1 << 24):
                pass
        best_cli = min(_timed(lambda: subprocess.run(cli + ["verify", "touche-2020-task1/bench", "--json"],
                                                       env=env, check=True, stdout=subprocess.DEVNULL))
                       for _ in range(args.repeat))
        os.environ.update(SHAREDTASK_TASKS=env["SHAREDTASK_TASKS"], SHAREDTASK_DATA=env["SHAREDTASK_DATA"])
        sys.path.insert(0, str(ROOT / "src"))
        from sharedtask.data import get_dataset, store

        ds = get_dataset("touche-2020-task1/bench")
        best_api = min(_timed(lambda: store.verify(ds, show_progress=False)) for _ in range(args.repeat))

    mb = size / 1e6
    print(f"file: {mb:,.0f} MB ({big}), best of {args.repeat}, load average {os.getloadavg()[0]:.2f}")
    print(f"hashlib sha256 in memory:        {best_mem:6.2f} s  {mb / best_mem:7.1f} MB/s")
    print(f"store.verify() (page cache):     {best_api:6.2f} s  {mb / best_api:7.1f} MB/s  "
          f"ratio {best_mem / best_api:.2f}")
    print(f"`sharedtask data verify` (CLI):  {best_cli:6.2f} s  {mb / best_cli:7.1f} MB/s  "
          f"ratio {best_mem / best_cli:.2f}  (target >= 0.70)")


def _timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


if __name__ == "__main__":
    main()
