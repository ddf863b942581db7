"""Peak host RSS of the run validator on large legal-sized runs (issue 26: memory bounded by the spec).

    .venv/bin/python benchmarks/validator_memory.py [--sizes 100,1000] [--shapes ...] [--src DIR]

For each size (MB) and shape, a Touché 2020 run in the TREC layout is generated into a
temporary directory (written line by line, never held in memory) and validated in a child
process, ``sharedtask.validate.validate(run, task, input_dir=<the task's sample input>)``,
as the host does after a sandboxed run. Printed per run: peak RSS of the child (ru_maxrss
from wait4), its CPU time, whether the run is valid, and the finding codes it got.
``--src DIR`` validates with another checkout's package (e.g. /work/main/src for "before").

Shapes (every one within the task's max_run_bytes, 1 GiB, and legal in size):
  deep         the sample's topics, grouped, each as deep as the size makes it
  one-topic    a single topic holding every line
  interleaved  the sample's topics round-robin, line by line
  many-topics  a new topic id on every line
  many-tags    grouped topics, a new run tag on every line
  long-lines   one topic, lines of 134 bytes (a 96-character run tag): the bound's rows and its
               64 MiB of text are reached together, the most memory per kept line
  grouped      topics 1, 2, 3, ... of 1000 lines each (the task's depth): nothing to refuse but
               unknown topics, so the whole run is read (streaming)

``--no-input`` validates without the topics (as ``sharedtask validate RUN --task T`` does): the
bound is then its ceiling (500,000 lines), the largest memory any run can cost.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

TASK = "touche-2020-task1"
SHAPES = ("deep", "one-topic", "interleaved", "many-topics", "many-tags", "grouped", "long-lines")
# What the child runs: validate as the sandbox does after a run (topics from the input folder).
CHILD = """
import sys, json
from pathlib import Path
from sharedtask.spec import load_task
from sharedtask.validate import validate
task = load_task(sys.argv[2])
r = validate(Path(sys.argv[1]), task, input_dir=task.sample_dir / "input" if sys.argv[3] == "input" else None)
print(json.dumps({"valid": r.valid, "codes": sorted(r.codes()), "lines": r.stats.lines}))
"""


def _topics() -> list[str]:
    from sharedtask.spec import load_task
    from sharedtask.validate import load_topics

    task = load_task(TASK)
    return sorted(load_topics(task, input_dir=task.sample_dir / "input") or {"1"})


def _lines(shape: str, topics: list[str], n: int) -> Iterator[str]:
    """``n`` run lines of the given shape (about 40 bytes each)."""
    if shape == "deep":
        per = -(-n // len(topics))
        for t in topics:
            for r in range(1, per + 1):
                yield f"{t} Q0 S{r:08x}-A{r:08x} {r} {per - r + 1}.5 tag\n"
    elif shape == "one-topic":
        for r in range(1, n + 1):
            yield f"{topics[0]} Q0 S{r:08x}-A{r:08x} {r} {n - r + 1}.5 tag\n"
    elif shape == "interleaved":
        per = -(-n // len(topics))
        for r in range(1, per + 1):
            for t in topics:
                yield f"{t} Q0 S{r:08x}-A{r:08x} {r} {per - r + 1}.5 tag\n"
    elif shape == "many-topics":
        for k in range(1, n + 1):
            yield f"{k} Q0 S{k:08x}-A{k:08x} 1 1.5 tag\n"
    elif shape == "long-lines":
        tag = "t" * 96
        for r in range(1, n + 1):
            yield f"{topics[0]} Q0 S{r:08x}-A{r:08x} {r} {n - r + 1}.5 {tag}\n"
    elif shape == "grouped":
        for k in range(1, -(-n // 1000) + 1):
            for r in range(1, 1001):
                yield f"{k} Q0 S{r:08x}-A{r:08x} {r} {1001 - r}.5 tag\n"
    elif shape == "many-tags":
        per = -(-n // len(topics))
        for t in topics:
            for r in range(1, per + 1):
                yield f"{t} Q0 S{r:08x}-A{r:08x} {r} {per - r + 1}.5 t{r:09d}\n"
    else:
        raise SystemExit(f"unknown shape {shape!r}: one of {', '.join(SHAPES)}")


def generate(path: Path, shape: str, megabytes: int, topics: list[str]) -> int:
    """Write the run in 1 MB pieces, whole lines up to ``megabytes`` (10**6 bytes); returns its size."""
    target = megabytes * 10**6
    n = target // 36  # a few more lines than fit (lines are 36-45 bytes): the size cuts the shape
    with path.open("w", encoding="ascii") as fh:
        piece: list[str] = []
        size = 0
        for line in _lines(shape, topics, n):
            if size + len(line) > target:
                break
            piece.append(line)
            size += len(line)
            if len(piece) >= 25_000:
                fh.write("".join(piece))
                piece.clear()
        fh.write("".join(piece))
    return path.stat().st_size


def run_child(run: Path, src: Path | None, with_input: bool = True) -> tuple[float, float, str]:
    """(peak RSS in MB, CPU seconds, the verdict) of one validation in a child process (wait4: its own figures)."""
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = str(src)
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen([sys.executable, "-c", CHILD, str(run), TASK, "input" if with_input else "none"],
                                env=env, stdout=out, stderr=err)
        _, _, usage = os.wait4(proc.pid, 0)
        proc.returncode = 0  # reaped by wait4
        out.seek(0)
        err.seek(0)
        text, problem = out.read().strip(), err.read().strip()
    verdict = text.splitlines()[-1] if text else "failed: " + (problem.splitlines() or ["?"])[-1]
    return usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime, verdict


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100,1000", help="run sizes in MB (default 100,1000)")
    parser.add_argument("--shapes", default=",".join(SHAPES), help=f"default: {','.join(SHAPES)}")
    parser.add_argument("--src", type=Path, action="append", default=[],
                        help="validate with this package source too (e.g. /work/main/src), for before/after figures")
    parser.add_argument("--no-input", action="store_true", help="validate without the topics (the bound's ceiling)")
    parser.add_argument("--tmp", type=Path, default=None, help="where to write the runs (default: a temp dir)")
    args = parser.parse_args(argv)
    topics = _topics()
    sources: list[tuple[str, Path | None]] = [("this checkout", None)] + [(str(s), s) for s in args.src]
    print(f"task {TASK}, {'topics unknown' if args.no_input else f'{len(topics)} topics'}; peak RSS of a child process that validates the run as the host does")
    with tempfile.TemporaryDirectory(dir=args.tmp) as tmp:
        for mb in (int(s) for s in args.sizes.split(",")):
            for shape in args.shapes.split(","):
                run = Path(tmp) / f"{shape}-{mb}.txt"
                t0 = time.perf_counter()
                size = generate(run, shape, mb, topics)
                made = time.perf_counter() - t0
                for name, src in sources:
                    rss, cpu, verdict = run_child(run, src, not args.no_input)
                    print(f"  {mb:5d} MB {shape:12s} ({size / 1e6:,.0f} MB, made in {made:.0f} s) [{name}]: "
                          f"peak RSS {rss:,.0f} MB, CPU {cpu:.1f} s; {verdict}", flush=True)
                run.unlink()


if __name__ == "__main__":
    main()
