"""Start-up cost of the CLI: whole-process time of small commands beside their anchors.

Anchors, measured in the same run and round-robin with the commands (so load changes
hit all alike):
  pass        `python -c pass`: the interpreter alone
  yaml+rich   `python -c "import yaml, rich.console"`: the two libraries every command needs

Commands (each `python -m sharedtask ...`, from the current src/ and, with --before REF,
from that commit's src/ too, so before and after are compared in one run; --before-venv DIR
instead runs the sharedtask installed in that virtual environment, e.g. a worktree of an
older commit with its own dependencies):
  help        `sharedtask --help`                                  target <= 1.5x yaml+rich
  validate-1  `sharedtask validate` on a 1-line run                 target <= 2x yaml+rich
  validate    `sharedtask validate --json` on a 100k-line run
  evaluate    `sharedtask evaluate --json` on the same run and its qrels
  run         `sharedtask run --json`: a container copies the 100k-line run to
              $outputDir (sandboxed, then validated); needs Docker and --image

Round 0 warms the page cache and writes the .pyc files (PYTHONDONTWRITEBYTECODE is
removed from the children's environment: an installed package has them). Prints the
minimum over --repeat rounds of wall and CPU (user+sys, os.wait4) seconds
of each process, and the ratio of CPU time to the yaml+rich anchor (CPU time is the
fair comparison on a shared machine).

With --keep-no-bytecode-writes, PYTHONDONTWRITEBYTECODE=1 stays set in every child, round 0 too:
the commands then find only the bytecode that `bash setup.sh` compiled (python -m compileall),
as in a container or CI that sets the variable; the script says how many modules lack it.

    .venv/bin/python benchmarks/startup.py [--repeat 7] [--before HEAD~1] [--skip run]
    .venv/bin/python benchmarks/startup.py --before-venv /work/tmp-before/.venv --skip help validate-1
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(os.environ.get("BENCH_DATA", "/work/bench-data"))
TASK = "touche-2021-task1"
ONE_LINE = "1 Q0 S0000000a-A0000000b 1 10.0 bench\n"


KEEP_NO_WRITES = False  # set by --keep-no-bytecode-writes


def child_env(**extra: str) -> dict[str, str]:
    """This environment without PYTHONDONTWRITEBYTECODE: users' installs have their .pyc files
    (pip writes them), so the warm-up round writes them here too; with the variable set, every
    start would compile the package's sources again (~50 ms here)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    if KEEP_NO_WRITES:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    return {**env, **extra}


def modules_without_bytecode(src: Path) -> list[Path]:
    """Modules of ``src/sharedtask`` whose current .pyc is missing (what every start would compile)."""
    import importlib.util
    missing = []
    for module in sorted((src / "sharedtask").rglob("*.py")):
        cached = Path(importlib.util.cache_from_source(str(module)))
        if not cached.exists() or cached.stat().st_mtime < module.stat().st_mtime:
            missing.append(module)
    return missing


def measure(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall, CPU) seconds of one process; stdout and stderr are discarded."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    code = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode() if proc.stderr else ""
    if code not in (0, 1):
        raise SystemExit(f"{' '.join(cmd[:5])} ... failed ({code}): {err[-2000:]}")
    return wall, usage.ru_utime + usage.ru_stime


def source_tree(ref: str, into: Path) -> Path:
    """The src/ folder of commit ``ref`` (with the tasks/ it reads), extracted under ``into``."""
    into.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", ref, "src", "tasks"], check=True,
                             capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into / "src"


def run_data() -> tuple[Path, Path]:
    run = DATA / "validate-small.run.txt"
    qrels = run.with_name(run.name + ".qrels")
    if not (run.exists() and qrels.exists()):
        DATA.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "sharedtask.samples.synthetic", "run", str(run), "--topics", "100",
                        "--depth", "1000", "--judged", "50"], check=True)
    return run, qrels


