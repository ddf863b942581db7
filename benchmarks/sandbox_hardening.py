"""What the host-side limits cost and how tight they are; runc against runsc (gVisor).

    .venv/bin/python benchmarks/sandbox_hardening.py [--repeat 3] [--skip-runsc]

1. Overshoot of the limits that are enforced by polling (docs/threat-model.md): a
   container writes zeros as fast as `dd` can (1 MiB blocks) into $outputDir
   (output limit 50 MiB) and into its own file system (disk limit 100 MiB); printed:
   the size found after the kill, the overshoot over the limit, and the time to kill.
2. The BM25 baseline (tira.yml's lucene-bm25) on the Touché 2020 sample under runc and
   runsc, interleaved: median wall time of each, the ratio, and whether the two
   run files are byte-identical. Needs `sharedtask/baseline-lucene:latest` (built by
   the demo) and the runsc runtime (registered by docker/setup.sh).
"""

from __future__ import annotations

import argparse
import filecmp
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from sharedtask.manifest import load_manifest
from sharedtask.sandbox import run
from sharedtask.units import format_size

TASK = "touche-2020-task1"
IMAGE = os.environ.get("SHAREDTASK_BASE_IMAGE", "sharedtask/base:latest")


def _layer_bytes(outcome) -> int:
    return int(outcome.record["disk"]["bytes"] or 0)


def overshoot(repeat: int, root: Path) -> None:
    print("1. limits enforced by polling (dd, 1 MiB blocks, as fast as the disk takes them)")
    cases = [
        ("output limit 50 MiB", "dd if=/dev/zero of=$outputDir/big bs=1M count=4000",
         {"max_output": "50m"}, lambda o, out: (out / "big").stat().st_size),
        ("disk limit 100 MiB", "dd if=/dev/zero of=/var/tmp/big bs=1M count=4000",
         {"disk": "100m"}, lambda o, out: _layer_bytes(o)),
    ]
    for name, command, limits, measure in cases:
        limit = 50 * 1024**2 if "max_output" in limits else 100 * 1024**2
        sizes, times = [], []
        for i in range(repeat):
            out = root / f"{name.split()[0]}-{i}" / "output"
            t0 = time.perf_counter()
            outcome = run(TASK, IMAGE, command=command, output_dir=out, validate=False, timeout=300, **limits)
            times.append(time.perf_counter() - t0)
            assert outcome.result.status in ("output-limit", "disk-limit"), outcome.result.message
            sizes.append(measure(outcome, out))
        worst = max(sizes)
        print(f"  {name}: found {', '.join(format_size(s) for s in sizes)} after the kill; worst overshoot "
              f"{format_size(worst - limit)} (x{worst / limit:.2f} of the limit); run took "
              f"{statistics.median(times):.2f} s (median)")


def runtimes(repeat: int, root: Path) -> None:
    print("2. BM25 baseline (lucene-bm25) on the Touché 2020 sample: runc vs runsc")
    sw = load_manifest().software("lucene-bm25")
    times: dict[str, list[float]] = {"runc": [], "runsc": []}
    files: dict[str, Path] = {}
    for i in range(repeat + 1):
        for runtime in times:
            out = root / f"bm25-{runtime}-{i}" / "output"
            t0 = time.perf_counter()
            outcome = run(TASK, sw.image, command=sw.command_for(TASK), output_dir=out, runtime=runtime)
            elapsed = time.perf_counter() - t0
            assert outcome.ok, (runtime, outcome.result.message, outcome.result.log_tail)
            files[runtime] = out / "run.txt"
            if i > 0:  # the first round warms the page cache
                times[runtime].append(elapsed)
    runc, runsc = statistics.median(times["runc"]), statistics.median(times["runsc"])
    same = filecmp.cmp(files["runc"], files["runsc"], shallow=False)
    print(f"  runc  {runc:.2f} s   runsc {runsc:.2f} s   (median of {repeat})   runsc/runc x{runsc / runc:.2f}   "
          f"+{runsc - runc:.2f} s")
    print(f"  run files byte-identical: {same}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--skip-runsc", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="sharedtask-bench-") as tmp:
        overshoot(args.repeat, Path(tmp))
        if not args.skip_runsc:
            runtimes(args.repeat, Path(tmp))
    with open("/proc/loadavg") as fh:
        print(f"load average: {fh.read().split()[0]} on {os.cpu_count()} cores")
    return 0


if __name__ == "__main__":
    sys.exit(main())
