"""Overhead of `sharedtask run` over a bare `docker run --rm` of the same image and command.

    .venv/bin/python benchmarks/sandbox.py [--runs 7] [--image sharedtask/base:latest]

Three ways to run the same container (same image, command, input, output mount):
  bare  `docker run --rm --network none -v in:ro -v out ... sh -c CMD` (the docker CLI)
  api   sharedtask.sandbox.run(...) in a warm Python process (policy, probes,
        log files, validation, run record included)
  cli   `python -m sharedtask run ... --json` (adds interpreter start and imports)
  floor `python -m sharedtask --help`: what any Python CLI here pays before work
Prints the median wall time of each (after one warm-up run), the added seconds
and the ratio over bare. Target: under 1 s added.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TASK = "touche-2020-task1"
COMMAND = "echo '1 Q0 doc1 1 1.0 bench' > $outputDir/run.txt"


def bare(image: str, input_dir: Path, output_dir: Path) -> None:
    output_dir.mkdir(parents=True)
    command = COMMAND.replace("$outputDir", "/tira-data/output")
    subprocess.run(["docker", "run", "--rm", "--network", "none",
                    "-v", f"{input_dir}:/tira-data/input:ro", "-v", f"{output_dir}:/tira-data/output",
                    "--entrypoint", "sh", image, "-c", command], check=True, capture_output=True)


def api(image: str, input_dir: Path, output_dir: Path) -> None:
    from sharedtask.sandbox import run

    outcome = run(TASK, image, command=COMMAND, input_dir=input_dir, output_dir=output_dir)
    assert outcome.result.status == "success", outcome.result.message


def cli(image: str, input_dir: Path, output_dir: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "sharedtask", "run", "--task", TASK, "--image", image,
                           "--command", COMMAND, "--input", str(input_dir), "--output", str(output_dir), "--json"],
                          capture_output=True, text=True)
    # 1: the one-line run is not a valid Touché run (the validator says so); the container succeeded.
    assert done.returncode in (0, 1) and '"status": "success"' in done.stdout, done.stderr


def cli_floor(image: str, input_dir: Path, output_dir: Path) -> None:
    """Interpreter start + the CLI dispatcher importing every subcommand: no container at all."""
    subprocess.run([sys.executable, "-m", "sharedtask", "--help"], check=True, capture_output=True)


def _cpu() -> float:
    """User+system CPU seconds of this process and its finished children (the daemon's work is in neither)."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--image", default=os.environ.get("SHAREDTASK_BASE_IMAGE", "sharedtask/base:latest"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="sharedtask-bench-") as tmp:
        root = Path(tmp)
        input_dir = root / "input"
        input_dir.mkdir()
        (input_dir / "topics.xml").write_text("<topics/>\n")
        ways = {"bare": bare, "api": api, "cli": cli, "floor": cli_floor}
        times: dict[str, list[float]] = {name: [] for name in ways}
        cpu: dict[str, list[float]] = {name: [] for name in ways}
        counter = 0
        for i in range(args.runs + 1):  # round-robin so that load changes hit all three alike
            for name, way in ways.items():
                counter += 1
                out = root / f"{name}-{counter}" / "output"
                t0 = time.perf_counter()
                c0 = _cpu()
                way(args.image, input_dir, out)
                if i > 0:  # the first round warms caches
                    times[name].append(time.perf_counter() - t0)
                    cpu[name].append(_cpu() - c0)
    base = statistics.median(times["bare"])
    print(f"image {args.image}, command {COMMAND!r}, {args.runs} runs each, median wall time:")
    for name in ways:
        med = statistics.median(times[name])
        extra = "" if name in ("bare", "floor") else f"   +{med - base:.3f} s   x{med / base:.2f}"
        print(f"  {name:5s} {med:.3f} s  (min {min(times[name]):.3f}, max {max(times[name]):.3f}){extra}"
              f"   client CPU {statistics.median(cpu[name]):.3f} s")
    floor = statistics.median(times["floor"])
    print(f"  of the cli's time, {floor:.3f} s is `python -m sharedtask --help` alone (interpreter + dispatcher imports)")
    with open("/proc/loadavg") as fh:
        print(f"load average while measuring: {fh.read().split()[0]} on {os.cpu_count()} cores")
    worst = max(statistics.median(times["api"]), statistics.median(times["cli"])) - base
    print(f"added wall time: {worst:.3f} s (target < 1 s): {'OK' if worst < 1 else 'OVER TARGET'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
