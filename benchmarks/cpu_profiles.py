"""The dense baseline's bytes and speed under three CPU profiles, before and after exact scores.

    python benchmarks/cpu_profiles.py [--before IMAGE] [--scale 0.05] [--data DIR] [--cpus 2]

Runs ``python -m dense_baseline --mode dense`` in the sandbox on a synthetic args.me corpus
(``python -m sharedtask.samples.synthetic argsme --scale S``, generated when missing) under the
``native``, ``haswell`` (no AVX-512) and ``nehalem`` (no AVX) profiles of
:mod:`sharedtask.sandbox.cpu`, with this checkout's image and, when ``--before`` names one,
an image built from an earlier commit (float32 sums, BLAS sgemm scores). Prints per image
and profile: the run file's sha256, whether it equals the same image's native run, the
documents embedded per second and the exact top-k time the baseline logs, the whole run's
wall time; then the after/before ratios of the native runs.

Build the "before" image from an earlier commit with, e.g.:

    git worktree add /tmp/before 2a34342
    docker build -t sharedtask-before/baseline-dense:2a34342 /tmp/before/baselines/dense
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from baselines import current_image, ensure_corpus  # noqa: E402
from dense import EMBED_LOG  # noqa: E402

from sharedtask.sandbox.api import run as sandbox_run  # noqa: E402

PROFILES = ("native", "haswell", "nehalem")


def one(image: str, data: Path, profile: str, cpus: float, work: Path) -> dict[str, object]:
    out = work / f"{image.replace('/', '_').replace(':', '_')}-{profile}"
    run = sandbox_run("touche-2021-task1", image, command="python -m dense_baseline --mode dense",
                      input_dir=data, output_dir=out / "output", record_dir=out, cpus=cpus, memory="10g",
                      timeout="2h", cpu=profile, validate=False)
    if run.result.status != "success":
        raise SystemExit(f"{image} under {profile}: {run.result.status}: {run.result.message}")
    log = run.result.stderr_path.read_text(errors="replace") + run.result.stdout_path.read_text(errors="replace")
    m = EMBED_LOG.search(log)
    digest = hashlib.sha256((out / "output" / "run.txt").read_bytes()).hexdigest()
    return {"sha256": digest, "docs_per_s": int(m.group(3)) if m else None,
            "topk_s": float(m.group(6)) if m else None, "wall_s": run.result.wall_seconds}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--before", help="a dense image built from an earlier commit")
    parser.add_argument("--scale", type=float, default=0.05, help="share of args.me's 387,740 arguments")
    parser.add_argument("--data", type=Path, help="corpus folder (default: a fresh temporary one)")
    parser.add_argument("--cpus", type=float, default=2.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="cpu-profiles-") as tmp:
        data = ensure_corpus("argsme", args.data or Path(tmp) / "argsme", 0, args.scale)
        images = [("after", current_image("dense-wordllama"))] + ([("before", args.before)] if args.before else [])
        rows: dict[tuple[str, str], dict[str, object]] = {}
        for label, image in images:
            for profile in PROFILES:
                rows[label, profile] = row = one(image, data, profile, args.cpus, Path(tmp) / "runs")
                same = row["sha256"] == rows[label, "native"]["sha256"]
                print(f"{label:6} {profile:8} sha256 {str(row['sha256'])[:16]}  "
                      f"{'same bytes as native' if same else 'DIFFERS from native'}  "
                      f"{row['docs_per_s']} docs/s, top-k {row['topk_s']} s, run {row['wall_s']:.1f} s", flush=True)
        for label, _ in images:
            same = sum(rows[label, p]["sha256"] == rows[label, "native"]["sha256"] for p in PROFILES)
            print(f"{label}: {same} of {len(PROFILES)} profiles give the native bytes")
        if args.before:
            a, b = rows["after", "native"], rows["before", "native"]
            print(f"after/before (native): embedding throughput x{a['docs_per_s'] / b['docs_per_s']:.2f}, "
                  f"top-k time x{a['topk_s'] / max(b['topk_s'], 1e-9):.2f}, whole run x{a['wall_s'] / b['wall_s']:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
