"""``sharedtask run``: run a submission image on a task's dataset, sandboxed, the TIRA way.

Exit code: 0 when the container succeeded and its output is not invalid, 1 when
it failed, hit a limit or produced an invalid run, 2 when it could not be run,
130 after Ctrl-C (the container is stopped and removed, the record written).
"""

from __future__ import annotations

import argparse
import json

from sharedtask.cli import LazyConsole, options
from sharedtask.sandbox.options import add_arguments as add_sandbox_options
from sharedtask.sandbox.options import from_args as sandbox_options

# The sandbox (docker SDK) and rich are imported where used: --help needs neither.
console = LazyConsole(highlight=False)
err_console = LazyConsole(stderr=True, highlight=False)


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "run",
        help="run a submission image on a task's dataset in the sandbox",
        description=(
            "Run IMAGE like TIRA does: the dataset read-only at $inputDataset (/tira-data/input), "
            "an empty $outputDir (/tira-data/output), COMMAND through `sh -c` with $inputDataset, "
            "$outputDir and $inputRun substituted (no COMMAND: the image's ENTRYPOINT/CMD). "
            "Sandboxed by default: no network, all capabilities dropped, no-new-privileges, "
            "memory/CPU/pids limits, wall-clock timeout, output size limit (defaults: the task's spec). "
            "Writes run-record.json, ir-metadata.yml and the logs next to the output directory."
        ),
    )
    parser.add_argument("--task", required=True, metavar="ID", help="task id, e.g. touche-2020-task1")
    parser.add_argument("--image", required=True, help="a local docker image (never pulled)")
    parser.add_argument("--command", help="shell command run via `sh -c` (default: the image ENTRYPOINT/CMD)")
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--input", metavar="DATASET_DIR", help="input dataset (default: the task's sample)")
    source.add_argument("--dataset", metavar="ID",
                        help="a dataset of the registry (sharedtask data list), e.g. test or arqmath-3-task1/test")
    parser.add_argument("--input-run", metavar="DIR", help="output of a previous stage, read-only at $inputRun")
    options.add_output(parser, "output directory, must be empty (default: sharedtask-runs/<task>/<image>-<time>/output)")
    parser.add_argument("--record-dir", metavar="DIR", help="where the record and logs go (default: parent of --output)")
    add_sandbox_options(parser)  # declared once, in sharedtask.sandbox.options
    parser.add_argument("--no-validate", action="store_true", help="skip validating the run file")
    parser.add_argument("--json", action="store_true", help="print the run record as JSON, no live display")
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    if args.input_run is not None:
        from sharedtask.errors import SharedTaskError
        from sharedtask.spec import load_task

        if load_task(args.task).rerank is None:  # nothing would check what is mounted (issue 39)
            raise SharedTaskError(f"--input-run: the task {args.task} has no re-ranking stage (its spec declares "
                                  "no rerank:), so there is nothing to re-rank",
                                  hint="drop --input-run, or use a task whose spec declares rerank: "
                                       "(sharedtask tasks shows them)")
    if args.dataset:
        from sharedtask.data import dataset_folders

        args.input, _, dataset_id = dataset_folders(args.task, args.dataset)
        args.dataset_id = args.dataset_id or dataset_id
    return run_and_report(args.task, args.image, command=args.command, input_dir=args.input,
                          input_run=args.input_run, output_dir=args.output, record_dir=args.record_dir,
                          validate=not args.no_validate, json_output=args.json, **sandbox_options(args))


def run_and_report(task, image: str, *, json_output: bool = False, **options) -> int:
    """Run ``image`` in the sandbox with the live display, print the summary, return the exit code.

    Shared by ``sharedtask run`` and ``sharedtask baseline run``; ``options`` are the
    keyword arguments of :func:`sharedtask.sandbox.run`.
    """
    from sharedtask.sandbox import run
    from sharedtask.sandbox.live import LiveObserver, render_json, summary
    from sharedtask.sandbox.runner import INTERRUPTED

    observer = None if json_output else LiveObserver(err_console.real)
    outcome = run(task, image, observer=observer, **options)
    if json_output:
        print(json.dumps(render_json(outcome), indent=2, ensure_ascii=False))
    else:
        console.print(summary(outcome))
    if outcome.result.status == INTERRUPTED:
        return 130
    return 0 if outcome.ok else 1
