"""``sharedtask baseline list|build|run``: the baselines declared in tira.yml."""

from __future__ import annotations

import argparse
from pathlib import Path

from typing import TYPE_CHECKING

from sharedtask.cli import LazyConsole, options
from sharedtask.errors import SharedTaskError

if TYPE_CHECKING:
    from sharedtask.manifest import Manifest, Software

# The manifest (jsonschema) and the image builder are imported where used: --help needs neither.
console = LazyConsole(highlight=False)


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "baseline",
        help="list, build or run the baselines declared in tira.yml",
        description="Work with the baselines of the manifest (tira.yml): list them, build their images, run one in the sandbox.",
    )
    _manifest_option(parser, None)
    inner = parser.add_subparsers(dest="baseline_command", metavar="SUBCOMMAND")

    lister = inner.add_parser("list", help="list the baselines, their images and tasks")
    _manifest_option(lister)
    lister.set_defaults(func=_list)

    build = inner.add_parser("build", help="build a baseline's image (skipped when up to date)")
    build.add_argument("name", nargs="?", help="baseline name (default: all)")
    build.add_argument("--force", action="store_true", help="rebuild even when the image is up to date")
    _manifest_option(build)
    build.set_defaults(func=_build)

    run = inner.add_parser(
        "run",
        help="build if needed and run a baseline in the sandbox on a task's dataset",
        description="Build (if needed) and run a baseline in the sandbox, then validate its output.",
    )
    run.add_argument("name", help="baseline name (see `sharedtask baseline list`)")
    run.add_argument("--task", required=True, metavar="ID", help="task id")
    run.add_argument("--input", type=Path, metavar="DATASET_DIR",
                     help="dataset folder ($inputDataset); default: the task's sample")
    options.add_output(run, "output folder ($outputDir); default: a new folder under ./sharedtask-runs")
    _manifest_option(run)
    run.set_defaults(func=_run)
    parser.set_defaults(func=_list)


def _manifest_option(parser: argparse.ArgumentParser, default: object = argparse.SUPPRESS) -> None:
    """--manifest before or after the subcommand (`baseline list --manifest F` is what people type);
    SUPPRESS keeps the inner parsers from overwriting a value given before the subcommand."""
    parser.add_argument("--manifest", type=Path, metavar="FILE", default=default,
                        help="manifest to use (default: the project's tira.yml)")


def _manifest(args: argparse.Namespace) -> Manifest:
    from sharedtask.manifest import load_manifest

    return load_manifest(args.manifest)


def _list(args: argparse.Namespace) -> int:
    from sharedtask.tables import Column, KeyedTable

    manifest = _manifest(args)
    # the name and the image whole at any width (the image name broke across lines at 80 columns)
    table = KeyedTable([Column("name"), Column("image", whole=True), Column("command"), Column("tasks")],
                       title=f"baselines in {manifest.path}", title_justify="left")
    for sw in manifest.baselines:
        table.add_row(f"[bold cyan]{sw.name}[/]", sw.image, f"[dim]{sw.command or '(entrypoint)'}[/]",
                      " ".join(sw.tasks))
    console.print(table)
    return 0


def build_software(sw: Software, *, force: bool = False) -> str:
    """Build one image with a status line; returns the image id."""
    if sw.build is None:
        return sw.image
    from sharedtask.images.build import ensure_software_image

    with console.status(f"building {sw.image} from {sw.build}") as status:
        image_id, built = ensure_software_image(sw, force=force,
                                                on_log=lambda line: status.update(f"building {sw.image}: {line[:100]}"))
    console.print(f"{sw.image}: {'built' if built else 'up to date'} ({image_id[7:19]})")
    return image_id


def _build(args: argparse.Namespace) -> int:
    manifest = _manifest(args)
    from sharedtask.pipeline import with_parents

    targets = [manifest.software(args.name)] if args.name else list(manifest.baselines)
    for sw in with_parents(targets, manifest):
        build_software(sw, force=args.force)
    return 0


def _run(args: argparse.Namespace) -> int:
    from sharedtask.cli.run import run_and_report  # the sandbox's CLI presentation
    from sharedtask.spec import load_task

    manifest = _manifest(args)
    sw = manifest.software(args.name)
    task = load_task(args.task)
    if not sw.serves(task.id):
        raise SharedTaskError(f"{sw.name} does not serve {task.id}", hint=f"it serves: {', '.join(sw.tasks)}")
    from sharedtask.pipeline import with_parents

    for needed in with_parents([sw], manifest):
        build_software(needed)
    return run_and_report(task, sw.image, command=sw.command_for(task.id), input_dir=args.input, output_dir=args.output)
