"""``sharedtask rerank-input``: a first stage's run → the stage a re-ranker reads as ``$inputRun``."""

from __future__ import annotations

import argparse
from pathlib import Path

from sharedtask.cli import LazyConsole, options

console = LazyConsole(highlight=False)


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "rerank-input",
        help="make a re-ranking stage from a run: its top N per topic with their text (rerank.jsonl.gz)",
        description=(
            "Write OUT/run.txt (the first stage's run) and OUT/rerank.jsonl.gz: for each topic of the "
            "dataset, the run's top N documents in trec_eval's order, one JSON object per line with qid, "
            "query, docno, text, rank and score (TIREx's re-ranking input; docs/pipelines.md). Mount OUT "
            "as $inputRun with `sharedtask run --input-run DIR` (DIR: the --output folder). The same run and dataset give the same bytes."
        ),
        epilog="example: sharedtask rerank-input --task touche-2021-task1 --run bm25/run.txt --output stage",
    )
    parser.add_argument("--task", required=True, metavar="ID", help="task id (its spec declares rerank:)")
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--input", type=Path, metavar="DATASET_DIR", help="the dataset (default: the task's sample)")
    source.add_argument("--dataset", metavar="ID", help="a dataset of the registry, e.g. touche-2021-task1/test")
    parser.add_argument("--run", required=True, type=Path, help="the first stage's run file or output folder")
    options.add_output(parser, "the stage folder to write", required=True)
    parser.add_argument("--depth", type=int, metavar="N", help="candidates per topic (default: the task's rerank.depth)")
    parser.set_defaults(func=_main)


def _check_stage_folder(output: Path, run: Path) -> None:
    """No silent overwrite (issue 40): ``--output`` is a new or empty folder, or the stage folder
    the run itself is in (its candidates made again, the same bytes)."""
    from sharedtask.errors import SharedTaskError
    from sharedtask.folders import check_output_option

    check_output_option(output)
    inside = run.resolve() == output.resolve() or output.resolve() in run.resolve().parents
    if output.is_dir() and any(output.iterdir()) and not inside:
        raise SharedTaskError(f"--output {output} is not empty", hint="name a new folder for the stage, or remove it")


def _main(args: argparse.Namespace) -> int:
    from sharedtask.errors import SharedTaskError
    from sharedtask.rerank import prepare_stage
    from sharedtask.spec import load_task

    task = load_task(args.task)
    if args.depth is not None and args.depth < 1:
        raise SharedTaskError(f"--depth {args.depth}: must be at least 1")
    if args.dataset:
        from sharedtask.data import dataset_folders

        dataset = dataset_folders(args.task, args.dataset)[0]
    else:
        dataset = args.input or task.sample_dir / "input"
    if not Path(dataset).is_dir():
        raise SharedTaskError(f"input dataset directory {dataset} does not exist")
    _check_stage_folder(args.output, args.run)
    summary = prepare_stage(task, Path(dataset), args.run, args.output, args.depth)
    console.print(f"wrote {summary.path}: {summary.candidates:,} candidates of {summary.topics:,} topics "
                  f"(top {summary.depth} each), sha256 {summary.sha256[:16]}…")
    console.print(f"next: sharedtask run --task {task.id} --image IMAGE --input-run {args.output}")
    return 0
