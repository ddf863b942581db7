"""A rich progress bar for byte counts (downloads, copies, checksums), on stderr."""

from __future__ import annotations

from contextlib import contextmanager
from typing import TYPE_CHECKING, Callable, Iterator

if TYPE_CHECKING:
    from rich.progress import ProgressColumn


def byte_columns() -> list[ProgressColumn]:
    """Done/total and speed in binary units, as every other size the tool prints (sharedtask.units).

    Why: rich's DownloadColumn and TransferSpeedColumn default to decimal units (kB, MB), so one
    screen showed "12.3 MB" next to a limit of "512 MiB" (issue 40).
    """
    from rich.progress import DownloadColumn, ProgressColumn
    from rich.text import Text

    from sharedtask.units import format_size

    class BinarySpeedColumn(ProgressColumn):
        def render(self, task) -> Text:  # type: ignore[no-untyped-def]  # rich's Task
            speed = task.finished_speed or task.speed
            return Text("?" if speed is None else f"{format_size(int(speed))}/s", style="progress.data.speed")

    return [DownloadColumn(binary_units=True), BinarySpeedColumn()]


@contextmanager
def byte_progress(description: str, total: int | None, *, done: int = 0,
                  enabled: bool = True) -> Iterator[Callable[[int], None]]:
    """Yield ``advance(n)``; the bar disappears when finished (stderr stays readable in logs)."""
    if not enabled:
        yield lambda n: None
        return
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

    console = Console(stderr=True)
    with Progress(TextColumn("{task.description}"), BarColumn(), *byte_columns(),
                  TimeRemainingColumn(), console=console, transient=True,
                  disable=not console.is_terminal) as bar:
        task = bar.add_task(description, total=total, completed=done)
        yield lambda n: bar.advance(task, n)
