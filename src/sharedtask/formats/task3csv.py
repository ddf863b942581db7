"""ARQMath-3 Task 3 runs as the official scripts read them: Python's ``csv.reader`` with a tab
delimiter and the default (``excel``) quoting.

Why: both official scripts open the run with ``csv.reader(csv_file, delimiter='\\t')``
(approach0/pya0 f2852c9, eval-arqmath3/task3/evaluate_task3_results_manual.py, lines 17-21;
ARQMath-3's evaluate_task3_results_automatic.py, read_task3_result_file). With the default
quoting, a field that *begins* with ``"`` is a quoted field: it runs over tabs and newlines
until the next ``"``, so an answer that begins with an unmatched ``"`` swallows the lines
after it and their topics disappear from the run. A ``"`` elsewhere in a field is a plain
character. The evaluator reads Task 3 runs this way (and scores what the scripts score);
the validator names every line that will be swallowed.
"""

from __future__ import annotations

import csv
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from sharedtask.formats._io import open_text


@dataclass(frozen=True)
class CsvRow:
    """One record of the official reading and the physical lines it spans."""

    fields: list[str]
    first_line: int
    last_line: int

    @property
    def topic(self) -> str | None:
        return self.fields[0] if self.fields else None


@dataclass(frozen=True)
class Swallowed:
    """A record whose quoted field ran over the end of its line, and what it took along."""

    topic: str
    line: int
    lines: list[tuple[int, str]]  # (line number, topic written at the start of that line)


def csv_rows(path: Path) -> Iterator[CsvRow]:
    """The run's records under the official reading (``csv.reader``, tab, default quoting)."""
    with open_text(path) as handle:
        reader = csv.reader(handle, delimiter="\t")
        last = 0
        for fields in reader:
            yield CsvRow(fields, last + 1, reader.line_num)
            last = reader.line_num


def swallowed(path: Path) -> list[Swallowed]:
    """Every record that spans several lines, with the lines (and their topics) it absorbs."""
    return list(iter_swallowed(path))


class _Tracked:
    """The physical lines ``csv.reader`` consumes, from the start of the current record on.

    Why: the validator reads hostile runs; keeping only the current record's lines (a field
    is at most ``csv.field_size_limit()``) bounds memory, and ``max_bytes`` bounds the reading."""

    def __init__(self, handle: Iterator[str], max_bytes: int | None) -> None:
        self.handle, self.max_bytes = handle, max_bytes
        self.lines: list[str] = []
        self.read = 0

    def __iter__(self) -> "_Tracked":
        return self

    def __next__(self) -> str:
        line = next(self.handle)
        self.read += len(line)
        if self.max_bytes is not None and self.read > self.max_bytes:
            raise StopIteration
        self.lines.append(line)
        return line


def iter_swallowed(path: Path, max_bytes: int | None = None) -> Iterator[Swallowed]:
    """:func:`swallowed` in one streaming pass, reading at most ``max_bytes`` characters.

    The lines csv.reader iterates over (split at \\n, \\r\\n or \\r) are the physical lines."""
    with open_text(path) as handle:
        tracked = _Tracked(handle, max_bytes)
        reader = csv.reader(tracked, delimiter="\t")
        last = 0
        for fields in reader:
            first, last = last + 1, reader.line_num
            physical, tracked.lines = tracked.lines, []
            if last <= first:
                continue
            taken = [(first + i, line.split("\t", 1)[0].strip()) for i, line in enumerate(physical[1:], 1)
                     if line.strip()]
            if taken:
                yield Swallowed(fields[0] if fields else "", first, taken)
