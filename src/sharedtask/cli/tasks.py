"""``sharedtask tasks`` and ``sharedtask tasks show ID``: the task catalogue."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING

from sharedtask.cli import LazyConsole

if TYPE_CHECKING:
    from rich.panel import Panel

    from sharedtask.spec import Task

# The spec and rich's widgets are imported where used: --help needs neither.
console = LazyConsole(highlight=False)


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "tasks",
        help="list the shared tasks, or show one task's full contract",
        description="List every task of the catalogue (tasks/*.yml), or show one task's contracts.",
    )
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    inner = parser.add_subparsers(dest="tasks_command", metavar="SUBCOMMAND")
    show = inner.add_parser("show", help="show one task's input/output/truth contracts, measures and limits")
    show.add_argument("task_id", metavar="ID", help="task id, e.g. arqmath-3-task1")
    show.add_argument("--json", action="store_true", help="print the merged spec as JSON")
    show.set_defaults(func=_show)
    parser.set_defaults(func=_list)


def _list(args: argparse.Namespace) -> int:
    from sharedtask.spec import all_tasks

    tasks = all_tasks()
    if args.json:
        print(json.dumps([_summary(t) for t in tasks], indent=2, ensure_ascii=False))
        return 0
    from rich.table import Table

    # One line a task at any width: the id whole, the title last and cut to the line
    # (`tasks show ID` has everything; the boxed table took 75 lines at 80 columns).
    measures = [t.primary_measure.label.split(" (")[0] for t in tasks]
    id_width, measure_width = max(len(t.id) for t in tasks), max(map(len, measures))
    room = max(console.width - id_width - measure_width - 4, 10)  # rich would shrink the id first
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold cyan", no_wrap=True, width=id_width)
    table.add_column(no_wrap=True, width=measure_width)
    table.add_column(no_wrap=True)
    for t, measure in zip(tasks, measures):
        table.add_row(t.id, measure, t.title if len(t.title) <= room else t.title[: room - 1] + "…")
    console.print(table)
    console.print(f"{len(tasks)} tasks. Details: [bold]sharedtask tasks show ID[/]")
    return 0


def _summary(t: Task) -> dict[str, object]:
    return {
        "id": t.id,
        "title": t.title,
        "lab": t.lab,
        "year": t.year,
        "edition": t.edition,
        "run_format": t.output.format,
        "primary_measure": t.primary_measure.key,
    }


def _show(args: argparse.Namespace) -> int:
    from sharedtask.spec import load_task

    task = load_task(args.task_id)
    if args.json:
        print(json.dumps(task.raw, indent=2, ensure_ascii=False))
        return 0
    console.print(render_task(task))
    return 0


def render_task(t: Task) -> Panel:
    """The full contract of a task as one rich renderable."""
    from rich.console import Group
    from rich.markup import escape
    from rich.panel import Panel
    from rich.table import Table
    from rich.text import Text

    from sharedtask.tables import Column, KeyedTable

    facts = Table.grid(padding=(0, 2))
    facts.add_column(style="bold")
    facts.add_column()
    facts.add_row("lab / edition", f"{t.lab} / {t.edition} ({t.year})")
    facts.add_row("description", t.description)
    if t.url:
        facts.add_row("url", t.url)
    if t.topics:
        facts.add_row("topics", ", ".join(f"{k} {v}" for k, v in t.topics.items()))
    facts.add_row("spec file", str(t.source_path))
    facts.add_row("sample", f"{t.sample_dir} (sharedtask sample {t.id} DIR)")

    # The contracts' tables keep each file's path, format and role whole (issue 40: "formulas/*.t…",
    # "arqmath-posts-…" at 80 columns); the descriptions wrap.
    inputs = KeyedTable([Column("path"), Column("format", whole=True), Column("role", whole=True),
                         Column("required", whole=True), Column("description")],
                        title="Input contract ($inputDataset)", title_justify="left")
    for f in t.input.files:
        inputs.add_row(escape(f.path), f.format, f.role, "yes" if f.required else "no", escape(f.description or ""))

    out = t.output
    output = Table.grid(padding=(0, 2))
    output.add_column(style="bold")
    output.add_column(overflow="fold")  # a pattern has no space to wrap at: folded, never cut
    output.add_row("file", f"$outputDir/{out.file} (or {out.file}.gz)")
    output.add_row("format", out.format)
    output.add_row("max results per topic", str(out.max_results_per_topic))
    for name, pattern in out.patterns.items():
        output.add_row(f"{name} id pattern", pattern)
    if out.max_answer_chars:
        output.add_row("max answer length", f"{out.max_answer_chars} Unicode characters")
    if out.file_name_pattern:
        output.add_row("run file name", out.file_name_pattern)

    truth = KeyedTable([Column("path"), Column("format", whole=True), Column("role", whole=True), Column("scale"),
                        Column("description")],
                       title=f"Truth contract (relevant: rel >= {t.truth.relevant_threshold})", title_justify="left")
    for f in t.truth.files:
        scale = "" if f.min_rel is None else f"{f.min_rel}..{f.max_rel}"
        if f.labels:
            scale += " (" + ", ".join(f"{k} {v}" for k, v in f.labels.items()) + ")"
        truth.add_row(escape(f.path), f.format, f.role, escape(scale), escape(f.description or ""))

    measures = KeyedTable([Column("key"), Column("label"), Column("procedure"), Column("official", whole=True)],
                          title="Measures", title_justify="left")
    for m in t.measures:
        key = f"[bold]{m.key}[/] (primary)" if m is t.primary_measure else m.key
        measures.add_row(key, escape(m.label), escape(m.procedure), "yes" if m.official else "variant")

    s = t.sandbox
    sandbox = Table.grid(padding=(0, 2))
    sandbox.add_column(style="bold")
    sandbox.add_column()
    sandbox.add_row("sandbox defaults", f"memory {s.memory}, cpus {s.cpus:g}, timeout {s.timeout} s, pids {s.pids}, output <= {s.max_output}, no network")
    p = t.pooling
    if p is not None and p.pooled:
        shared = f", judged in the pools of {p.shared_with}" if p.shared_with else ""
        sandbox.add_row("new edition", Text(f"pooled by {p.unit}, depth {p.depths.get('primary')} primary / "
                                       f"{p.depths.get('alternate')} alternate{shared}; judged for "
                                       f"{', '.join(p.judged)}; relevant from grade {p.relevant_from}; double "
                                       f"judgments resolved by {p.resolve} ({p.source})"))
    elif p is not None:
        sandbox.add_row("new edition", Text(f"not pooled: {p.reason}"))

    return Panel(
        Group(facts, "", inputs, "", Panel(output, title="Output contract", title_align="left"), "", truth, "", measures, "", sandbox),
        title=f"[bold cyan]{t.id}[/]: {t.title}",
        title_align="left",
    )
