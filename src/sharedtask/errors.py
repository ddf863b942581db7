"""User-facing errors.

Everything a user can cause (a bad file, an unknown task, a missing directory)
raises a subclass of :class:`SharedTaskError`; the CLI prints it as one line and
exits with code 2. Anything else is a bug and may show a traceback.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable


class SharedTaskError(Exception):
    """An error the user can fix; ``str()`` is the one line the CLI prints."""

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message if not self.hint else f"{self.message} ({self.hint})"


def choices_hint(name: str, known: Iterable[str], what: str) -> str:
    """``did you mean 'x'? known WHAT: a, b, c``: the near miss first, then every choice.

    Why: a newcomer's typo (``touche-2021-tsak1``, ``ndgc@10``) should not make them read a
    list of twenty ids. The match is difflib's ratio (stdlib) on lower case, so a wrongly
    cased id is offered too, else the first choice the name begins; nothing is matched
    loosely, only suggested.
    """
    choices = list(known)
    lowered = {c.lower(): c for c in choices}
    close = difflib.get_close_matches(name.lower(), list(lowered), n=1, cutoff=0.6) or \
        [c for c in lowered if name and c.startswith(name.lower())][:1]  # "ndcg" for "ndcg_prime"
    lead = f"did you mean {lowered[close[0]]!r}? " if close else ""
    return f"{lead}known {what}: {', '.join(choices) or 'none'}"


@dataclass(frozen=True)
class Location:
    """Where in a file something was found: 1-based line/column, or a record index."""

    path: str
    line: int | None = None
    column: int | None = None
    record: str | None = None

    def __str__(self) -> str:
        out = self.path
        if self.line is not None:
            out += f":{self.line}"
            if self.column is not None:
                out += f":{self.column}"
        if self.record is not None:
            out += f" ({self.record})"
        return out


class FormatError(SharedTaskError):
    """A file does not follow its official format.

    Carries the location and what was expected so that the message reads
    ``run.txt:17:3: expected an integer rank, found 'x' (hint)``.
    """

    def __init__(
        self,
        path: str | Path,
        message: str,
        *,
        line: int | None = None,
        column: int | None = None,
        record: str | None = None,
        hint: str | None = None,
    ) -> None:
        self.location = Location(str(path), line, column, record)
        self.detail = message
        super().__init__(f"{self.location}: {message}", hint)

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        # Keyword-only arguments: the default pickling (``cls(*args)``) cannot rebuild
        # this, and errors of a reader in a worker process must arrive whole.
        loc = self.location
        return _format_error, (loc.path, self.detail, loc.line, loc.column, loc.record, self.hint)


def _format_error(path: str, message: str, line: int | None, column: int | None, record: str | None,
                  hint: str | None) -> FormatError:
    return FormatError(path, message, line=line, column=column, record=record, hint=hint)


class SpecError(SharedTaskError):
    """A task spec (YAML) is broken: names the file and the path inside it."""


class UnknownTaskError(SharedTaskError):
    """A task id that no spec declares."""
