"""Benchmark: how cost grows with size (validate, evaluate, conversion, Touché BM25).

Whole-process wall time, CPU time (user+sys) and peak RSS (os.wait4's ru_maxrss of the
child) of

  validate  sharedtask validate RUN --task touche-2021-task1 --json
  evaluate  sharedtask evaluate RUN --task touche-2021-task1 --qrels QRELS --json

on synthetic Touché-layout runs of 1,000 lines per topic (grouped by topic, a tie every
7th document, 50 judgments per topic: `python -m sharedtask.samples.synthetic run`, as
benchmarks/validate.py makes them) at each of --sizes (default 1M 10M 100M lines; the
100M-line run is 4.6 GB, written as ten copies of the 10M-line run under new topic
numbers, see make_run). Runs go to /work/bench-data; runs of 100M lines and more are
deleted afterwards unless --keep (the disk is shared). Before each evaluation the
available memory is compared with the peak RSS extrapolated from the smaller sizes
(a run whose topics are interleaved is held whole for pytrec_eval): a size that cannot fit is
skipped and the measured growth printed instead.

  conversion  the Lucene baseline's conversion to JSONL of this checkout
              (benchmarks/conversion.py's child process with the image's workers: 2 for
              args.me, 1 beside the merging process for ARQMath; outside the sandbox) of the synthetic args.me at each of --argsme-scales and
              of ARQMath Posts.xml collections of --arqmath-answers answers
  bm25        Touché BM25 (baselines/lucene through the sandbox, as
              benchmarks/baselines.py runs it; 2 CPUs, the task's 10 GB memory limit) on
              the synthetic args.me at each of --argsme-scales (1 = 387,740 arguments,
              1 GB; 10 = 10 GB). The 10x corpus is the 1x corpus written ten times, each
              copy with new source ids (the first hex digit XORed with the copy number:
              argument ids stay unique, see replicate_argsme), which is much faster than
              generating it. (The conversion inside this run is in its row as convert_s.)

Every figure is merged into --json (default benchmarks/results/scale.json), which
benchmarks/plot_scale.py turns into docs/scale.svg.

    .venv/bin/python benchmarks/scale.py [--sizes 1M 10M 100M] [--skip evaluate bm25 ...]
        [--argsme-scales 1 10] [--arqmath-answers 100000 1000000] [--keep]
    .venv/bin/python benchmarks/scale.py --sizes 100k 1M --skip bm25 conversion   # quick check
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from validate import measure  # noqa: E402  (the same whole-process measurement as the validator benchmark)

DATA = Path(os.environ.get("BENCH_DATA", "/work/bench-data"))
BIN = Path(sys.executable).parent
TASK = "touche-2021-task1"
DEPTH = 1000
JUDGED = 50
BASE = 10_000_000  # larger runs are shifted copies of the generated 10M-line run
DELETE_FROM = 100_000_000  # runs this large are removed after measuring unless --keep
RESULTS = ROOT / "benchmarks" / "results" / "scale.json"
_UNITS = {"k": 1_000, "M": 1_000_000, "G": 1_000_000_000}
# the first hex digit of an argument id ("id", "previous/nextArgumentInSourceId": "S<8 hex>-A<8
# hex>") or of a "sourceId": no other key of args.me ends in d, and a quote inside a string is
# escaped; the literal prefix lets the regex engine skip ahead (12x faster than matching ids)
_ARGSME_ID = re.compile(rb'(d":"S?)([0-9a-f])')


def parse_size(text: str) -> int:
    """'100k', '1M', '100M' or a plain number of run lines."""
    unit = _UNITS.get(text[-1:], 1)
    number = text[:-1] if unit != 1 else text
    try:
        value = int(float(number) * unit)
    except ValueError:
        raise argparse.ArgumentTypeError(f"size {text!r}: expected a number of lines such as 100k, 1M or 100M")
    if value < DEPTH or value % DEPTH:
        raise argparse.ArgumentTypeError(f"size {text!r}: a multiple of {DEPTH} lines (one topic = {DEPTH} lines)")
    return value


def label(lines: int) -> str:
    for suffix, unit in sorted(_UNITS.items(), key=lambda kv: -kv[1]):
        if lines % unit == 0:
            return f"{lines // unit}{suffix}"
    return str(lines)


def make_run(lines: int) -> tuple[Path, Path]:
    """The synthetic run of ``lines`` lines and its qrels (generated once, then reused).

    Up to 10M lines the generator writes them; a larger multiple of 10M is the 10M-line
    run copied with its topic numbers shifted by 10,000 per copy (awk, ~1M lines per CPU
    second against the generator's ~0.25M), so copies repeat each other's documents and
    scores under new topics: the same per-topic work as generated topics."""
    run = DATA / f"scale-{label(lines)}.run.txt"
    qrels = run.with_name(run.name + ".qrels")
    if run.exists() and qrels.exists():
        return run, qrels
    DATA.mkdir(parents=True, exist_ok=True)
    if lines > BASE and lines % BASE == 0:
        base_run, base_qrels = make_run(BASE)
        print(f"writing {run} as {lines // BASE} shifted copies of {base_run} ...", flush=True)
        for source, target in ((base_run, run), (base_qrels, qrels)):
            tmp = target.with_name(target.name + ".tmp")
            with tmp.open("wb") as out:
                for k in range(lines // BASE):
                    subprocess.run(["awk", "-v", f"off={k * BASE // DEPTH}", "{ $1 = $1 + off; print }",
                                    str(source)], stdout=out, check=True)
            tmp.rename(target)
        return run, qrels
    print(f"generating {run} ...", flush=True)
    subprocess.run([sys.executable, "-m", "sharedtask.samples.synthetic", "run", str(run), "--topics",
                    str(lines // DEPTH), "--depth", str(DEPTH), "--judged", str(JUDGED)], check=True)
    return run, qrels


def available_mb() -> float:
    """MemAvailable of /proc/meminfo in MB (what the kernel can give without swapping)."""
    with open("/proc/meminfo") as fh:
        for line in fh:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no MemAvailable in /proc/meminfo")


def growth(rows: list[dict[str, Any]]) -> float | None:
    """Peak RSS MB per million lines between the two largest measured sizes."""
    done = sorted((r for r in rows if r.get("peak_mb") is not None), key=lambda r: r["lines"])
    if len(done) < 2:
        return None
    a, b = done[-2], done[-1]
    return (b["peak_mb"] - a["peak_mb"]) / ((b["lines"] - a["lines"]) / 1e6)


def process(cmd: list[str], env: dict[str, str]) -> tuple[dict[str, Any], Any]:
    """Wall, CPU, peak RSS, exit code and load average of one process, and its --json output."""
    with tempfile.TemporaryFile() as out:
        wall, peak, code, cpu = measure(cmd, env, stdout=out)
        out.seek(0)
        report = json.loads(out.read() or b"null")
    with open("/proc/loadavg") as fh:
        load = float(fh.read().split()[0])
    return {"wall": round(wall, 2), "cpu": round(cpu, 2), "peak_mb": round(peak, 1), "exit": code, "load": load}, report


def catalogue(into: Path) -> dict[str, str]:
    """The environment of a task catalogue whose TASK reads runs of any size.

    The Touché spec bounds what the host reads of a run (output.max_run_bytes, 1 GiB): a
    larger run is invalid (RUN-TOO-LARGE) after its first 1 GiB, which would time 22M of
    the 100M lines. The copy of the catalogue (an organizer's own, ``SHAREDTASK_TASKS``)
    raises the bound to 64 GiB, so that every line is read and checked."""
    from sharedtask.spec import tasks_dir

    shutil.copytree(tasks_dir(), into)
    with (into / f"{TASK}.yml").open("a", encoding="utf-8") as fh:
        fh.write("\n# benchmarks/scale.py: read every line of the largest runs\noutput: {max_run_bytes: 64g}\n")
    return dict(os.environ, SHAREDTASK_TASKS=str(into))


def run_sizes(sizes: list[int], skip: set[str], keep: bool, results: Results) -> None:
    with tempfile.TemporaryDirectory(prefix="scale-tasks-") as tmp:
        env = catalogue(Path(tmp) / "tasks")
        for lines in sizes:
            size_once(lines, skip, keep, results, env)
    summary(results)


def size_once(lines: int, skip: set[str], keep: bool, results: Results, env: dict[str, str]) -> None:
    """Validate and evaluate the run of ``lines`` lines (made when missing); large runs are removed after."""
    run, qrels = make_run(lines)
    size_mb = run.stat().st_size / 2**20
    print(f"\n== {lines:,} lines, {size_mb:,.0f} MB ({run})", flush=True)
    row = {"lines": lines, "mb": round(size_mb, 1)}
    if "validate" not in skip:
        got, report = process([str(BIN / "sharedtask"), "validate", str(run), "--task", TASK, "--json"], env)
        checked = report["stats"]["data_lines"]
        if checked != lines:  # a figure for fewer lines than claimed would flatter the validator
            raise SystemExit(f"validate read {checked:,} lines of {run}, expected {lines:,}")
        got["findings"] = report["counts"]
        results.add("validate", {**row, **got})
        print(f"validate  {got['wall']:8.2f} s wall {got['cpu']:8.2f} s CPU {got['peak_mb']:8.0f} MB peak"
              f"  exit {got['exit']}  ({lines / max(got['cpu'], 1e-9) / 1e6:.2f} M lines per CPU s)", flush=True)
    if "evaluate" not in skip:
        evaluate_one(run, qrels, row, results, env)
    if lines >= DELETE_FROM and not keep:
        run.unlink()
        qrels.unlink()
        print(f"deleted {run} and its qrels (--keep keeps them)")


def summary(results: Results) -> None:
    rows = sorted(results.rows("validate"), key=lambda r: r["lines"])
    if len(rows) >= 2:
        peaks = ", ".join(f"{label(r['lines'])}: {r['peak_mb']:.0f} MB" for r in rows)
        print(f"\nvalidator peak RSS by size: {peaks}: x{rows[-1]['peak_mb'] / rows[0]['peak_mb']:.2f} for "
              f"x{rows[-1]['lines'] / rows[0]['lines']:,.0f} the lines (constant memory: x1)")
    g = growth(results.rows("evaluate"))
    if g is not None:
        print(f"evaluate peak RSS grows by {g:,.0f} MB per million lines")


def evaluate_one(run: Path, qrels: Path, row: dict[str, Any], results: Results, env: dict[str, str]) -> None:
    lines = row["lines"]
    smaller = [r for r in results.rows("evaluate") if r["lines"] < lines and r.get("peak_mb")]
    g = growth(smaller)
    if g is not None:
        base = max(smaller, key=lambda r: r["lines"])
        need = base["peak_mb"] + g * (lines - base["lines"]) / 1e6
        free = available_mb()
        if need > 0.85 * free:
            print(f"evaluate  skipped: needs about {need:,.0f} MB (measured growth {g:,.0f} MB per M lines), "
                  f"{free:,.0f} MB available", flush=True)
            results.add("evaluate", {**row, "skipped": f"needs ~{need:,.0f} MB, {free:,.0f} MB available"})
            return
        print(f"evaluate  expected peak about {need:,.0f} MB ({free:,.0f} MB available)", flush=True)
    got, _ = process([str(BIN / "sharedtask"), "evaluate", str(run), "--task", TASK, "--qrels", str(qrels), "--json"], env)
    results.add("evaluate", {**row, **got})
    print(f"evaluate  {got['wall']:8.2f} s wall {got['cpu']:8.2f} s CPU {got['peak_mb']:8.0f} MB peak"
          f"  exit {got['exit']}", flush=True)


def replicate_argsme(source: Path, target: Path, copies: int) -> None:
    """``copies`` times the args.me corpus of ``source`` into ``target`` (each file one JSON array).

    Copy k keeps every argument's A-part and XORs the first hex digit of its source id (in
    its id, its neighbours' ids and ``sourceId``) with k: ids within a copy stay distinct
    because the A-parts are, and copies differ in the S-part. Topics and qrels are those of
    the source (the qrels judge the first copy's arguments)."""
    if copies > 16:
        raise ValueError("at most 16 copies (one hex digit)")
    (target / "input").mkdir(parents=True, exist_ok=True)
    for path in sorted((source / "input").glob("*.json")):
        text = path.read_bytes()
        head, tail = b'{"arguments":[', b"]}"
        if not (text.startswith(head) and text.rstrip().endswith(tail)):
            raise ValueError(f"{path}: not a one-array args.me file")
        body = text[len(head):text.rstrip().rfind(tail)]
        tmp = target / "input" / (path.name + ".tmp")
        with tmp.open("wb") as out:
            out.write(head)
            for k in range(copies):
                if k:
                    out.write(b",")
                out.write(body if k == 0 else _ARGSME_ID.sub(lambda m: _flip(m, k), body))
            out.write(tail)
        tmp.rename(target / "input" / path.name)
    shutil.copy(source / "input" / "topics.xml", target / "input" / "topics.xml")
    if (source / "truth").is_dir():
        shutil.copytree(source / "truth", target / "truth", dirs_exist_ok=True)


def _flip(m: re.Match[bytes], k: int) -> bytes:
    return m[1] + b"%x" % (int(m[2], 16) ^ k)


def argsme_corpus(scale: int) -> Path:
    """``folder/input`` of the synthetic args.me at an integer scale (1x generated, more replicated)."""
    one = DATA / "baselines-argsme"
    if not (one / "input" / "topics.xml").is_file():
        subprocess.run([sys.executable, "-m", "sharedtask.samples.synthetic", "argsme", str(one)], check=True)
    if scale == 1:
        return one / "input"
    folder = DATA / f"scale-argsme-{scale}x"
    if not (folder / "input" / "topics.xml").is_file():
        start = time.perf_counter()
        replicate_argsme(one, folder, scale)
        size = sum(p.stat().st_size for p in (folder / "input").iterdir()) / 1e9
        print(f"replicated args.me {scale}x ({size:.1f} GB) in {time.perf_counter() - start:.0f} s", flush=True)
    return folder / "input"


def run_bm25(scales: list[int], keep: bool, results: Results) -> None:
    from baselines import bench, current_image

    image = current_image()
    for scale in scales:
        data = argsme_corpus(scale)
        mb = sum(p.stat().st_size for p in data.iterdir()) / 2**20
        # the JSONL copy and the index are written inside the container: 10x needs more than 10 GB
        figures = bench(f"Touché BM25, args.me {scale}x", image, "touche-2020-task1", data,
                        "python -m lucene_baseline --model bm25", 2.0, None, disk=f"{max(10, 3 * scale)}g")
        if figures is None:
            results.add("bm25", {"scale": scale, "mb": round(mb, 1), "failed": True}, key="scale")
            continue
        results.add("bm25", {"scale": scale, "mb": round(mb, 1), **figures}, key="scale")
        if scale > 1 and not keep:
            shutil.rmtree(data.parent)
            print(f"deleted {data.parent} (--keep keeps it)")


# The args.me conversion of the Lucene baseline, as benchmarks/conversion.py runs ARQMath's.
ARGSME_CONVERT = r"""
import sys
from pathlib import Path
from lucene_baseline.touche import convert_corpus
from lucene_baseline.jsonl import ShardedJsonl
data, out, workers = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])
with ShardedJsonl(out / "docs", 2) as sink:
    print(convert_corpus(data, sink, workers=workers))
"""


def run_conversion(answers: list[int], scales: list[int], keep: bool, results: Results) -> None:
    from conversion import CONVERT

    for scale in scales:
        data = argsme_corpus(scale)
        # two processes, as the image gives the Touché conversion (workers = threads = CPUs)
        convert_once("args.me", data, sum(p.stat().st_size for p in data.iterdir()) / 2**20, ARGSME_CONVERT,
                     results, workers=2)
        if scale > 1 and not keep:
            shutil.rmtree(data.parent)
    for n in answers:
        folder = DATA / (f"baselines-arqmath-{n // 1_000_000}M" if n % 1_000_000 == 0 else f"scale-arqmath-{label(n)}")
        posts = folder / "input" / "Posts.xml"
        if not posts.is_file():
            subprocess.run([sys.executable, "-m", "sharedtask.samples.synthetic", "arqmath", str(folder),
                            "--answers", str(n)], check=True)
        # one worker beside the merging process, as in the image (workers = threads - 1)
        convert_once("ARQMath", posts, posts.stat().st_size / 2**20, CONVERT, results, workers=1)


def convert_once(corpus: str, source: Path, mb: float, script: str, results: Results, workers: int) -> None:
    """One conversion of ``source`` (a Posts.xml or an args.me folder), its figures merged."""
    from conversion import convert

    with tempfile.TemporaryDirectory(prefix="scale-conversion-", dir=DATA) as tmp:
        wall, cpu, done = convert(ROOT, source, Path(tmp), workers, script=script)
    with open("/proc/loadavg") as fh:
        load = float(fh.read().split()[0])
    results.add("conversion", {"corpus": corpus, "mb": round(mb, 1), "documents": done,
                               "wall": round(wall, 2), "cpu": round(cpu, 2), "load": load},
                key=("corpus", "documents"))
    print(f"{corpus} conversion, {done:,} documents ({mb:,.0f} MB): {wall:.1f} s wall, {cpu:.1f} s CPU "
          f"({mb / wall:.0f} MB/s), load {load:.1f}", flush=True)


class Results:
    """The figures of --json, rewritten after every measurement (a long run may be cut off)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.data: dict[str, Any] = json.loads(path.read_text()) if path.is_file() else {}

    def rows(self, kind: str) -> list[dict[str, Any]]:
        return self.data.get(kind, [])

    def add(self, kind: str, row: dict[str, Any], key: str | tuple[str, ...] = "lines") -> None:
        """Replace the row of the same size (``key``) in ``kind``, keep the others, save.

        The file is read again first: another scale.py may have added figures meanwhile."""
        if self.path.is_file():
            self.data = json.loads(self.path.read_text())
        keys = (key,) if isinstance(key, str) else key
        same = tuple(row.get(k) for k in keys)
        rows = [r for r in self.rows(kind) if tuple(r.get(k) for k in keys) != same]
        self.data[kind] = sorted([*rows, row], key=lambda r: tuple(str(r.get(k)) for k in keys[:-1]) +
                                 (r.get(keys[-1]) or 0,))
        self.data["cpus"] = os.cpu_count()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.data, indent=1) + "\n")
        tmp.replace(self.path)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", nargs="+", type=parse_size, default=[10**6, 10**7, 10**8], metavar="SIZE",
                    help="run lines: 100k, 1M, 10M, 100M, ... (default 1M 10M 100M)")
    ap.add_argument("--argsme-scales", nargs="+", type=int, default=[1, 10], metavar="N")
    ap.add_argument("--arqmath-answers", nargs="+", type=int, default=[100_000, 1_000_000], metavar="N")
    ap.add_argument("--skip", nargs="*", default=[], choices=["validate", "evaluate", "conversion", "bm25"])
    ap.add_argument("--keep", action="store_true", help="keep the 100M-line runs and the replicated args.me")
    ap.add_argument("--json", type=Path, default=RESULTS, help="results file to merge into (default %(default)s)")
    args = ap.parse_args()
    results = Results(args.json)
    skip = set(args.skip)
    if not {"validate", "evaluate"} <= skip:
        run_sizes(sorted(args.sizes), skip, args.keep, results)
    if "conversion" not in skip:
        run_conversion(args.arqmath_answers, args.argsme_scales, args.keep, results)
    if "bm25" not in skip:
        run_bm25(args.argsme_scales, args.keep, results)
    print(f"\nfigures merged into {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
