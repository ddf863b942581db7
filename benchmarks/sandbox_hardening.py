"""What the write limits cost and how tight they are; runc against runsc (gVisor).

    .venv/bin/python benchmarks/sandbox_hardening.py [--repeat 3] [--skip-runsc]

1. Overshoot past the write limits, kernel-enforced (loop-mounted ext4 images,
   sandbox/limitfs.py) against the walk of before (``SHAREDTASK_KERNEL_LIMITS=0``), in
   the same session: a container writes zeros as fast as `dd` can (1 MiB blocks) into
   $outputDir (output limit 50 MiB) and into its own file system (disk limit 100 MiB),
   and 64 KiB writes 300 levels deep into $outputDir (below the walk's 256-level
   bound). Printed: status, what landed (allocated bytes), overshoot, time per run.
2. The cost of the kernel limits per run: a run that writes one line, interleaved
   kernel/walk; median wall time of each, the difference and the ratio (target +0.2 s).
3. The BM25 baseline (tira.yml's lucene-bm25) on the Touché 2020 sample under runc and
   runsc, interleaved: median wall time of each, the ratio, and whether the two
   run files are byte-identical. Needs `sharedtask/baseline-lucene:latest` (built by
   the demo) and the runsc runtime (registered by docker/setup.sh).
"""

from __future__ import annotations

import argparse
import filecmp
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from sharedtask.manifest import load_manifest
from sharedtask.sandbox import run
from sharedtask.sandbox.bounds import ENV_SWITCH
from sharedtask.sandbox.outputs import remove_tree
from sharedtask.units import format_size

TASK = "touche-2020-task1"
IMAGE = os.environ.get("SHAREDTASK_BASE_IMAGE", "sharedtask/base:latest")
MODES = {"kernel": "1", "walk": "0"}
DEEP = ("python -c \"import os\nos.chdir(os.environ['outputDir'])\nfor _ in range(300): os.mkdir('d'); os.chdir('d')\n"
        "fh = open('big', 'wb')\nfor _ in range(4800): fh.write(bytes(65536))\n\"")


def _run(mode: str, out: Path, command: str, **kw):
    os.environ[ENV_SWITCH] = MODES[mode]
    t0 = time.perf_counter()
    outcome = run(TASK, IMAGE, command=command, output_dir=out, validate=False, timeout=300, **kw)
    return outcome, time.perf_counter() - t0


def _landed_output(outcome, out: Path) -> int:
    """Allocated bytes under the output folder, at any depth (``du``; the walk stops at 256 levels)."""
    du = subprocess.run(["du", "-s", "-B1", str(out)], capture_output=True, text=True, check=True)
    return int(du.stdout.split()[0]) - os.stat(out).st_blocks * 512  # less the empty folder itself


def overshoot(repeat: int, root: Path) -> None:
    print("1. overshoot past the write limits: kernel (loop-mounted ext4) vs walk (before)")
    cases = [
        ("output 50 MiB, dd 1 MiB blocks", "dd if=/dev/zero of=$outputDir/big bs=1M count=4000",
         {"max_output": "50m"}, 50 * 1024**2, _landed_output),
        ("output 50 MiB, 300 levels deep", DEEP, {"max_output": "50m"}, 50 * 1024**2, _landed_output),
        ("disk 100 MiB, dd 1 MiB blocks", "dd if=/dev/zero of=/var/tmp/big bs=1M count=4000",
         {"disk": "100m"}, 100 * 1024**2, lambda o, out: int(o.record["disk"]["bytes"] or 0)),
    ]
    for name, command, limits, limit, measure in cases:
        for mode in MODES:
            sizes, times, statuses = [], [], set()
            for i in range(repeat):
                out = root / f"{mode}-{i}" / "output"
                outcome, seconds = _run(mode, out, command, **limits)
                times.append(seconds)
                statuses.add(outcome.result.status)
                sizes.append(measure(outcome, out))
                remove_tree(out.parent)
            worst = max(sizes)
            print(f"  {name:32} {mode:6} status {'/'.join(sorted(statuses)):13} landed "
                  f"{', '.join(format_size(s) for s in sizes)}; worst overshoot {format_size(max(worst - limit, 0))}"
                  f" (x{worst / limit:.2f} of the limit); {statistics.median(times):.2f} s per run (median)")


def cost(repeat: int, root: Path) -> None:
    print("2. cost of the kernel limits per run (one line written), interleaved")
    times: dict[str, list[float]] = {mode: [] for mode in MODES}
    for i in range(repeat + 1):
        for mode in MODES:
            out = root / f"cost-{mode}-{i}" / "output"
            outcome, seconds = _run(mode, out, "echo 1 Q0 doc 1 1.0 x > $outputDir/run.txt")
            assert outcome.result.status == "success", outcome.result.message
            if i > 0:  # the first round warms caches
                times[mode].append(seconds)
            remove_tree(out.parent)
    kernel, walk = statistics.median(times["kernel"]), statistics.median(times["walk"])
    print(f"  kernel {kernel:.3f} s   walk {walk:.3f} s   (median of {repeat})   "
          f"kernel/walk x{kernel / walk:.2f}   {kernel - walk:+.3f} s per run")


def runtimes(repeat: int, root: Path) -> None:
    print("3. BM25 baseline (lucene-bm25) on the Touché 2020 sample: runc vs runsc")
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
    parser.add_argument("--cost-repeat", type=int, default=9)
    parser.add_argument("--skip-runsc", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="sharedtask-bench-") as tmp:
        overshoot(args.repeat, Path(tmp))
        cost(args.cost_repeat, Path(tmp))
        if not args.skip_runsc:
            runtimes(args.repeat, Path(tmp))
    with open("/proc/loadavg") as fh:
        print(f"load average: {fh.read().split()[0]} on {os.cpu_count()} cores")
    return 0


if __name__ == "__main__":
    sys.exit(main())
