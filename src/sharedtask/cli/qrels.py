"""``sharedtask qrels``: a judged pool folder -> the task's official qrels (docs/assessment.md)."""

from __future__ import annotations

import argparse
from pathlib import Path

from sharedtask.cli import LazyConsole, options

console = LazyConsole(highlight=False)


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "qrels",
        help="assemble a judged pool's qrels (resolving double judgments) and register them as truth",
        description=(
            "DIR is a pool folder (pool.json, pool.tsv from `sharedtask pool`) with a judgments/ folder: one "
            "qrels file per assessor, judgments/NAME.qrels (topic 0 item grade), and for tasks judged for "
            "quality judgments/NAME.quality.qrels. Items judged by several assessors get one grade by the "
            "spec's pooling.resolve rule (or --rule). Writes FILE in the task's official qrels layout (the "
            "quality qrels next to it as STEM-quality.SUFFIX); --register NAME registers them as the truth "
            "of dataset TASK/NAME, so that `evaluate --dataset TASK/NAME` scores against them."
        ),
        epilog="example: sharedtask qrels pool --output qrels.tsv --register edition-2026",
    )
    parser.add_argument("folder", type=Path, metavar="DIR", help="a pool folder with judgments/")
    options.add_output(parser, "the relevance qrels to write", metavar="FILE", required=True)
    parser.add_argument("--rule", metavar="RULE", help="max, min, mean or adjudicator:NAME (default: the spec's)")
    parser.add_argument("--register", metavar="NAME", help="register the qrels as the truth of dataset TASK/NAME")
    parser.set_defaults(func=_main)


def _main(args: argparse.Namespace) -> int:
    from sharedtask.edition.judged import read_judged_folder
    from sharedtask.edition.qrels import assemble, register_qrels
    from sharedtask.spec import load_task
    from sharedtask.formats.trec import write_qrels

    pool, judgments = read_judged_folder(args.folder)
    by_task: dict[str, list] = {}
    for j in judgments:
        by_task.setdefault(pool.item_task(j.topic, j.item), []).append(j)
    out: Path = args.output
    for task_id in [pool.task, *sorted(t for t in by_task if t != pool.task)]:
        task = load_task(task_id)
        target = out if task_id == pool.task else out.with_name(f"{out.stem}-{task_id}{out.suffix}")
        qrels = assemble(task, by_task.get(task_id, []), args.rule)
        write_qrels(target, qrels.rows("relevance"), sep=qrels.sep)
        written = [target]
        if "quality" in qrels.roles:
            quality = target.with_name(f"{target.stem}-quality{target.suffix}")
            write_qrels(quality, qrels.rows("quality"), sep=qrels.sep)
            written.append(quality)
        s = qrels.summary()
        console.print(f"{task.id}: {s['items']['relevance']:,} judged items over {s['topics']['relevance']} topics "
                      f"from {len(qrels.assessors)} assessor(s); {qrels.double_judged:,} judged more than once, "
                      f"{qrels.disagreements:,} of them with different grades, resolved by {qrels.rule}"
                      + (f" ({qrels.adjudicator})" if qrels.adjudicator else ""))
        console.print("wrote " + ", ".join(str(p) for p in written))
        if args.register:
            dataset = register_qrels(task, qrels, name=args.register, pool=args.folder)
            console.print(f"registered as the truth of dataset {dataset}: "
                          f"sharedtask evaluate RUN --task {task.id} --dataset {dataset}")
    return 0
