"""Benchmark: the re-check of placed official truth that every `sharedtask evaluate` makes
(sharedtask.data.store.check_truth, issue 27).

For each official dataset whose truth ships with the package (the ARQMath qrels), the truth
is placed in a throw-away store and ``check_truth`` is timed in this process: best and median
of --repeat calls, page cache warm (as at the second evaluation of a session; the first also
reads the file from disk, which any scoring does anyway). The largest official qrels is
ARQMath-1 Task 1's (684 kB). Also timed: the stamp path of a file above FULL_HASH_MAX (a
stat, no hash), forced by setting FULL_HASH_MAX to 0. Target: <= 20 ms on the largest qrels.

    .venv/bin/python benchmarks/truth_check.py [--repeat 50]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time


def _time(fn, repeat: int) -> tuple[float, float]:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times) * 1e3, statistics.median(times) * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=50)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["SHAREDTASK_DATA"] = tmp
        from sharedtask.data import all_datasets, store

        rows = []
        for ds in all_datasets().values():
            truth = [f for f in ds.role("truth") if f.source == "package"]
            if not ds.official or not truth:
                continue
            store.assemble(ds, roles=("truth",), show_progress=False)
            size = sum((store.dataset_dir(ds) / f.target).stat().st_size for f in truth)
            store.check_truth(ds)  # warm the page cache
            best, median = _time(lambda: store.check_truth(ds), args.repeat)
            rows.append((size, ds.id, best, median))
        rows.sort(reverse=True)
        print(f"{'dataset':24} {'truth bytes':>11} {'best ms':>8} {'median ms':>10}")
        for size, name, best, median in rows:
            print(f"{name:24} {size:>11} {best:>8.2f} {median:>10.2f}")
        largest = next(d for d in all_datasets().values() if d.id == rows[0][1])
        store.FULL_HASH_MAX = 0
        store.check_truth(largest)  # records the stamp
        best, median = _time(lambda: store.check_truth(largest), args.repeat)
        print(f"stamp path (no hash), {largest.id}: best {best:.2f} ms, median {median:.2f} ms")


if __name__ == "__main__":
    main()
