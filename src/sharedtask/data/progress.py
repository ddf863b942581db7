"""A rich progress bar for byte counts (downloads, copies, checksums), on stderr."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Callable, Iterator


@contextmanager
def byte_progress(description: str, total: int | None, *, done: int = 0,
                  enabled: bool = True) -> Iterator[Callable[[int], None]]:
    """Yield ``advance(n)``; the bar disappears when finished (stderr stays readable in logs)."""
    if not enabled:
        yield lambda n: None
        return
    from rich.console import Console
    from rich.progress import (BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn,
                               TransferSpeedColumn)

    console = Console(stderr=True)
    with Progress(TextColumn("{task.description}"), BarColumn(), DownloadColumn(), TransferSpeedColumn(),
                  TimeRemainingColumn(), console=console, transient=True,
                  disable=not console.is_terminal) as bar:
        task = bar.add_task(description, total=total, completed=done)
        yield lambda n: bar.advance(task, n)
