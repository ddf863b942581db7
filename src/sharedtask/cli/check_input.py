"""``sharedtask check-input --task ID DIR``: does a dataset satisfy the input contract?"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING

from sharedtask.cli import LazyConsole

if TYPE_CHECKING:
    from sharedtask.data.inputcheck import InputReport

# The spec, the readers and rich are imported where used: --help needs none of them.
console = LazyConsole(highlight=False)


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "check-input",
        help="check that a dataset folder satisfies a task's input contract",
        description=(
            "Check that DIR (what $inputDataset will point to) holds every file of the task's input "
            "contract and that each parses completely in its official format. "
            "Exit code 0: valid, 1: invalid, 2: could not run."
        ),
    )
    parser.add_argument("--task", required=True, metavar="ID", help="task id (see `sharedtask tasks`)")
    parser.add_argument("directory", metavar="DIR", type=Path, help="the dataset folder")
    parser.add_argument("--json", action="store_true", help="machine-readable report")
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from sharedtask.data.inputcheck import check_input
    from sharedtask.spec import load_task

    task = load_task(args.task)
    if args.json:
        report = check_input(task, args.directory)
        print(json.dumps(report.to_json(), indent=2, ensure_ascii=False))
        return 0 if report.valid else 1
    with console.status("checking…") as status:
        report = check_input(task, args.directory, on_file=lambda e, p: status.update(f"reading {p.name} ({e.format})"))
    render(report)
    return 0 if report.valid else 1


def render(report: InputReport) -> None:
    from sharedtask.cli import escape
    from sharedtask.findings.output import render_findings
    from sharedtask.tables import Column, KeyedTable
    from sharedtask.units import format_size

    table = KeyedTable([Column("path"), Column("format", whole=True), Column("files", "right", whole=True),
                        Column("records", "right", whole=True), Column("size", "right", whole=True), Column("status")],
                       title=f"{report.task.id}: input contract of {escape(str(report.directory))}", title_justify="left")
    style = {"ok": "green", "optional-missing": "dim", "missing": "bold red", "invalid": "bold red"}
    for c in report.checks:
        status = f"[{style[c.status]}]{c.status}[/]" + (f": {c.message}" if c.message and c.status != "ok" else "")
        table.add_row(escape(c.entry.path), c.entry.format, str(len(c.files)), f"{c.records:,}", format_size(c.bytes), status)
    console.print(table)
    console.print(f"topics: {len(report.topics)}")
    render_findings(console.real, report.findings)
    verdict = "[bold green]valid[/]" if report.valid else "[bold red]invalid[/]"
    console.print(f"{report.task.id}: {verdict}")
