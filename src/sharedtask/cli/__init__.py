"""The ``sharedtask`` command line: one subcommand per segment of the flow.

Each subcommand lives in its own module exposing ``register(subparsers)``; the
module sets ``func`` on its parser, a callable ``(args) -> int`` (the exit code).
User mistakes raise :class:`~sharedtask.errors.SharedTaskError` and end as one
line on stderr with exit code 2, never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import os
import signal
import sys
from typing import TYPE_CHECKING, Any, Sequence

from sharedtask import __version__
from sharedtask.errors import SharedTaskError
from sharedtask.untrusted import markup_safe

if TYPE_CHECKING:
    from rich.console import Console

# The validator uses numpy only for vector arithmetic, never BLAS; OpenBLAS would still
# start one thread per core at import (~0.1 s CPU measured with py-spy). Users who set
# the variable keep their value.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

# Order here is the order in `sharedtask --help`: the flow of docs/architecture.md.
SUBCOMMAND_MODULES: tuple[str, ...] = (
    "tasks",
    "sample",
    "check_input",
    "validate",
    "run",
    "rerank_input",
    "evaluate",
    "data",
    "compare",
    "pool",
    "agreement",
    "qrels",
    "reproduce",
    "baseline",
    "demo",
    "serve",
    "submit",
    "status",
    "worker",
    "images_server",
    "new_submission",
    "docker_doctor",
)



class LazyConsole:
    """A rich ``Console`` made on first use, with the options given here.

    Why: importing rich.console costs ~80 ms; ``--help``, ``--json`` and the parser of
    a command that fails early need not pay it. Attribute access is forwarded, so
    ``console.print(...)`` and ``console.status(...)`` work as on a Console; pass
    :attr:`real` where rich itself wants a Console (``Progress(console=...)``).
    """

    def __init__(self, **options: Any) -> None:
        self._options = options
        self._real: Console | None = None

    @property
    def real(self) -> Console:
        if self._real is None:
            from rich.console import Console

            self._real = Console(**self._options)
        return self._real

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)


err_console = LazyConsole(stderr=True, highlight=False)


def escape(text: str) -> str:
    """rich's markup escape, imported on first use (see :class:`LazyConsole`)."""
    from rich.markup import escape as rich_escape

    return rich_escape(text)


def _module_name(command: str) -> str:
    return command.replace("-", "_")


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser; with ``only`` just that subcommand's module is imported (fast start)."""
    parser = argparse.ArgumentParser(
        prog="sharedtask",
        description=(
            "Run IR shared tasks the TIRA way: task specs, sandboxed runs, "
            "validation, official evaluation and leaderboards."
        ),
    )
    parser.add_argument("--version", action="version", version=f"sharedtask {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in SUBCOMMAND_MODULES if only is None else (only,):
        importlib.import_module(f"sharedtask.cli.{name}").register(sub)
    return parser


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(signal.Signals(signum).name)


def _stop_on_signals() -> None:
    """SIGTERM and SIGHUP stop a command the way Ctrl-C does.

    Why: the sandbox kills and removes its container on KeyboardInterrupt; a
    ``kill`` of the CLI (or a closed terminal) must not leave the container
    running unwatched (docs/threat-model.md, "Orphans").
    """
    for sig in (signal.SIGTERM, signal.SIGHUP):
        try:
            if signal.getsignal(sig) in (signal.SIG_DFL, None):
                signal.signal(sig, _interrupt)
        except ValueError:  # not the main thread (embedded use): leave signals alone
            return


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    # Import only the chosen subcommand (evaluate on a small run is dominated by start-up);
    # help, typos and top-level options get the full parser.
    first = next((a for a in argv if not a.startswith("-")), None)
    only = _module_name(first) if first and _module_name(first) in SUBCOMMAND_MODULES else None
    if only is not None and first != first.lower():
        only = None
    parser = build_parser(only)
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    _stop_on_signals()
    try:
        return int(args.func(args))
    except SharedTaskError as exc:
        err_console.print(f"[bold red]error:[/] {markup_safe(str(exc), None, keep_newlines=True)}", soft_wrap=True)
        return 2
    except KeyboardInterrupt as exc:
        from sharedtask.sandbox.interrupts import Interrupted

        said = f": {markup_safe(str(exc), None)}" if isinstance(exc, Interrupted) and str(exc) else ""
        err_console.print(f"[bold red]interrupted[/]{said}", soft_wrap=True)
        return 130
    except BrokenPipeError:
        return 0
    except OSError as exc:
        # A path the user gave cannot be read or written (a file where a folder is
        # expected, a missing parent, no permission, disk full): their mistake, one line.
        if exc.filename is None or exc.strerror is None:
            raise  # not about a file: a bug, keep the traceback
        err_console.print(f"[bold red]error:[/] {markup_safe(f'{exc.strerror}: {exc.filename}', None)}"
                          " (check the path and its permissions)", soft_wrap=True)
        return 2


def entry() -> None:  # console_script
    sys.exit(main())
