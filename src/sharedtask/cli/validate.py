"""``sharedtask validate RUN --task ID``: check a run before it costs a team its result.

Exit codes (docs/architecture.md): 0 valid (warnings allowed), 1 invalid, 2 could not run.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

# The validator, the spec and rich are imported where used: --help needs none of them,
# and --json never loads rich.


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = subparsers.add_parser(
        "validate",
        help="check a run file (or TIRA output dir) against a task's output contract",
        description="Validate a run: structure, fields, per-topic ranking rules (duplicates, ties, "
        "rank/score order, depth), topics, ARQMath specifics. Stricter than TIRA and trec_eval.",
    )
    p.add_argument("run", type=Path, help="run file, or a TIRA output directory holding run.txt / run.txt.gz")
    p.add_argument("--task", required=True, help="task id, e.g. touche-2021-task1 (see `sharedtask tasks`)")
    src = p.add_mutually_exclusive_group()
    src.add_argument("--topics", type=Path, help="topics XML in the task's format")
    src.add_argument("--input", type=Path, metavar="DATASET_DIR",
                     help="the task's input dataset: topics, and ARQMath answer / formula ids")
    p.add_argument("--input-run", type=Path, metavar="STAGE_DIR",
                   help="a re-ranker's stage (holding rerank.jsonl.gz): every document must be one of its candidates")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.add_argument("--fix", type=Path, metavar="OUT", help="also write a normalized run to OUT")
    p.add_argument("--examples", type=int, default=3, help="findings shown per code (default 3)")
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    from sharedtask.findings.output import dumps
    from sharedtask.spec import load_task
    from sharedtask.validate import fix_run, load_topics, validate

    task = load_task(args.task)
    if args.examples < 0:
        from sharedtask.errors import SharedTaskError

        raise SharedTaskError(f"--examples {args.examples}: must be 0 or more (0: only the count of each finding)")
    if args.fix is not None and args.fix.is_file():  # no silent overwrite of a file the user has
        from sharedtask.errors import SharedTaskError

        raise SharedTaskError(f"--fix {args.fix}: the file exists; --fix writes a new file and keeps that one",
                              hint="give another name, or remove the old file first")
    topics = load_topics(task, topics_file=args.topics) if args.topics else None
    if args.input_run is not None and not (args.input_run / "rerank.jsonl.gz").is_file():
        from sharedtask.errors import SharedTaskError

        raise SharedTaskError(f"{args.input_run} holds no rerank.jsonl.gz",
                              hint="make it with sharedtask rerank-input --task ID --run FIRST_STAGE_RUN --output DIR")
    result = validate(args.run, task, topics=topics, input_dir=args.input, input_run=args.input_run)
    report = fix_run(args.run, task, args.fix) if args.fix else None
    if args.json:
        data = result.to_json()
        if report is not None:
            data["fix"] = report.to_json()
        sys.stdout.write(dumps(data) + "\n")
        return 0 if result.valid else 1
    from rich.console import Console

    from sharedtask.findings.output import render_findings, render_summary

    console = Console(highlight=False)
    s = result.stats
    console.print(
        f"[bold]{result.path}[/] ({task.id}, {s.layout}): {s.lines:,} lines, {s.topics:,} topics, "
        f"depth {s.min_depth:,}-{s.max_depth:,}",
        soft_wrap=True,
    )
    render_findings(console, result.findings, result.omitted, examples=args.examples)
    render_summary(console, result.findings, result.omitted, subject=str(result.path))
    if report is not None:
        console.print(f"[bold]fixed run written to {report.out_path}[/] ({report.lines_written:,} lines)")
        for what, n in report.changes.items():
            if n:
                console.print(f"  {what}: {n:,}")
        if not report.changed:
            console.print("  nothing needed changing")
        if report.after is not None:
            render_findings(console, [f for f in report.after.findings if f.severity.value != "info"],
                            report.after.omitted, examples=args.examples)
            render_summary(console, report.after.findings, report.after.omitted, subject=str(report.out_path))
    return 0 if result.valid else 1
