"""ARQMath-3 Task 3 runs as the official scripts read them: Python's ``csv.reader`` with a tab
delimiter and the default (``excel``) quoting.

Why: both official scripts open the run with ``csv.reader(csv_file, delimiter='\\t')``
(approach0/pya0 f2852c9, eval-arqmath3/task3/evaluate_task3_results_manual.py, lines 17-21;
ARQMath-3's evaluate_task3_results_automatic.py, read_task3_result_file). With the default
quoting, a field that *begins* with ``"`` is a quoted field: it runs over tabs and newlines
until the next ``"``, so an answer that begins with an unmatched ``"`` swallows the lines
after it and their topics disappear from the run. A quoted field that closes on its line is
still read differently from what is written (CPython's Modules/_csv.c, parse_process_char,
states IN_QUOTED_FIELD and QUOTE_IN_QUOTED_FIELD, ``strict`` off): the enclosing quotes are
dropped, ``""`` inside is one ``"``, text after the closing quote is appended as it is, a tab
inside the quotes is part of the field. A ``"`` that does not begin a field is a plain
character, so a line is read as written exactly when none of its tab-separated fields begins
with ``"``. The evaluator reads Task 3 runs this way (and scores what the scripts score);
the validator names every line that will be swallowed and every field that will be misread.
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


@dataclass(frozen=True)
class Misread:
    """A record of one line that the official reading takes differently from what is written."""

    line: int
    topic: str
    column: int  # 1-based: the first written field that begins with "
    written: list[str]  # the line split at its tabs
    read: list[str]  # csv.reader's fields


class CsvStop(Exception):
    """csv.reader raised: the official scripts stop there (a NUL byte, a field over its size limit)."""

    def __init__(self, line: int, reason: str) -> None:
        super().__init__(reason)
        self.line, self.reason = line, reason


#: csv's default cell limit (``_csv.field_size_limit()`` of a fresh interpreter), which the
#: official scripts keep: evaluate_task3_results_manual.py never changes it. Our process may run
#: with a larger one (sharedtask.formats.formulas raises it for long formulae), and csv's limit is
#: global, so the official one is checked here on each record rather than set.
OFFICIAL_FIELD_LIMIT = 128 * 1024


def _lines_in(text: str) -> int:
    """Line ends in ``text`` as the reader's file iteration counts them (\n, \r\n, a lone \r)."""
    return text.count("\n") + text.count("\r") - text.count("\r\n")


def _over_limit(fields: list[str], first: int) -> CsvStop | None:
    """Where csv.reader under the official limit raises on this record: it refuses the character
    that would make a field longer than the limit (Modules/_csv.c, parse_add_char)."""
    for k, value in enumerate(fields):
        if len(value) > OFFICIAL_FIELD_LIMIT:
            before = "\t".join(fields[:k]) + value[:OFFICIAL_FIELD_LIMIT + 1]
            return CsvStop(first + _lines_in(before), f"field larger than field limit ({OFFICIAL_FIELD_LIMIT})")
    return None


class _Tracked:
    """The physical lines ``csv.reader`` consumes, from the start of the current record on.

    Why: a run is a stranger's file; keeping only the current record's lines (a field is at
    most ``OFFICIAL_FIELD_LIMIT`` long for the scripts) bounds memory, and ``max_chars``
    bounds the reading (the validator passes the task's ``max_run_bytes``; issue 26)."""

    def __init__(self, handle: Iterator[str], max_chars: int | None) -> None:
        self.handle, self.max_chars = handle, max_chars
        self.lines: list[str] = []
        self.read = 0

    def __iter__(self) -> "_Tracked":
        return self

    def __next__(self) -> str:
        line = next(self.handle)
        self.read += len(line)
        if self.max_chars is not None and self.read > self.max_chars:
            raise StopIteration
        self.lines.append(line)
        return line


def _records(path: Path, max_chars: int | None = None) -> Iterator[tuple[CsvRow, list[str]]]:
    """Each record under the official reading with the physical lines it spans (the lines
    csv.reader iterates over: \\n, \\r\\n or \\r), streamed; :class:`CsvStop` where csv.reader raises."""
    if csv.field_size_limit() < OFFICIAL_FIELD_LIMIT:
        csv.field_size_limit(OFFICIAL_FIELD_LIMIT)  # a lower limit would stop where the scripts go on
    with open_text(path) as handle:
        tracked = _Tracked(handle, max_chars)
        reader = csv.reader(tracked, delimiter="\t")
        last = 0
        try:
            for fields in reader:
                stop = _over_limit(fields, last + 1)
                if stop is not None:
                    raise stop
                physical, tracked.lines = tracked.lines, []
                yield CsvRow(fields, last + 1, reader.line_num), physical
                last = reader.line_num
        except csv.Error as exc:
            raise CsvStop(max(reader.line_num, last + 1), str(exc)) from None


def csv_rows(path: Path) -> Iterator[CsvRow]:
    """The run's records under the official reading (``csv.reader``, tab, default quoting, csv's
    default field limit); :class:`CsvStop` where csv.reader raises (the official scripts stop there)."""
    for row, _ in _records(path):
        yield row


def _strip_newline(line: str) -> str:
    return line[:-2] if line.endswith("\r\n") else line[:-1] if line.endswith(("\n", "\r")) else line


def _taken(row: CsvRow, physical: list[str]) -> Swallowed | None:
    """The non-blank lines after the first that ``row`` spans (``physical``), with the topic written on each."""
    taken = [(row.first_line + i, line.split("\t", 1)[0].strip()) for i, line in enumerate(physical[1:], 1)
             if line.strip()]
    return Swallowed(row.topic or "", row.first_line, taken) if taken else None


def _misread(row: CsvRow, physical: list[str]) -> Misread | None:
    if not physical:
        return None
    written = _strip_newline(physical[0]).split("\t")
    if row.fields == written or (not row.fields and written == [""]):
        return None  # read as written (a blank line is no record for csv)
    column = next((i + 1 for i, f in enumerate(written) if f.startswith('"')), len(written))
    return Misread(row.first_line, written[0], column, written, row.fields)


def iter_quoting(path: Path, max_chars: int | None = None) -> Iterator[Swallowed | Misread]:
    """:func:`quoting`'s swallowing and misread records as they come, in one streaming pass;
    raises :class:`CsvStop` at the end where csv.reader stops."""
    for row, physical in _records(path, max_chars):
        taken = _taken(row, physical)
        if taken is not None:
            yield taken
            continue
        misread = _misread(row, physical)
        if misread is not None:
            yield misread


def quoting(path: Path, max_chars: int | None = None) -> tuple[list[Swallowed], list[Misread], CsvStop | None]:
    """Every way the official reading departs from the written lines: records that swallow the
    following lines, records read otherwise than written (a field that begins with ``"``), and
    where csv.reader stops (then the lists cover what it read before)."""
    taken_all: list[Swallowed] = []
    misread: list[Misread] = []
    stop: CsvStop | None = None
    try:
        for found in iter_quoting(path, max_chars):
            (taken_all if isinstance(found, Swallowed) else misread).append(found)
    except CsvStop as exc:
        stop = exc
    return taken_all, misread, stop
