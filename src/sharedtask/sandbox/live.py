"""Rich output for sandbox runs: a live panel while the container runs, a summary after."""

from __future__ import annotations

import threading
from collections import deque
from typing import Any

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from sharedtask.sandbox.api import SandboxRun
from sharedtask.units import format_size
from sharedtask.untrusted import markup_safe, printable
from sharedtask.sandbox.runner import (
    FAILED,
    INTERRUPTED,
    OOM,
    OUTPUT_LIMIT,
    DISK_LIMIT,
    SUCCESS,
    TIMEOUT,
    RunRequest,
    RunResult,
    Snapshot,
)

STATUS_STYLE = {SUCCESS: "bold green", FAILED: "bold red", TIMEOUT: "bold red", OOM: "bold red",
                OUTPUT_LIMIT: "bold red", DISK_LIMIT: "bold red", INTERRUPTED: "bold yellow"}
VERDICT_STYLE = {"valid": "green", "invalid": "bold red", "error": "red"}


class LiveObserver:
    """Shows elapsed time, memory, output size and the log tail while a run goes on."""

    def __init__(self, console: Console, tail_lines: int = 12) -> None:
        self.console = console
        self._lock = threading.Lock()
        self._tail: deque[str] = deque(maxlen=tail_lines)
        self._snapshot: Snapshot | None = None
        self._title = ""
        self._live: Live | None = None

    def started(self, request: RunRequest, container_id: str) -> None:
        self._title = f"{markup_safe(request.image)}  [dim]container {container_id[:12]}[/]"
        if self.console.is_terminal:
            self._live = Live(get_renderable=self._render, console=self.console,
                              refresh_per_second=4, transient=True)
            self._live.start()

    def log(self, stream: str, line: str) -> None:
        with self._lock:
            self._tail.append(printable(line if stream == "stdout" else f"[stderr] {line}", 300))

    def tick(self, snapshot: Snapshot) -> None:
        with self._lock:
            self._snapshot = snapshot

    def finished(self, result: RunResult) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None

    def _render(self) -> RenderableType:
        with self._lock:
            snap, lines = self._snapshot, list(self._tail)
        if snap is None:
            head = Text("starting…")
        else:
            head = Text.assemble(
                ("running ", "bold cyan"), f"{snap.elapsed:.1f} s / {snap.timeout:g} s",
                ("  mem ", "bold"), f"{format_size(snap.memory_current)} (peak {format_size(snap.memory_peak)})"
                f" / {format_size(snap.memory_limit)}",
                ("  out ", "bold"), f"{format_size(snap.output_bytes)} / {format_size(snap.output_limit)}",
            )
        body = Text("\n".join(lines) or "(no output yet)", style="dim", no_wrap=True, overflow="ellipsis")
        return Panel(Group(head, body), title=self._title, title_align="left",
                     subtitle="Ctrl-C stops and removes the container", subtitle_align="right")


def summary(outcome: SandboxRun, tail_lines: int = 10) -> RenderableType:
    """The end-of-run report: status in plain words, limits, where everything is."""
    res = outcome.result
    limits = outcome.request.policy.limits
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold", no_wrap=True)
    table.add_column(overflow="fold")
    table.add_row("status", Text(printable(f"{res.status}: {res.message}"), style=STATUS_STYLE.get(res.status, "")))
    table.add_row("exit code", str(res.exit_code))
    table.add_row("wall time", f"{res.wall_seconds:.2f} s (limit {limits.timeout:g} s)")
    table.add_row("peak memory", f"{format_size(res.peak_memory)} of {format_size(limits.memory)}"
                  f"  [dim]({res.peak_memory_source})[/]")
    table.add_row("output", f"{format_size(res.output_bytes)} of {format_size(limits.max_output)}, "
                  f"{res.output_entries:,} entries of {limits.max_output_entries:,}, in {outcome.request.output_dir}"
                  f"  [dim]({res.output_enforcement})[/]")
    table.add_row("disk", (f"{format_size(res.disk_bytes)} of {format_size(limits.disk)}" if res.disk_bytes is not None
                           else f"limit {format_size(limits.disk)}") + f"  [dim]({res.disk_enforcement})[/]")
    verdict = outcome.validation.get("status", "?")
    reason = outcome.validation.get("reason")
    report = outcome.validation.get("report")
    if isinstance(report, dict) and isinstance(report.get("counts"), dict):
        counts = report["counts"]
        reason = ", ".join(f"{n} {kind}{'s' if n != 1 else ''}" for kind, n in counts.items() if n)
        first = [f for f in report.get("findings", []) if f.get("severity") == "error"][:3]
        if first:
            reason += "; " + "; ".join(f"{f.get('code')}: {f.get('message')}" for f in first)
    table.add_row("validation", Text(printable(verdict + (f" ({reason})" if reason else ""), 1200),
                                     style=VERDICT_STYLE.get(verdict, "yellow")))
    table.add_row("network", outcome.request.policy.network or "none")
    table.add_row("logs", f"{res.stdout_path}  {res.stderr_path}")
    table.add_row("record", str(outcome.record_path))
    parts: list[RenderableType] = [table]
    tail = res.log_tail[-tail_lines:]
    if tail:
        parts.append(Panel(Text("\n".join(printable(line, 300) for line in tail), no_wrap=True, overflow="ellipsis"),
                           title="log tail", title_align="left", border_style="dim"))
    return Group(*parts)


def render_json(outcome: SandboxRun) -> dict[str, Any]:
    """What ``--json`` prints: the run record plus its own path."""
    return {**outcome.record, "record_path": str(outcome.record_path)}
