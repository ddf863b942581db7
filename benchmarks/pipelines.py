"""Benchmark a pipeline: dense re-ranking of BM25's top 100 against BM25 and the full dense run.

    python benchmarks/pipelines.py [--argsme DIR] [--cpus 2] [--full]

On the full-size synthetic args.me (387,740 arguments, 50 topics; generated with
``python -m sharedtask.samples.synthetic argsme`` when missing), one after the other in the
sandbox: Lucene BM25 (the first stage); the stage made from its run on the host
(``sharedtask.rerank.prepare_stage``: its top 100 per topic with their text, one pass over
the corpus); the dense re-ranker on that stage (``dense_baseline --mode rerank``), then the
BM25F re-ranker (``--mode bm25f``). Prints
each whole-run time and the ratios to BM25 of the re-ranker alone and of the pipeline
(stage + re-ranker, the cost on top of a first stage that is run anyway). ``--full`` also
runs the full dense baseline (about eight BM25 runs). Then nDCG@5 on the Touché 2021 sample
of BM25, the re-ranker and the full dense run (their reference runs, which ``reproduce
--all`` checks byte for byte).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from baselines import BENCH, current_image, ensure_corpus  # noqa: E402

from sharedtask.sandbox.api import run as sandbox_run  # noqa: E402

TASK = "touche-2020-task1"


def bench(label: str, image: str, command: str, data: Path, out: Path, cpus: float,
          input_run: Path | None = None) -> float | None:
    outcome = sandbox_run(TASK, image, command=command, input_dir=data, output_dir=out / "output",
                          record_dir=out, cpus=cpus, timeout="3h", max_output="4g", validate=False,
                          input_run=input_run)
    if not outcome.result.ok:
        print(f"{label}: FAILED {outcome.result.status} {outcome.result.message}\n" + "\n".join(outcome.result.log_tail))
        return None
    print(f"{label:38} whole run {outcome.result.wall_seconds:7.1f} s   "
          f"peak {(outcome.result.peak_memory or 0) / 2**20:6.0f} MB", flush=True)
    return outcome.result.wall_seconds


def sample_scores() -> None:
    from sharedtask.evaluate import evaluate
    from sharedtask.resources import resource
    from sharedtask.spec import load_task

    task = load_task("touche-2021-task1")
    refs = resource("baselines") / "reference-runs" / task.id
    for name in ("lucene-bm25", "bm25f-rerank", "dense-rerank", "dense-wordllama"):
        result = evaluate(refs / f"{name}.txt", task, truth_dir=task.sample_dir / "truth",
                          input_dir=task.sample_dir / "input")
        print(f"Touché 2021 sample, nDCG@5 (relevance, official): {name:16} {result.scores['ndcg5_official']:.4f}")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--argsme", type=Path, default=BENCH / "baselines-argsme")
    p.add_argument("--cpus", type=float, default=2.0)
    p.add_argument("--full", action="store_true", help="also the full dense run (slow)")
    p.add_argument("--dense-image", help="use this dense image as it is (default: tira.yml's, rebuilt when out of date)")
    args = p.parse_args()
    from sharedtask.rerank import prepare_stage
    from sharedtask.spec import load_task

    data = ensure_corpus("argsme", args.argsme, 0)
    bm25_image = current_image("lucene-bm25")
    dense_image = args.dense_image or current_image("dense-rerank")
    with tempfile.TemporaryDirectory(prefix="bench-pipelines-") as tmp:
        work = Path(tmp)
        bm25 = bench("Lucene BM25 (first stage)", bm25_image, "python -m lucene_baseline --model bm25", data,
                     work / "bm25", args.cpus)
        if bm25 is None:
            return 1
        start = time.monotonic()
        summary = prepare_stage(load_task(TASK), data, work / "bm25" / "output", work / "stage")
        stage = time.monotonic() - start
        print(f"{'stage (top 100 + text, on the host)':38} {stage:17.1f} s   {summary.candidates:,} candidates, "
              f"{summary.path.stat().st_size / 2**20:.1f} MB", flush=True)
        rerank = bench("dense re-ranking of BM25's top 100", dense_image, "python -m dense_baseline --mode rerank",
                       data, work / "rerank", args.cpus, input_run=work / "stage")
        if rerank is None:
            return 1
        print(f"ratios to BM25: re-ranker x{rerank / bm25:.2f}; stage + re-ranker x{(stage + rerank) / bm25:.2f}; "
              f"BM25 + stage + re-ranker x{(bm25 + stage + rerank) / bm25:.2f}")
        bm25f = bench("BM25F re-ranking of BM25's top 100", dense_image, "python -m dense_baseline --mode bm25f",
                      data, work / "bm25f", args.cpus, input_run=work / "stage")
        if bm25f is not None:
            print(f"BM25F re-ranker x{bm25f / bm25:.2f} BM25")
        if args.full:
            dense = bench("full dense (WordLlama, exact)", dense_image, "python -m dense_baseline --mode dense", data,
                          work / "dense", args.cpus)
            if dense is not None:
                print(f"full dense x{dense / bm25:.2f} BM25; the pipeline is x{dense / (bm25 + stage + rerank):.1f} "
                      "faster than the full dense run")
    sample_scores()
    return 0


if __name__ == "__main__":
    sys.exit(main())
