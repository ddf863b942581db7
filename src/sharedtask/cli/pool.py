"""``sharedtask pool``: the submitted runs -> the pool assessors judge (docs/assessment.md)."""

from __future__ import annotations

import argparse
from pathlib import Path

from sharedtask.cli import LazyConsole, err_console, options

console = LazyConsole(highlight=False)


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "pool",
        help="pool submitted runs for assessment by the task's pooling rule (pool.tsv, pool.json)",
        description=(
            "Take the top of each run as the task spec's pooling: block says (depth per run kind; ARQMath "
            "Task 2: down each run until k visually distinct formulae) and write DIR/pool.tsv (topic, item, "
            "then run:rank of every run that brought it in) and DIR/pool.json (the rule, each run's sha256 "
            "and kind, items per topic, the seed of the order items are shown in). Runs given as RUN are "
            "primary runs (baselines too, as ARQMath pooled them); --alternate RUN adds alternate runs. "
            "A run is named after its file (without extension) or NAME=FILE."
        ),
        epilog="example: sharedtask pool a.tsv b.tsv --alternate c.tsv --task arqmath-3-task1 --output pool",
    )
    parser.add_argument("runs", nargs="*", metavar="RUN", help="primary run file ([NAME=]FILE)")
    parser.add_argument("--alternate", action="append", default=[], metavar="RUN", help="an alternate run ([NAME=]FILE)")
    parser.add_argument("--shared", action="append", default=[], metavar="TASK=FILE",
                        help="a run of a task judged in this task's pools (pooling.shared_with; ARQMath-3 Task 3 "
                             "runs in Task 1's pool), pooled by that task's rule")
    parser.add_argument("--task", required=True, metavar="ID", help="task id (its spec declares pooling:)")
    options.add_output(parser, "the pool folder to write", required=True)
    parser.add_argument("--depth", action="append", default=[], metavar="KIND=N",
                        help="override the spec's depth of a run kind, e.g. --depth primary=10")
    parser.add_argument("--formulas", type=Path, metavar="PATH",
                        help="formula index (file, folder or glob; ARQMath Task 2; default: the task's sample index)")
    parser.add_argument("--seed", type=int, help="seed of the display order (default: a random one, recorded)")
    parser.set_defaults(func=_main)


def parse_runs(primary: list[str], alternate: list[str], shared: list[str] | None = None) -> list:
    from sharedtask.edition.pooling import PoolRun
    from sharedtask.errors import SharedTaskError

    runs = []
    for text in shared or ():
        other, sep, path = text.partition("=")
        if not sep or not other or not path:
            raise SharedTaskError(f"--shared {text!r}: expected TASK=FILE")
        runs.append(PoolRun(Path(path), "primary", f"{other}-{Path(path).name.split('.')[0]}", task=other))
    for kind, given in (("primary", primary), ("alternate", alternate)):
        for text in given:
            name, sep, path = text.partition("=")
            if not sep:
                path, name = text, Path(text).name.split(".")[0]
            if not name or not path:
                raise SharedTaskError(f"run {text!r}: expected FILE or NAME=FILE")
            runs.append(PoolRun(Path(path), kind, name))  # type: ignore[arg-type]
    if not runs:
        raise SharedTaskError("no runs to pool", hint="sharedtask pool RUN... --task ID --output DIR")
    return runs


def parse_depths(items: list[str]) -> dict[str, int]:
    from sharedtask.errors import SharedTaskError

    out = {}
    for text in items:
        kind, _, value = text.partition("=")
        if kind not in ("primary", "alternate") or not value.isdigit() or int(value) < 1:
            raise SharedTaskError(f"--depth {text!r}: expected primary=N or alternate=N with N >= 1")
        out[kind] = int(value)
    return out


def _check_pool_folder(folder: Path) -> None:
    """No silent overwrite (issue 40): a pool folder already holding a pool keeps it; its
    judgments refer to that pool's items and display order."""
    from sharedtask.edition.pooling import POOL_JSON
    from sharedtask.errors import SharedTaskError
    from sharedtask.folders import check_output_option

    check_output_option(folder)
    if (folder / POOL_JSON).exists():
        raise SharedTaskError(f"--output {folder} holds a pool already ({POOL_JSON}); pooling again would replace it",
                              hint="name a new folder, or remove the old pool first")


def _main(args: argparse.Namespace) -> int:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from sharedtask.edition.pooling import build_pool
    from sharedtask.spec import load_task

    task = load_task(args.task)
    runs = parse_runs(args.runs, args.alternate, args.shared)
    depths = parse_depths(args.depth)
    _check_pool_folder(args.output)
    formulas = args.formulas
    if formulas is None and task.pooling is not None and task.pooling.unit == "visual-id":
        formulas = task.sample_dir / "input" / "formulas"
    with Progress(TextColumn("pooling"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.description}"),
                  TimeElapsedColumn(), console=err_console.real, transient=True) as bar:
        job = bar.add_task("", total=len(runs))

        def advance(run, lines: int) -> None:  # noqa: ANN001
            bar.update(job, advance=1, description=f"{run.name} ({lines:,} lines)")

        pool = build_pool(task, runs, depths=depths, seed=args.seed, formulas=formulas, progress=advance)
    pool.write(args.output)
    counts = pool.counts()
    total = sum(counts.values())
    per = f"{total / len(counts):.1f}" if counts else "0"
    console.print(f"pooled {len(runs)} run(s) into {total:,} items over {len(counts)} topics "
                  f"({per} per topic; depths {pool.rule['depths']}, unit {pool.rule['unit']})")
    console.print(f"wrote {args.output / 'pool.tsv'} and {args.output / 'pool.json'} (display seed {pool.seed})")
    return 0
