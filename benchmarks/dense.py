"""Benchmark the dense baseline against BM25 on the full-size synthetic args.me.

    python benchmarks/dense.py [--argsme DIR] [--cpus 2] [--memory 10g] [--sample 1000] [--full]

Builds the images of ``tira.yml``'s ``lucene-bm25`` and ``dense-wordllama`` from this
checkout when out of date, generates the corpus (387,740 arguments, 50 topics) with
``python -m sharedtask.samples.synthetic argsme`` when missing, then runs in the sandbox, one
after the other on the same data: Lucene BM25, dense (WordLlama, exact cosine top-1000)
and hybrid (BM25 + dense, RRF). Prints, per run: documents embedded per second, the
exact top-k scoring time, whole-run wall time and peak memory (cgroup), and the ratios
dense / BM25 and hybrid / BM25; then whether the dense run's bytes are the same twice.

Without ``--full`` only the encoder's throughput is measured, on the first ``--sample``
arguments of debatepedia.json (in the image, no network, ``--cpus`` cores), with the
whole-corpus embedding time it implies, and BM25's whole run for comparison.
"""

from __future__ import annotations

import argparse
import hashlib
import re
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from baselines import BENCH, current_image, ensure_corpus  # noqa: E402

from sharedtask.sandbox.api import run as sandbox_run  # noqa: E402

#: the dense baseline's log line with its embedding throughput and top-k time
EMBED_LOG = re.compile(r"embedded (\d+) documents in ([\d.]+) s \((\d+) documents/s\); exact cosine top-(\d+) "
                    r"for (\d+) queries in ([\d.]+) s")


def images() -> dict[str, str]:
    return {"bm25": current_image("lucene-bm25"), "dense": current_image("dense-wordllama")}


def bench(label: str, image: str, command: str, data: Path, cpus: float, memory: str | None) -> dict:
    with tempfile.TemporaryDirectory(prefix="bench-dense-") as tmp:
        out = Path(tmp) / "output"
        outcome = sandbox_run("touche-2020-task1", image, command=command, input_dir=data, output_dir=out,
                              record_dir=Path(tmp) / "record", cpus=cpus, memory=memory, timeout="2h",
                              max_output="4g", validate=False)
        result = outcome.result
        log = Path(result.stderr_path).read_text(errors="replace")
        if not result.ok:
            print(f"{label}: FAILED {result.status} {result.message}\n" + "\n".join(result.log_tail))
            return {}
        row = {"wall": result.wall_seconds, "peak": (result.peak_memory or 0) / 2**20,
               "sha": hashlib.sha256((out / "run.txt").read_bytes()).hexdigest()}
        m = EMBED_LOG.search(log)
        if m:
            row.update(docs=int(m.group(1)), embed=float(m.group(2)), rate=int(m.group(3)), score=float(m.group(6)))
        print(f"{label:34} whole run {row['wall']:7.1f} s   peak {row['peak']:7.0f} MB"
              + (f"   embedded {row['docs']:,} docs in {row['embed']:.1f} s ({row['rate']:,}/s), "
                 f"exact top-1000 scoring {row['score']:.1f} s" if m else ""), flush=True)
        return row


_SNIPPET = """
import itertools, sys, time
import numpy as np
from sharedtask.formats import read_argsme
from dense_baseline import encode
from lucene_baseline.touche import argument_text
n = int(sys.argv[1])
texts = [argument_text(a) for a in itertools.islice(read_argsme('/data/debatepedia.json'), n)]
model = encode.load()
t = time.monotonic(); first = encode.embed(model, texts); seconds = time.monotonic() - t
again = encode.embed(model, texts)
print(len(texts), round(seconds, 2), sum(map(len, texts)) // len(texts), bool((first == again).all()))
"""


def embed_sample(image: str, data: Path, n: int, cpus: float) -> None:
    import subprocess

    out = subprocess.run(["docker", "run", "--rm", "--network", "none", "--cpus", str(cpus), "-v", f"{data}:/data:ro",
                          image, "python", "-c", _SNIPPET, str(n)], capture_output=True, text=True, check=True)
    docs, seconds, chars, same = out.stdout.split()
    rate = int(docs) / float(seconds)
    print(f"WordLlama embedding: {docs} arguments (mean {chars} characters) in {seconds} s = {rate:,.0f} "
          f"documents/s on {cpus:g} CPUs; the full corpus (387,740) would take {387_740 / rate / 60:,.0f} min; "
          f"same vectors twice: {same}")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--argsme", type=Path, default=BENCH / "baselines-argsme")
    p.add_argument("--cpus", type=float, default=2.0)
    p.add_argument("--memory", default=None, help="memory limit (default: the task's sandbox limit)")
    p.add_argument("--sample", type=int, default=1000, help="arguments embedded for the throughput figure")
    p.add_argument("--full", action="store_true", help="also the whole dense and hybrid runs, and the dense run again")
    args = p.parse_args()
    image = images()
    data = ensure_corpus("argsme", args.argsme, 0)
    embed_sample(image["dense"], data, args.sample, args.cpus)
    if not args.full:
        bench("Lucene BM25", image["bm25"], "python -m lucene_baseline --model bm25", data, args.cpus, args.memory)
        return 0
    bm25 = bench("Lucene BM25", image["bm25"], "python -m lucene_baseline --model bm25", data, args.cpus, args.memory)
    dense = bench("dense (WordLlama, exact)", image["dense"], "python -m dense_baseline --mode dense", data,
                  args.cpus, args.memory)
    hybrid = bench("hybrid (BM25 + dense, RRF)", image["dense"], "python -m dense_baseline --mode hybrid", data,
                   args.cpus, args.memory)
    again = bench("dense again (determinism)", image["dense"], "python -m dense_baseline --mode dense", data,
                  args.cpus, args.memory)
    if bm25 and dense and hybrid:
        print(f"ratios to BM25: dense wall x{dense['wall'] / bm25['wall']:.2f}, peak x{dense['peak'] / bm25['peak']:.2f}; "
              f"hybrid wall x{hybrid['wall'] / bm25['wall']:.2f}, peak x{hybrid['peak'] / bm25['peak']:.2f}")
    if dense and again:
        print("dense run bytes identical twice:", dense["sha"] == again["sha"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
