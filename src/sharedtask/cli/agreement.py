"""``sharedtask agreement``: how far assessors agree (Cohen's kappa, Krippendorff's alpha)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from sharedtask.cli import LazyConsole

console = LazyConsole(highlight=False)


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "agreement",
        help="agreement of assessors' qrels files: Cohen's kappa (graded and binarized), alpha",
        description=(
            "Each FILE holds one assessor's judgments in qrels format (topic 0 item grade). On the items "
            "two assessors both judged: Cohen's kappa on the grades and on the task's binarization "
            "(pooling.relevant_from; ARQMath H+M: grades 2-3 relevant) and the confusion matrix. With more "
            "than two files: kappa per pair, their mean, and Krippendorff's alpha (ordinal). docs/assessment.md"
        ),
        epilog="example: sharedtask agreement ann.qrels bob.qrels --task arqmath-3-task1 --json",
    )
    parser.add_argument("files", nargs="+", metavar="FILE",
                        help="one assessor's qrels, named after the file or NAME=FILE")
    parser.add_argument("--task", required=True, metavar="ID", help="task id (its binarization)")
    parser.add_argument("--json", action="store_true", help="JSON on stdout")
    parser.set_defaults(func=_main)


def _main(args: argparse.Namespace) -> int:
    from sharedtask.edition.agreement import agreement, read_grades
    from sharedtask.errors import SharedTaskError
    from sharedtask.spec import load_task

    task = load_task(args.task)
    if len(args.files) < 2:
        raise SharedTaskError("agreement needs at least two assessors' files")
    grades = {}
    for text in args.files:
        name, sep, given = text.partition("=")
        path = Path(given if sep and name else text)
        if not (sep and name):
            name = path.name.split(".")[0]
        while name in grades:
            name += "'"
        grades[name] = read_grades(path)
        _check_topics(path, grades[name], task)
    relevant_from = task.pooling.relevant_from if task.pooling and task.pooling.pooled else task.truth.relevant_threshold
    labels = None
    truth = task.truth.file("relevance")
    if truth is not None and truth.labels:
        labels = sorted(int(k) for k in truth.labels)
    result = agreement(grades, relevant_from, labels)
    if args.json:
        print(json.dumps(result.as_json(), indent=2))
        return 0
    _show(result)
    return 0


def _check_topics(path: Path, grades: dict[tuple[str, str], int], task) -> None:  # noqa: ANN001
    """Judgments of another task (none of their topic ids has this task's form) are refused:
    the field test's Touché qrels with --task arqmath-3-task1 printed a full agreement table."""
    from sharedtask.errors import SharedTaskError

    if not grades:
        raise SharedTaskError(f"{path}: no judgments in it", hint="one line per judged item: topic 0 item grade")
    pattern = task.output.pattern("topic")
    topics = sorted({topic for topic, _ in grades})
    if pattern is not None and topics and not any(pattern.fullmatch(t) for t in topics):
        raise SharedTaskError(f"{path}: none of its topics (e.g. {topics[0]!r}) is a topic id of {task.id} "
                              f"({pattern.pattern})", hint="check --task")


def _fmt(value: float | None) -> str:
    import math

    return "undefined" if value is None or math.isnan(value) else f"{value:.3f}"


def _show(result) -> None:  # noqa: ANN001
    from rich.table import Table

    from sharedtask.cli import escape

    for pair in result.pairs:
        console.print(f"[bold]{escape(pair.a)}[/] vs [bold]{escape(pair.b)}[/]: {pair.judged_by_both:,} items judged "
                      f"by both; Cohen's kappa {_fmt(pair.cohen_kappa)} graded, {_fmt(pair.cohen_kappa_binary)} "
                      f"binarized (relevant: grade >= {result.relevant_from})")
        table = Table(title=f"rows: {pair.a}, columns: {pair.b}", title_justify="left")
        table.add_column("")
        for label in pair.labels:
            table.add_column(str(label), justify="right")
        for label, row in zip(pair.labels, pair.confusion):
            table.add_row(str(label), *(str(v) for v in row))
        console.print(table)
    if len(result.pairs) > 1:
        console.print(f"mean Cohen's kappa over {len(result.pairs)} pairs: {_fmt(result.cohen_kappa)} graded, "
                      f"{_fmt(result.cohen_kappa_binary)} binarized")
        console.print(f"Krippendorff's alpha ({result.alpha_level}): {_fmt(result.krippendorff_alpha)}")
