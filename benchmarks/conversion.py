"""ARQMath Posts.xml -> Anserini JSONL: the Lucene baseline's conversion, before and after,
beside Anserini's own indexing of the same documents, in one run.

    .venv/bin/python benchmarks/conversion.py [--before REF] [--posts PATH] [--answers 1000000]
        [--cpus 2] [--image sharedtask/baseline-lucene:latest] [--skip-anserini] [--repeat N]

* before / after: ``lucene_baseline.arqmath.convert_posts`` of commit REF and of this
  checkout (each in its own process, ``workers = cpus - 1`` as in the image, two shards;
  for the range conversion that is ``cpus`` processes on byte ranges, this one merging),
  on the synthetic 1M-answer Posts.xml (``python -m sharedtask.samples.synthetic arqmath``,
  generated when missing). Wall and CPU seconds (the process and its workers, os.wait4),
  MB/s, and whether the JSONL of both is byte-identical (sha256 of every shard).
* anchor: Anserini's own indexing time of the same JSONL (IndexCollection in the
  existing baseline image, sandboxed like a run: ``--cpus``, no network; the time from
  Anserini's log timestamps, as benchmarks/baselines.py reads it). Nothing is rebuilt.

Prints conversion / indexing for both (target: at most 25 %).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(os.environ.get("BENCH_DATA", "/work/bench-data"))

CONVERT = r"""
import sys
from pathlib import Path
from lucene_baseline.arqmath import convert_posts
from lucene_baseline.jsonl import ShardedJsonl
posts, out, workers = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])
with ShardedJsonl(out / "docs", 2) as sink:
    print(convert_posts(posts, sink, out, workers=workers))
"""

INDEX = r"""
import logging, sys
from pathlib import Path
logging.basicConfig(level=logging.INFO, stream=sys.stderr)
from lucene_baseline import anserini
anserini.index(Path("/data/docs"), Path("/tmp/index"), int(sys.argv[1]))
"""


def tree(ref: str, into: Path) -> Path:
    """``src/`` and ``baselines/lucene`` of commit ``ref`` under ``into``."""
    into.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", ref, "src", "tasks", "baselines/lucene"],
                             check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def convert(root: Path, posts: Path, out: Path, workers: int, script: str = CONVERT) -> tuple[float, float, int]:
    """(wall, CPU incl. workers, documents) of one conversion (``script``) in a child process."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = f"{root / 'baselines' / 'lucene'}{os.pathsep}{root / 'src'}"
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", script, str(posts), str(out), str(workers)],
                            stdout=subprocess.PIPE, env=env)
    output = proc.stdout.read() if proc.stdout else b""
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"conversion with {root} failed")
    return wall, usage.ru_utime + usage.ru_stime, int(output.split()[-1])


def digest(folder: Path) -> str:
    h = hashlib.sha256()
    for shard in sorted(folder.iterdir()):
        h.update(shard.name.encode())
        with shard.open("rb") as fh:
            while chunk := fh.read(1 << 24):
                h.update(chunk)
    return h.hexdigest()


def anserini_seconds(jsonl: Path, image: str, cpus: float) -> float | None:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from baselines import anserini_indexing_seconds  # the same log reading as the whole-run benchmark

    proc = subprocess.run(["docker", "run", "--rm", "--network", "none", f"--cpus={cpus:g}",
                           "-v", f"{jsonl}:/data:ro", "--entrypoint", "python", image, "-c", INDEX,
                           str(max(1, int(cpus)))], capture_output=True, text=True)
    if proc.returncode != 0:
        print(proc.stderr[-2000:])
        return None
    return anserini_indexing_seconds(proc.stdout + proc.stderr)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--before", default="710a2ed", metavar="REF",
                    help="commit of the code before (default 710a2ed: one expat pass, bodies in a worker)")
    ap.add_argument("--posts", type=Path, help="Posts.xml (default: the synthetic 1M-answer collection)")
    ap.add_argument("--answers", type=int, default=1_000_000)
    ap.add_argument("--cpus", type=float, default=2.0)
    ap.add_argument("--image", default="sharedtask/baseline-lucene:latest", help="image whose Anserini indexes")
    ap.add_argument("--skip-anserini", action="store_true")
    ap.add_argument("--repeat", type=int, default=1, metavar="N",
                    help="convert before and after N times, alternating; medians are compared (default 1)")
    args = ap.parse_args()
    posts = args.posts
    if posts is None:
        folder = DATA / f"baselines-arqmath-{args.answers // 1_000_000}M"
        posts = folder / "input" / "Posts.xml"
        if not posts.is_file():
            subprocess.run([sys.executable, "-m", "sharedtask.samples.synthetic", "arqmath", str(folder),
                            "--answers", str(args.answers)], check=True)
    size = posts.stat().st_size
    workers = max(0, int(args.cpus) - 1)
    print(f"{posts}: {size / 1e6:,.0f} MB; workers {workers} (cpus {args.cpus:g} - 1, as in the image)", flush=True)
    with tempfile.TemporaryDirectory(prefix="bench-conversion-", dir=DATA) as name:
        tmp = Path(name)
        roots = (("before", tree(args.before, tmp / "before-tree")), ("after", ROOT))
        runs: dict[str, list[tuple[float, float]]] = {"before": [], "after": []}
        digests: dict[str, str] = {}
        for rep in range(args.repeat):  # alternating, so that a change of load hits both alike
            for label, root in roots:
                out = tmp / label
                out.mkdir()
                wall, cpu, answers = convert(root, posts, out, workers)
                runs[label].append((wall, cpu))
                digests.setdefault(label, digest(out / "docs"))
                print(f"{label:6s} {wall:7.1f} s wall {cpu:7.1f} s CPU  {size / wall / 1e6:5.0f} MB/s  "
                      f"{answers:,} answers  load {os.getloadavg()[0]:.1f}", flush=True)
                if label == "before" or rep < args.repeat - 1:
                    shutil.rmtree(out)
        results = {label: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v), digests[label])
                   for label, v in runs.items()}
        if args.repeat > 1:
            for label, (wall, cpu, _) in results.items():
                print(f"{label:6s} median of {args.repeat}: {wall:.1f} s wall, {cpu:.1f} s CPU")
        same = results["before"][2] == results["after"][2]
        print(f"JSONL byte-identical: {'yes' if same else 'NO'} (sha256 {results['after'][2][:16]}...)")
        print(f"after / before: wall {results['after'][0] / results['before'][0]:.2f}x, "
              f"CPU {results['after'][1] / results['before'][1]:.2f}x")
        if not args.skip_anserini:
            own = anserini_seconds(tmp / "after", args.image, args.cpus)
            if own is not None:
                print(f"Anserini's own indexing of the same JSONL: {own:.1f} s ({args.cpus:g} CPUs)")
                for label in ("before", "after"):
                    print(f"  conversion {label} = {100 * results[label][0] / own:.0f} % of it (target <= 25 %)")
    with open("/proc/loadavg") as fh:
        print(f"load average: {fh.read().split()[0]} on {os.cpu_count()} cores")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
