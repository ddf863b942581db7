"""Throughput of sleep-bound runs on 1, 2 and 4 compute workers, and the cost of a job over a local run.

    python benchmarks/distributed.py [--runs 8] [--sleep 5] [--workers 1 2 4]

Starts its own redis-server on a free loopback port (AOF on, as in the tests), builds a
2 MB busybox image, and for each worker count starts that many `sharedtask worker`
processes (concurrency 1 each), sends ``--runs`` jobs that ``sleep`` then write a run
file, and waits until every job has landed in its run folder (outputs checked and
renamed into place). The runs wait rather than compute, so throughput should grow with
the workers: target >= 1.8x with 2 workers over 1.

Overhead per job: what a job costs besides its container, on one worker (wall time per
job minus the container's own wall time from its run record) against the same through
the local sandbox (`sharedtask.sandbox.run`, what `sharedtask run` does: call time minus
container time). Container start-up varies by a second on a busy shared machine, so the
container's own time is taken out of both sides. Target < 0.5 s.

Needs: Docker, redis-server (Debian package), busybox-static.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from distributed_helpers import RedisServer, Worker, build_tiny_image, ensure_installed, job_for  # noqa: E402


def batch(broker: RedisServer, workers: int, runs: int, sleep: float, image: str, folder: Path,
          client) -> tuple[float, float]:
    """Seconds from the first job sent to the last result landed, and the containers' mean wall time."""
    from sharedtask.executor.remote import CeleryExecutor

    started = [Worker(broker.url, f"bench-{workers}-{i}", folder, visibility=60) for i in range(workers)]
    try:
        executor = CeleryExecutor(broker.url)
        jobs = [job_for(client, image, f"sleep {sleep}; echo {workers}-{i}; cp /run.txt $outputDir/run.txt")
                for i in range(runs)]
        t0 = time.perf_counter()
        handles = [executor.submit(job, folder / f"out-{workers}" / f"run{i}") for i, job in enumerate(jobs)]
        results = [h.result(timeout=600) for h in handles]
        elapsed = time.perf_counter() - t0
        bad = [r for r in results if r.status != "success"]
        if bad:
            raise SystemExit(f"{len(bad)} run(s) failed: {bad[0].message}")
        return elapsed, statistics.mean(r.record["wall_seconds"] for r in results)
    finally:
        for worker in started:
            worker.stop()


def local_runs(runs: int, sleep: float, image: str, folder: Path) -> list[tuple[float, float]]:
    """(call time, container wall time) of each run through the local sandbox, one after the other."""
    from sharedtask.sandbox import run as sandbox_run
    from sharedtask.spec import load_task

    task = load_task("touche-2021-task1")
    times = []
    for i in range(runs):
        t0 = time.perf_counter()
        outcome = sandbox_run(task, image, command=f"sleep {sleep}; cp /run.txt $outputDir/run.txt",
                              input_dir=task.sample_dir / "input", output_dir=folder / f"local{i}" / "output")
        times.append((time.perf_counter() - t0, outcome.result.wall_seconds))
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=8)
    parser.add_argument("--sleep", type=float, default=5.0)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    args = parser.parse_args()
    binary = ensure_installed("redis-server", "redis-server")
    if binary is None:
        raise SystemExit("redis-server is needed: apt-get install redis-server")
    import docker

    client = docker.from_env()
    folder = Path(tempfile.mkdtemp(prefix="sharedtask-bench-dist-"))
    reference = Path(__file__).resolve().parent.parent / "baselines/reference-runs/touche-2021-task1/lucene-bm25.txt"
    image = build_tiny_image(client, folder / "image", reference)
    broker = RedisServer(binary, folder / "redis")
    broker.start()
    try:
        local = local_runs(args.runs, args.sleep, image, folder)
        local_mean = statistics.mean(t for t, _ in local)
        local_extra = statistics.mean(t - wall for t, wall in local)
        print(f"{args.runs} runs of `sleep {args.sleep:g}` each; local sandbox run: {local_mean:.2f} s per run, "
              f"of which {local_extra:.2f} s outside the container")
        timings: dict[int, float] = {}
        walls: dict[int, float] = {}
        for n in args.workers:
            timings[n], walls[n] = batch(broker, n, args.runs, args.sleep, image, folder, client)
            base = timings[args.workers[0]]
            print(f"{n} worker(s): {timings[n]:6.2f} s, {args.runs / timings[n]:.2f} runs/s, "
                  f"speed-up over {args.workers[0]} worker(s): {base / timings[n]:.2f}x")
        if 1 in timings:
            per_job = timings[1] / args.runs
            extra = per_job - walls[1]
            print(f"one worker: {per_job:.2f} s per job, of which {extra:.2f} s outside the container "
                  f"(containers {walls[1]:.2f} s on the worker, {statistics.mean(w for _, w in local):.2f} s locally)")
            print(f"overhead per job over a local run: {extra - local_extra:+.2f} s (target < 0.5 s): "
                  f"{'met' if extra - local_extra < 0.5 else 'NOT met'}")
        if 1 in timings and 2 in timings:
            ratio = timings[1] / timings[2]
            print(f"2 workers over 1: {ratio:.2f}x (target >= 1.8x): {'met' if ratio >= 1.8 else 'NOT met'}")
    finally:
        broker.stop()
        client.images.remove(image, force=True)
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
