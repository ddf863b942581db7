"""Run test modules repeatedly on a busy machine with a long temporary path: flakiness, measured.

    python benchmarks/under_load.py [--rounds 3] [--burners 2] [--basetemp-length 150] [--cpu-profile P]
                                    [-- PYTEST ARGS...]

Why: CI runs on two shared, busy cores, and a test that waits for time instead of for an
event, or that depends on the length of pytest's temporary path (a log line wrapped at 80
columns), passes on an idle machine and fails there. This starts ``--burners`` processes
that spin on the CPU (one per core by default), then runs pytest ``--rounds`` times with a
``--basetemp`` folder whose absolute path is ``--basetemp-length`` characters long, and
prints each round's outcome, its duration, and the load average the burners kept up.

``--cpu-profile haswell`` also hides AVX-512 from this process tree (numpy, OpenBLAS on the
host; ``SHAREDTASK_CPU_PROFILE`` for every container), as an older CPU would. The default
test selection is the modules that start containers, workers, brokers and servers.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_TESTS = ["tests/test_interrupts.py", "tests/test_distributed.py", "tests/test_distributed_demo.py",
                 "tests/test_sandbox_docker.py", "tests/test_sandbox_hostile.py", "tests/test_sandbox_signals.py",
                 "tests/test_sandbox_limits.py", "tests/service/test_docker.py", "tests/service/test_broker.py",
                 "tests/test_demo.py"]


def _burn() -> None:
    x = 0
    while True:
        x = (x * 1103515245 + 12345) % 2**31


def long_basetemp(length: int) -> Path:
    """A fresh folder whose absolute path has exactly ``length`` characters (not created)."""
    root = Path(tempfile.mkdtemp(prefix="under-load-"))
    pad = length - len(str(root)) - 1
    if pad < 1:
        raise SystemExit(f"--basetemp-length {length} is shorter than {root}")
    return root / ("p" * pad)


def host_environment(cpu_profile: str | None) -> dict[str, str]:
    sys.path.insert(0, str(REPO / "src"))
    from sharedtask.sandbox.cpu import PROFILE_ENV, profile

    env = dict(os.environ)
    if cpu_profile:
        chosen = profile(cpu_profile)
        env[PROFILE_ENV] = chosen.name
        env.update({k: v for k, v in chosen.env().items() if k != "JAVA_TOOL_OPTIONS"})
    return env


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--burners", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--basetemp-length", type=int, default=150)
    parser.add_argument("--cpu-profile", help="hide vector units as an older CPU would (haswell, nehalem)")
    parser.add_argument("pytest_args", nargs=argparse.REMAINDER, help="after --: pytest's arguments")
    args = parser.parse_args()
    tests = [a for a in args.pytest_args if a != "--"] or DEFAULT_TESTS
    # Ctrl-C reaches the tests as from a terminal: started as a shell's background job, this
    # process would have SIGINT ignored, and its children would keep it so (a caught signal is
    # reset to the default at exec, an ignored one is not); the interrupt tests send Ctrl-C.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    env = host_environment(args.cpu_profile)
    burners = [multiprocessing.Process(target=_burn, daemon=True) for _ in range(args.burners)]
    for b in burners:
        b.start()
    results = []
    try:
        for n in range(1, args.rounds + 1):
            basetemp = long_basetemp(args.basetemp_length)
            start = time.monotonic()
            code = subprocess.call([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                                    f"--basetemp={basetemp}", *tests], cwd=REPO, env=env)
            took = time.monotonic() - start
            load = os.getloadavg()[0]
            results.append((n, code, took, load))
            print(f"[under-load] round {n}: pytest exit {code} in {took:.0f} s, load average {load:.1f} "
                  f"({args.burners} burners, basetemp {len(str(basetemp))} characters"
                  f"{', CPU profile ' + args.cpu_profile if args.cpu_profile else ''})", flush=True)
            shutil.rmtree(basetemp.parent, ignore_errors=True)
    finally:
        for b in burners:
            b.terminate()
    failed = [r for r in results if r[1] != 0]
    print(f"[under-load] {len(results) - len(failed)} of {len(results)} rounds passed")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
