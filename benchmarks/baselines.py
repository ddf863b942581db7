"""Benchmark the Lucene baseline image on full-size synthetic corpora.

    python benchmarks/baselines.py [--argsme DIR] [--arqmath DIR] [--cpus 2] [--memory 4g]
        [--image IMAGE ...]   # e.g. an image built from an older commit, to compare in one run

Builds ``sharedtask/baseline-lucene:latest`` from this checkout when it is out of date
(the image of ``tira.yml``'s ``lucene-bm25``), then runs it (and every other ``--image``) in the
sandbox (no network, read-only input, ``--cpus`` cores) on

* Touché: the full-size synthetic args.me corpus (387,740 arguments, 50 topics x 1,000),
* ARQMath Task 1: a synthetic collection with >= 1M answers,

generating the corpora with ``python -m sharedtask.samples.synthetic`` when the folders do
not exist. Prints, per run: conversion, index and search time (from the baseline's
own log), Anserini's own indexing time (from Anserini's log timestamps), the share
of time outside it (conversion + JVM start/stop) relative to it, peak memory (the
sandbox's cgroup probe) and whole-run wall time. Targets: Touché BM25
run < 300 s on 2 cores, conversion overhead < 25 % of Anserini's indexing time.
"""

from __future__ import annotations

import argparse
import datetime as dt
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from sharedtask.sandbox.api import run as sandbox_run

BENCH = Path("/work/bench-data")

_OURS = {
    "convert": re.compile(r"converted (\d+) documents in ([\d.]+) s"),
    "index": re.compile(r"indexed in ([\d.]+) s"),
    "search": re.compile(r"searched (\d+) topics in ([\d.]+) s"),
    "total": re.compile(r"wrote (\d+) lines .* in ([\d.]+) s"),
}
_STAMP = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) INFO .*?AbstractIndexer.*? - (.*)$")


def ensure_corpus(kind: str, folder: Path, answers: int, scale: float | None = None) -> Path:
    """``folder/input`` of a synthetic corpus, generated when missing (args.me: ``scale`` of its size)."""
    if not (folder / "input" / "topics.xml").is_file():
        cmd = [sys.executable, "-m", "sharedtask.samples.synthetic", kind, str(folder)]
        if kind == "arqmath":
            cmd += ["--answers", str(answers)]
        if scale is not None:
            cmd += ["--scale", str(scale)]
        print("generating:", " ".join(cmd), flush=True)
        subprocess.run(cmd, check=True)
    return folder / "input"


def anserini_indexing_seconds(log: str) -> float | None:
    """Anserini's own indexing time: its first indexer log line to "Total ... indexed"."""
    first = last = None
    for line in log.splitlines():
        m = _STAMP.match(line)
        if not m:
            continue
        when = dt.datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S,%f")
        first = first or when
        if m.group(2).startswith("Total ") and "indexed" in m.group(2):
            last = when
    return (last - first).total_seconds() if first and last else None


def current_image(software: str = "lucene-bm25") -> str:
    """The image of one software of tira.yml from this checkout, rebuilt (with its parents)
    when its context changed; the Lucene baseline by default."""
    from sharedtask.cli.baseline import build_software
    from sharedtask.pipeline import with_parents
    from sharedtask.manifest import load_manifest

    manifest = load_manifest()
    target = manifest.software(software)
    for sw in with_parents([target], manifest):
        build_software(sw)
    return target.image


def bench(label: str, image: str, task: str, input_dir: Path, command: str, cpus: float,
          memory: str | None, disk: str | None = None) -> dict[str, float] | None:
    """Run and print one baseline; returns its figures (seconds, MB), None when it failed."""
    label = f"{label} [{image}]"
    with tempfile.TemporaryDirectory(prefix="bench-baseline-") as tmp:
        out = Path(tmp) / "output"
        outcome = sandbox_run(task, image, command=command, input_dir=input_dir, output_dir=out,
                              record_dir=Path(tmp) / "record", cpus=cpus, memory=memory, disk=disk,
                              timeout="2h", max_output="4g", validate=False)
        result = outcome.result
        log = Path(result.stderr_path).read_text(errors="replace") + Path(result.stdout_path).read_text(errors="replace")
        if not result.ok:
            print(f"{label}: FAILED {result.status} {result.message}\n" + "\n".join(result.log_tail))
            return None
        found = {k: rx.search(log) for k, rx in _OURS.items()}
        docs, convert = int(found["convert"].group(1)), float(found["convert"].group(2))
        index = float(found["index"].group(1))
        topics, search = int(found["search"].group(1)), float(found["search"].group(2))
        lines = int(found["total"].group(1))
        own = anserini_indexing_seconds(log)
        peak = (result.peak_memory or 0) / 2**20
        print(f"\n== {label}  ({docs:,} docs, {topics} topics -> {lines:,} run lines; "
              f"{cpus:g} CPUs, {memory or 'task default'} memory limit)")
        print(f"  conversion to JSONL      {convert:8.1f} s   ({docs / max(convert, 1e-9):,.0f} docs/s)")
        print(f"  index step (JVM incl.)   {index:8.1f} s")
        if own is not None:
            outside = convert + (index - own)
            print(f"  Anserini's own indexing  {own:8.1f} s")
            print(f"  outside Anserini's indexing (conversion + JVM start/stop): {outside:.1f} s "
                  f"= {100 * outside / own:.1f} % of Anserini's indexing time "
                  f"(conversion alone {100 * convert / own:.1f} %; target < 25 %)")
        print(f"  retrieval ({topics} x 1000) {search:6.1f} s  (JVM start included)")
        print(f"  peak memory              {peak:8.0f} MB ({result.peak_memory_source})")
        print(f"  whole run (container)    {result.wall_seconds:8.1f} s", flush=True)
        return {"documents": docs, "convert_s": convert, "index_s": index, "anserini_index_s": own,
                "search_s": search, "topics": topics, "run_lines": lines, "peak_mb": round(peak, 1),
                "wall": round(result.wall_seconds, 2)}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--argsme", type=Path, default=BENCH / "baselines-argsme")
    p.add_argument("--arqmath", type=Path, default=BENCH / "baselines-arqmath-1M")
    p.add_argument("--answers", type=int, default=1_000_000)
    p.add_argument("--cpus", type=float, default=2.0)
    p.add_argument("--memory", default=None, help="memory limit (default: the task's sandbox limit)")
    p.add_argument("--skip-touche", action="store_true")
    p.add_argument("--skip-arqmath", action="store_true")
    p.add_argument("--image", action="append", default=[],
                   help="also benchmark this image (same command), e.g. one built from an older commit")
    args = p.parse_args()
    images = [current_image(), *args.image]
    if not args.skip_touche:
        data = ensure_corpus("argsme", args.argsme, 0)
        for image in images:
            bench("Touché BM25, full args.me", image, "touche-2020-task1", data,
                  "python -m lucene_baseline --model bm25", args.cpus, args.memory)
    if not args.skip_arqmath:
        data = ensure_corpus("arqmath", args.arqmath, args.answers)
        for image in images:
            bench(f"ARQMath Task 1 BM25, {args.answers:,} answers", image, "arqmath-3-task1", data,
                  "python -m lucene_baseline --model bm25", args.cpus, args.memory)
    return 0


if __name__ == "__main__":
    sys.exit(main())
