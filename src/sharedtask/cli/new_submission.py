"""``sharedtask new-submission --task ID DIR``: scaffold a participant's submission."""

from __future__ import annotations

import argparse
from pathlib import Path

from sharedtask.cli import LazyConsole

console = LazyConsole(highlight=False)


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "new-submission",
        help="scaffold a submission: Dockerfile, run.py, README and a sandbox test",
        description=(
            "Write a ready-to-run TIRA-style submission for a task into DIR: a Dockerfile on the "
            "sharedtask base image, run.py (reads $inputDataset with sharedtask's readers and writes "
            "$outputDir/run.txt with a simple term-overlap ranking), a README (build, run, validate, "
            "evaluate, submit with tira-cli) and tests/test_submission.py (runs it in the sandbox on the "
            "task's sample and validates the output)."
        ),
        epilog="example: sharedtask new-submission --task touche-2021-task1 my-submission",
    )
    parser.add_argument("--task", required=True, metavar="ID", help="task id, e.g. arqmath-3-task1 (see `sharedtask tasks`)")
    parser.add_argument("directory", metavar="DIR", type=Path, help="target folder (created; must be empty unless --force)")
    parser.add_argument("--name", help="submission name, used for the image and run tag (default: DIR's name)")
    parser.add_argument("--rerank", action="store_true",
                        help="a re-ranker of the task's first stage: run.py reads the re-rank dataset "
                             "$TIRA_INPUT_DATASET/rerank.jsonl.gz (the candidates with their text, as TIREx), no index "
                             "(docs/pipelines.md)")
    parser.add_argument("--force", action="store_true",
                        help="write into a non-empty DIR, overwriting the scaffold's files (other files are kept)")
    parser.set_defaults(func=_main)


def _main(args: argparse.Namespace) -> int:
    from sharedtask.scaffold import write_submission  # the spec and templates: not for --help

    sub = write_submission(args.task, args.directory, name=args.name, force=args.force, rerank=args.rerank)
    console.print(f"wrote submission [bold]{sub.name}[/] for [bold cyan]{sub.task.id}[/] to {args.directory}:")
    for rel in sub.files:
        console.print(f"  {args.directory / rel}")
    console.print("next steps:")
    console.print(f"  cd {args.directory} && docker build -t {sub.image} .")
    if args.rerank:
        console.print(f"  sharedtask rerank-input --task {sub.task.id} --run FIRST_STAGE_RUN --output stage")
        console.print(f"  sharedtask run --task {sub.task.id} --image {sub.image} --input-run stage")
    else:
        console.print(f"  sharedtask run --task {sub.task.id} --image {sub.image}")
    console.print("  pytest tests/      (see README.md)")
    return 0
