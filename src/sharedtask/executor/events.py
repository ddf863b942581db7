"""A long-running process's event log: one event per line, ``key=value`` (logfmt), never wrapped.

Why: a worker's or a service's output goes to a log file or journald, not to an 80-column
terminal; an event cut in two by a wrap can no longer be found by ``grep`` or by a test. Each
line is ``<UTC time> <event> key=value ...``; values with spaces or quotes are JSON strings.
:func:`parse` reads a line back, so tests and tools match events, not prose.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import re
import sys
from typing import Any, TextIO

logger = logging.getLogger("sharedtask.events")
_PAIR = re.compile(r'(\w[\w.-]*)=("(?:[^"\\]|\\.)*"|\S*)')


def _value(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))
    if text == "" or any(c.isspace() or c in '"=\\' for c in text):
        return json.dumps(text, ensure_ascii=False)
    return text


def format_event(event: str, **fields: Any) -> str:
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return " ".join([stamp, event, *(f"{key}={_value(value)}" for key, value in fields.items())])


def emit(event: str, **fields: Any) -> None:
    """Log one event (at INFO) to the handlers :func:`configure` set up."""
    logger.info("%s", format_event(event, **fields))


def configure(stream: TextIO | None = None) -> None:
    """Send events to ``stream`` (default stderr), each flushed as its own line; idempotent."""
    target = stream or sys.stderr
    for handler in list(logger.handlers):
        if getattr(handler, "_sharedtask_events", False):
            logger.removeHandler(handler)
    handler = logging.StreamHandler(target)
    handler.setFormatter(logging.Formatter("%(message)s"))
    handler._sharedtask_events = True  # type: ignore[attr-defined]
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False


def parse(line: str) -> dict[str, str] | None:
    """``{"time": ..., "event": ..., key: value}`` of an event line, or None for any other line."""
    head = line.strip().split(" ", 2)
    if len(head) < 2 or not re.fullmatch(r"\d{4}-\d\d-\d\dT[\d:.]+Z", head[0]):
        return None
    out = {"time": head[0], "event": head[1]}
    for key, raw in _PAIR.findall(head[2] if len(head) > 2 else ""):
        out[key] = json.loads(raw) if raw.startswith('"') else raw
    return out


def events(text: str, event: str | None = None) -> list[dict[str, str]]:
    """Every event in a log's text (of one kind when ``event`` is given), in order."""
    found = (parse(line) for line in text.splitlines())
    return [e for e in found if e is not None and (event is None or e["event"] == event)]