def commands(tmp: Path, image: str | None, skip: set[str], python: str = sys.executable) -> dict[str, list[str]]:
    run, qrels = run_data()
    one = tmp / "one-line.txt"
    one.write_text(ONE_LINE)
    cli = [python, "-m", "sharedtask"]
    out = {
        "help": cli + ["--help"],
        "validate-1": cli + ["validate", str(one), "--task", TASK],
        "validate": cli + ["validate", str(run), "--task", TASK, "--json"],
        "evaluate": cli + ["evaluate", str(run), "--task", TASK, "--qrels", str(qrels), "--json"],
    }
    if image is not None and "run" not in skip:
        dataset = tmp / "input"
        dataset.mkdir(exist_ok=True)
        (dataset / "run.txt").write_bytes(run.read_bytes())
        out["run"] = cli + ["run", "--task", TASK, "--image", image, "--input", str(dataset),
                            "--command", "cp $inputDataset/run.txt $outputDir/run.txt", "--json",
                            "--output", "{output}"]
    return {k: v for k, v in out.items() if k not in skip}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--before", metavar="REF", help="also time the src/ of this commit (e.g. main)")
    ap.add_argument("--image", default=os.environ.get("SHAREDTASK_BASE_IMAGE", "sharedtask/base:latest"))
    ap.add_argument("--before-venv", type=Path, metavar="DIR",
                    help="also time the sharedtask installed in this venv (its own python and packages)")
    ap.add_argument("--skip", nargs="*", default=[], choices=["help", "validate-1", "run", "validate", "evaluate"])
    ap.add_argument("--keep-no-bytecode-writes", action="store_true",
                    help="keep PYTHONDONTWRITEBYTECODE=1 in every child (measures the bytecode setup.sh compiled)")
    args = ap.parse_args()
    global KEEP_NO_WRITES
    KEEP_NO_WRITES = args.keep_no_bytecode_writes
    if KEEP_NO_WRITES:
        missing = modules_without_bytecode(ROOT / "src")
        print(f"PYTHONDONTWRITEBYTECODE=1 kept; modules without current bytecode: {len(missing)}")
    with tempfile.TemporaryDirectory(prefix="sharedtask-startup-") as name:
        tmp = Path(name)
        sources: dict[str, tuple[str, Path | None]] = {"after": (sys.executable, ROOT / "src")}
        if args.before:
            sources = {"before": (sys.executable, source_tree(args.before, tmp / "before")), **sources}
        elif args.before_venv:
            sources = {"before": (str(args.before_venv / "bin" / "python"), None), **sources}
        anchors = {"pass": [sys.executable, "-c", "pass"],
                   "yaml+rich": [sys.executable, "-c", "import yaml, rich.console"]}
        cmds = {label: commands(tmp, args.image, set(args.skip), python) for label, (python, _) in sources.items()}
        best: dict[tuple[str, str], tuple[float, float]] = {}
        counter = 0
        for round_ in range(args.repeat + 1):  # round 0 warms the page cache and is not counted
            jobs = [(a, "", cmd, child_env()) for a, cmd in anchors.items()]
            for label, (_, src) in sources.items():
                env = child_env(PYTHONPATH=str(src)) if src else child_env()  # wins over the editable install
                jobs += [(c, label, cmd, env) for c, cmd in cmds[label].items()]
            for what, label, cmd, env in jobs:
                counter += 1
                cmd = [part.replace("{output}", str(tmp / f"out-{counter}" / "output")) for part in cmd]
                wall, cpu = measure(cmd, env)
                if round_ == 0:
                    continue
                old = best.get((what, label))
                best[(what, label)] = (wall, cpu) if old is None else (min(old[0], wall), min(old[1], cpu))
    anchor = best[("yaml+rich", "")][1]
    print(f"best of {args.repeat} rounds; ratio = CPU time / CPU time of `import yaml, rich.console`")
    print(f"{'':22s} {'wall':>8s} {'CPU':>8s} {'ratio':>6s}")
    for (what, label), (wall, cpu) in best.items():
        print(f"{(what + ' ' + label).strip():22s} {wall:7.3f}s {cpu:7.3f}s {cpu / anchor:6.2f}")
    targets = {"help": 1.5, "validate-1": 2.0}
    for what, limit in targets.items():
        if (what, "after") in best:
            ratio = best[(what, "after")][1] / anchor
            print(f"target {what} <= {limit}x yaml+rich: {ratio:.2f}x {'met' if ratio <= limit else 'MISSED'}")
    with open("/proc/loadavg") as fh:
        print(f"load average while measuring: {fh.read().split()[0]} on {os.cpu_count()} cores")
    return 0


if __name__ == "__main__":
    sys.exit(main())
