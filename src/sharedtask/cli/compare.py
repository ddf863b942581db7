"""``sharedtask compare``: how close a reproduced run is to the original.

    sharedtask compare ORIGINAL REPRODUCED --task ID [--qrels F | --truth DIR] [--input DIR]
                       [--baseline ORIG_BASE REPRO_BASE] [--rbo-p P] [--min-ktu X] [--min-rbo X]
                       [--max-rmse X] [--alpha A] [--per-topic] [--json]

Exit code: 0 identical or reproduced within the thresholds, 1 differs, 2 the tool could not run.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING

from sharedtask.cli import escape

if TYPE_CHECKING:
    from rich.console import Console

# rich and the evaluator are imported where used: the parser (and --help) needs neither.


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "compare",
        help="compare a reproduced run with the original (KTU, RBO, RMSE, ER/ΔRI, t-test, verdict)",
        description="Compare a reproduced run with the original one: identical bytes? If not, per-topic "
                    "Kendall's tau Union and rank-biased overlap, and with qrels the RMSE and a paired t-test "
                    "of every official measure; with --baseline the effect ratio and ΔRI (repro_eval's "
                    "measures, docs/reproduction.md). Exit 0: identical or reproduced; 1: differs.",
    )
    add_comparison_options(p)
    p.add_argument("original", type=Path, metavar="ORIGINAL", help="the original run (file or output folder)")
    p.add_argument("reproduced", type=Path, metavar="REPRODUCED", help="the reproduced run")
    p.add_argument("--task", required=True, help="task id (see `sharedtask tasks`)")
    p.add_argument("--baseline", nargs=2, type=Path, metavar=("ORIG_BASE", "REPRO_BASE"),
                   help="the original and the reproduced run of a baseline: adds ER and ΔRI (needs qrels)")
    p.add_argument("--per-topic", action="store_true", help="also show KTU, RBO and differences per topic")
    p.add_argument("--json", action="store_true", help="JSON on stdout")
    p.set_defaults(func=run)


def add_comparison_options(p: argparse.ArgumentParser) -> None:
    """Truth and thresholds, shared with ``sharedtask reproduce``."""
    from sharedtask.evaluate.reproduction import RBO_P, Thresholds

    t = Thresholds()
    p.add_argument("--qrels", type=Path, help="relevance qrels (overrides the one in --truth)")
    p.add_argument("--truth", type=Path, help="truth folder (qrels, quality qrels, answers.tsv, formulas/)")
    p.add_argument("--input", type=Path, dest="input_dir", metavar="DIR",
                   help="dataset folder: Task 2's formula index; for reproduce also the re-run's input (default: "
                        "the recorded one when it is the task's sample or a dataset of the data store)")
    p.add_argument("--rbo-p", type=float, default=RBO_P, metavar="P",
                   help=f"RBO persistence: weight of rank d is P^(d-1) (default {RBO_P}, repro_eval's)")
    p.add_argument("--min-ktu", type=float, default=t.min_ktu, metavar="X", help=f"(default {t.min_ktu})")
    p.add_argument("--min-rbo", type=float, default=t.min_rbo, metavar="X", help=f"(default {t.min_rbo})")
    p.add_argument("--max-rmse", type=float, default=t.max_rmse, metavar="X", help=f"(default {t.max_rmse})")
    p.add_argument("--alpha", type=float, default=t.alpha, metavar="A",
                   help=f"t-test level below which a difference counts (default {t.alpha})")


def thresholds(args: argparse.Namespace):
    from sharedtask.evaluate.reproduction import Thresholds

    return Thresholds(min_ktu=args.min_ktu, min_rbo=args.min_rbo, max_rmse=args.max_rmse, alpha=args.alpha)


def run(args: argparse.Namespace) -> int:
    from sharedtask.evaluate.compare import compare

    result = compare(args.original, args.reproduced, args.task, qrels=args.qrels, truth_dir=args.truth,
                     input_dir=args.input_dir, baselines=tuple(args.baseline) if args.baseline else None,
                     thresholds=thresholds(args), p=args.rbo_p)
    if args.json:
        print(json.dumps(result.to_json(), indent=2, ensure_ascii=False))
    else:
        from rich.console import Console

        show(Console(highlight=False), result, per_topic=args.per_topic)
    return exit_code(result)


def exit_code(result) -> int:
    return 1 if result.verdict == "differs" else 0


def _f(value: float | None, digits: int = 4) -> str:
    return "—" if value is None or value != value else f"{value:.{digits}f}"


def show(console: Console, result, *, per_topic: bool = False) -> None:
    """The comparison as tables and the verdict line (also used by ``sharedtask reproduce``)."""
    from sharedtask.tables import Column, KeyedTable

    console.print(f"[bold]{escape(result.reproduced)}[/] against [bold]{escape(result.original)}[/] "
                  f"({escape(result.task)})")
    if not result.identical:
        console.print(f"order: mean KTU {_f(result.mean_ktu)}, mean RBO {_f(result.mean_rbo)} "
                      f"(p = {result.p:g}, depth {result.depth}) over {len(result.rbo)} topics")
    if result.measures and not result.identical:
        numbers = ["original", "reproduced", "RMSE", "t-test p", "topics"] + (["ER", "ΔRI"] if result.baselines else [])
        table = KeyedTable([Column("measure"), *[Column(name, "right", whole=True) for name in numbers]],
                           title="official measures")
        for m in result.measures:
            cells = [escape(m.info.label + (" *" if m.info.primary else "")), _f(m.original), _f(m.reproduced),
                     _f(m.rmse), f"{m.p_value:.3g}", str(m.topics)]
            if result.baselines:
                cells += [_f(m.effect_ratio), _f(m.delta_ri)]
            table.add_row(*cells)
        console.print(table)
    if per_topic and not result.identical:
        table = KeyedTable([Column("topic", whole=True), Column("KTU", "right", whole=True),
                            Column("RBO", "right", whole=True),
                            *[Column(f"Δ {m.info.key}", "right", whole=True) for m in result.measures]],
                           title="per topic")
        for topic in result.rbo:
            table.add_row(escape(topic), _f(result.ktu.get(topic)), _f(result.rbo[topic]),
                          *[_f(m.per_topic_difference.get(topic)) for m in result.measures])
        console.print(table)
    for note in result.notes:
        console.print(f"[dim]note: {escape(note)}[/]")
    style = {"identical": "bold green", "reproduced": "bold green"}.get(result.verdict, "bold red")
    console.print(f"[{style}]verdict[/]: {escape(result.verdict_line())}", soft_wrap=True)
