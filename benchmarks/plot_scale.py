"""docs/benchmarks.md's log-log plot of time vs size, from the figures benchmarks/scale.py measured.

    .venv/bin/pip install -e '.[bench]'      # matplotlib: a benchmark extra, never a runtime dependency
    .venv/bin/python benchmarks/plot_scale.py [--json benchmarks/results/scale.json] [--output docs/scale.svg]

One line per operation, whole-process wall time against input size in MB (both axes
logarithmic, so equal slopes mean equal growth and a slope of 1 is linear cost):
validate and evaluate (synthetic Touché runs), conversion to Anserini JSONL (args.me
from the BM25 runs, ARQMath Posts.xml), and the whole Touché BM25 run. A dashed grey
line of slope 1 through the first validate point shows what linear growth looks like.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

# kind in scale.json, label, row filter
SERIES: tuple[tuple[str, str, dict[str, str]], ...] = (
    ("validate", "sharedtask validate (Touché run)", {}),
    ("evaluate", "sharedtask evaluate (Touché run)", {}),
    ("conversion", "conversion to JSONL, args.me", {"corpus": "args.me"}),
    ("conversion", "conversion to JSONL, ARQMath Posts.xml", {"corpus": "ARQMath"}),
    ("bm25", "Touché BM25, whole sandboxed run", {}),
)


def points(results: dict[str, Any], kind: str, where: dict[str, str]) -> list[tuple[float, float]]:
    """(MB, wall seconds) of every measured row of ``kind`` matching ``where``."""
    rows = [r for r in results.get(kind, []) if all(r.get(k) == v for k, v in where.items())]
    return sorted((r["mb"], r["wall"]) for r in rows if r.get("wall") and r.get("mb"))


def plot(results: dict[str, Any], out: Path) -> int:
    import matplotlib

    matplotlib.use("svg")
    import matplotlib.pyplot as plt

    plt.rcParams["svg.hashsalt"] = "sharedtask"  # stable element ids: the SVG only changes with the figures
    plt.rcParams["svg.fonttype"] = "none"  # text stays text (smaller, searchable)
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    drawn = 0
    for kind, name, where in SERIES:
        pts = points(results, kind, where)
        if pts:
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=name)
            drawn += 1
    first = points(results, "validate", {})
    if first:
        x0, y0 = first[0]
        xs = [x0, max(p[0] for kind, _, w in SERIES for p in points(results, kind, w))]
        ax.plot(xs, [y0 * x / x0 for x in xs], linestyle="--", color="grey", linewidth=0.8,
                label="linear growth (slope 1)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("input size (MB)")
    ax.set_ylabel("wall time (s)")
    ax.set_title(f"Cost vs size ({results.get('cpus', '?')} shared cores)", fontsize=10)
    ax.grid(True, which="major", linewidth=0.4, alpha=0.6)
    ax.legend(fontsize=7, loc="best")
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, format="svg", metadata={"Date": None, "Creator": "benchmarks/plot_scale.py"})
    print(f"wrote {out} ({drawn} series)")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json", type=Path, default=ROOT / "benchmarks" / "results" / "scale.json")
    ap.add_argument("--output", "--out", type=Path, default=ROOT / "docs" / "scale.svg")
    args = ap.parse_args()
    if not args.json.is_file():
        print(f"error: {args.json}: no figures yet; run benchmarks/scale.py first", file=sys.stderr)
        return 2
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print("error: matplotlib is missing; install the bench extra: pip install -e '.[bench]'", file=sys.stderr)
        return 2
    return plot(json.loads(args.json.read_text()), args.output)


if __name__ == "__main__":
    sys.exit(main())
