"""Showing text that a submission wrote (logs, run lines, names) without trusting it.

A container's output reaches the organizer's terminal, the run record and the
HTML report. Two things in it must not act on the way: terminal control
sequences (ESC, BEL, backspace, carriage return can repaint or hide what the
organizer sees) and rich's console markup (``[bold``, ``[/]`` are read as tags
and can raise ``MarkupError``). See docs/threat-model.md.
"""

from __future__ import annotations

import re

#: C0 controls except tab, DEL, and the C1 controls (ESC [ is also U+009B "CSI").
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f]")
#: What a single shown line may hold at most; the rest is cut with a marker.
MAX_SHOWN = 400


def _escape_char(match: re.Match[str]) -> str:
    return f"\\x{ord(match.group()):02x}"


def printable(text: str, limit: int | None = MAX_SHOWN, *, keep_newlines: bool = False) -> str:
    """``text`` with every control character shown as ``\\xNN`` and cut to ``limit`` characters."""
    if keep_newlines:
        return "\n".join(printable(line, None) for line in text.split("\n"))[: limit or None]
    shown = _CONTROL.sub(_escape_char, text)
    if limit is not None and len(shown) > limit:
        return f"{shown[:limit]}… ({len(shown) - limit} more characters)"
    return shown


def markup_safe(text: str, limit: int | None = MAX_SHOWN, *, keep_newlines: bool = False) -> str:
    """``printable(text)`` escaped for rich markup, for use inside a markup string."""
    from rich.markup import escape  # lazily: the CLI imports this module on every start

    return escape(printable(text, limit, keep_newlines=keep_newlines))
