"""TREC-style runs (TREC, ARQMath Tasks 1-3) and qrels: streaming readers, bulk loaders, writers.

Column layouts and the lenient variants follow ``docs/formats.md``:

* ``trec``           ``qid Q0 docno rank score tag`` (Touché; spaces or tabs)
* ``arqmath-task1``  ``Topic_Id Post_Id Rank Score Run_Tag``; *lenient*: the 6-column TREC
  form with ``Q0`` in column 2 is accepted too (the official scripts did), and counted in
  :attr:`RunReader.q0_lines` so that a validator can warn about it
* ``arqmath-task2``  ``Topic_Id Formula_Id Post_Id Rank Score Run_Tag``
* ``arqmath-task3``  ``Topic_Id Rank Score Run_Tag Sources Answer``, tab separated only
  (the answer may contain spaces)
* ``auto``           detected from the first non-blank line (:func:`detect_layout`)

Identifiers stay strings exactly as written (runs, qrels and the formula index are
joined on them); rank is an ``int`` and score a ``float`` (``nan`` passes, as in TIRA's
check). Blank lines are skipped and counted; everything else malformed raises
:class:`~sharedtask.errors.FormatError` with the line and column.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from itertools import chain
from operator import itemgetter
from typing import IO, Literal, NamedTuple

from sharedtask.errors import FormatError
from sharedtask.formats.layouts import BY_SHORT
from sharedtask.formats._io import (
    DECODE_ERRORS,
    PathLike,
    atomic_text_writer,
    decode_error,
    open_text,
)

Layout = Literal["trec", "arqmath-task1", "arqmath-task2", "arqmath-task3"]
LAYOUTS: tuple[str, ...] = tuple(BY_SHORT)

#: Column names per layout, for error messages and documentation.
COLUMNS: dict[str, str] = {short: layout.column_text() for short, layout in BY_SHORT.items()}

# Column 2 of a TREC run: trec_eval ignores it; "Q0" is the convention, "0" is common.
_Q0 = frozenset({"Q0", "q0", "0"})


class RunRow(NamedTuple):
    """One line of a run. ``doc`` is the docno / post id (Task 1) / formula id (Task 2);
    Task 3 rows have ``doc == ""`` and carry ``sources`` and ``answer`` instead."""

    topic: str
    doc: str
    rank: int
    score: float
    tag: str
    line: int
    post_id: str | None = None
    sources: str | None = None
    answer: str | None = None


class Qrel(NamedTuple):
    """One relevance judgement ``topic iteration doc rel``."""

    topic: str
    iteration: str
    doc: str
    rel: int
    line: int


# ---------------------------------------------------------------- helpers for errors

_FIELD = re.compile(r"\S+")


def _column_of(line: str, index: int, sep: str | None = None) -> int | None:
    """1-based character column where field ``index`` starts (error path only)."""
    if sep is None:
        for i, m in enumerate(_FIELD.finditer(line)):
            if i == index:
                return m.start() + 1
        return None
    pos = 0
    for _ in range(index):
        pos = line.find(sep, pos)
        if pos < 0:
            return None
        pos += 1
    return pos + 1


def _columns_error(path: PathLike, line: str, lineno: int, layout: str, found: int) -> FormatError:
    expected = len(COLUMNS[layout].split())
    extra = ""
    if layout == "arqmath-task1":
        extra = " (or 6 with Q0 in column 2)"
    if line.lstrip().startswith("#"):
        return FormatError(path, "comment lines are not allowed in a run", line=lineno,
                           hint="remove the line; TIRA's run check rejects '#' lines")
    sep = "tab-separated " if layout == "arqmath-task3" else ""
    return FormatError(
        path,
        f"expected {expected} {sep}columns `{COLUMNS[layout]}`{extra}, found {found}",
        line=lineno,
        hint=("Task 3 runs are tab separated; the answer is the last column"
              if layout == "arqmath-task3" else "columns are separated by spaces or tabs"),
    )


def _int_error(path: PathLike, what: str, value: str, line: str, lineno: int, index: int,
               sep: str | None = None) -> FormatError:
    return FormatError(path, f"expected an integer {what}, found {value!r}", line=lineno,
                       column=_column_of(line, index, sep))


def _float_error(path: PathLike, value: str, line: str, lineno: int, index: int,
                 sep: str | None = None) -> FormatError:
    return FormatError(path, f"expected a numeric score, found {value!r}", line=lineno,
                       column=_column_of(line, index, sep), hint="write scores like 12.5 or 1e-3")


# ---------------------------------------------------------------- layout detection


def detect_layout(line: str) -> str:
    """Guess the run layout from one line.

    ARQMath topic ids say the task (``B.x`` = Task 2, ``A.x`` = Task 1 or 3, see
    docs/formats.md); otherwise the column count decides.
    """
    parts = line.split()
    if not parts:
        raise ValueError("cannot detect the layout of a blank line")
    topic = parts[0]
    n = len(parts)
    if topic.startswith("B."):
        return "arqmath-task2"
    if topic.startswith("A."):
        if n == 5 or (n == 6 and parts[1] in _Q0):
            return "arqmath-task1"
        if len(line.rstrip("\r\n").split("\t")) >= 6:
            return "arqmath-task3"
        return "arqmath-task1"
    if n == 5:
        return "arqmath-task1"
    if n == 6 and parts[1] not in _Q0 and parts[1].isdigit() and parts[2].isdigit():
        return "arqmath-task2"
    return "trec"


def _head(f: IO[str]) -> tuple[list[str], str | None]:
    """Read up to the first non-blank line; return the lines read and that line."""
    head: list[str] = []
    for line in f:
        head.append(line)
        if line.strip():
            return head, line
    return head, None


# ---------------------------------------------------------------- streaming reader


class RunReader:
    """Iterate the rows of a run; afterwards tells which variant the file used.

    Attributes (complete once iteration has finished):
    ``layout`` (resolved, also for ``auto``), ``q0_lines`` (Task 1 lines in the lenient
    6-column form), ``blank_lines``, ``rows``.
    """

    def __init__(self, path: PathLike, layout: str = "auto") -> None:
        if layout != "auto" and layout not in LAYOUTS:
            raise ValueError(f"unknown run layout {layout!r}; expected one of {LAYOUTS} or 'auto'")
        self.path = path
        self.requested = layout
        self.layout: str | None = None if layout == "auto" else layout
        self.q0_lines = 0
        self.blank_lines = 0
        self.rows = 0

    @property
    def lenient_q0(self) -> bool:
        """True if some Task 1 lines used the 6-column form with Q0."""
        return self.q0_lines > 0

    def __iter__(self) -> Iterator[RunRow]:
        self.q0_lines = self.blank_lines = self.rows = 0
        lineno = 0
        with open_text(self.path) as f:
            try:
                head, first = _head(f)
                lineno = len(head)
                if first is None:
                    self.blank_lines = len(head)
                    return
                layout = self.layout if self.layout else detect_layout(first)
                self.layout = layout
                lines = chain(head, f)
                parse = getattr(self, "_" + layout.replace("-", "_"))
                for lineno, row in parse(lines):  # noqa: B007 - lineno used on decode errors
                    self.rows += 1
                    yield row
            except DECODE_ERRORS as exc:
                raise decode_error(self.path, exc, line=lineno + 1 if lineno else None) from None

    # One loop per layout: these are the hot paths, so no per-line dispatch.

    def _trec(self, lines: Iterable[str], start: int = 1) -> Iterator[tuple[int, RunRow]]:
        path = self.path
        for lineno, line in enumerate(lines, start):
            parts = line.split()
            if len(parts) != 6:
                if not parts:
                    self.blank_lines += 1
                    continue
                raise _columns_error(path, line, lineno, "trec", len(parts))
            topic, _q0, doc, rank, score, tag = parts
            try:
                r = int(rank)
            except ValueError:
                raise _int_error(path, "rank", rank, line, lineno, 3) from None
            try:
                s = float(score)
            except ValueError:
                raise _float_error(path, score, line, lineno, 4) from None
            yield lineno, RunRow(topic, doc, r, s, tag, lineno)

    def _arqmath_task1(self, lines: Iterable[str], start: int = 1) -> Iterator[tuple[int, RunRow]]:
        path = self.path
        for lineno, line in enumerate(lines, start):
            parts = line.split()
            n = len(parts)
            if n == 5:
                topic, doc, rank, score, tag = parts
                off = 1
            elif n == 6:
                # lenient: 6-column TREC form (docs/formats.md, ARQMath runs)
                if parts[1] not in _Q0:
                    raise FormatError(
                        path, f"a 6-column Task 1 line needs Q0 in column 2, found {parts[1]!r}",
                        line=lineno, column=_column_of(line, 1),
                        hint="write `Topic_Id Post_Id Rank Score Run_Tag` (5 tab-separated columns)")
                topic, _q0, doc, rank, score, tag = parts
                off = 2
                self.q0_lines += 1
            else:
                if not parts:
                    self.blank_lines += 1
                    continue
                raise _columns_error(path, line, lineno, "arqmath-task1", n)
            try:
                r = int(rank)
            except ValueError:
                raise _int_error(path, "rank", rank, line, lineno, off + 1) from None
            try:
                s = float(score)
            except ValueError:
                raise _float_error(path, score, line, lineno, off + 2) from None
            yield lineno, RunRow(topic, doc, r, s, tag, lineno)

    def _arqmath_task2(self, lines: Iterable[str], start: int = 1) -> Iterator[tuple[int, RunRow]]:
        path = self.path
        for lineno, line in enumerate(lines, start):
            parts = line.split()
            if len(parts) != 6:
                if not parts:
                    self.blank_lines += 1
                    continue
                raise _columns_error(path, line, lineno, "arqmath-task2", len(parts))
            topic, formula, post, rank, score, tag = parts
            try:
                r = int(rank)
            except ValueError:
                raise _int_error(path, "rank", rank, line, lineno, 3) from None
            try:
                s = float(score)
            except ValueError:
                raise _float_error(path, score, line, lineno, 4) from None
            yield lineno, RunRow(topic, formula, r, s, tag, lineno, post)

    def _arqmath_task3(self, lines: Iterable[str], start: int = 1) -> Iterator[tuple[int, RunRow]]:
        path = self.path
        for lineno, line in enumerate(lines, start):
            text = line.rstrip("\r\n")
            parts = text.split("\t", 5)
            if len(parts) != 6:
                if not text.strip():
                    self.blank_lines += 1
                    continue
                raise _columns_error(path, text, lineno, "arqmath-task3", len(parts))
            topic, rank, score, tag, sources, answer = parts
            topic, tag = topic.strip(), tag.strip()
            try:
                r = int(rank)
            except ValueError:
                raise _int_error(path, "rank", rank, text, lineno, 1, "\t") from None
            try:
                s = float(score)
            except ValueError:
                raise _float_error(path, score, text, lineno, 2, "\t") from None
            if not topic or not tag:
                raise FormatError(path, "empty Topic_Id or Run_Tag", line=lineno,
                                  hint=f"columns: {COLUMNS['arqmath-task3']}")
            yield lineno, RunRow(topic, "", r, s, tag, lineno, None, sources.strip(), answer)


def read_run(path: PathLike, layout: str = "auto") -> RunReader:
    """Stream a run file as :class:`RunRow` records (see the module doc for layouts)."""
    return RunReader(path, layout)


# ---------------------------------------------------------------- bulk loader for evaluation


def load_run_dict(
    path: PathLike, layout: str = "auto", *, on_duplicate: Literal["first", "last", "error"] = "first"
) -> dict[str, dict[str, float]]:
    """Load a run as ``{topic: {doc: score}}``, the shape pytrec_eval wants.

    Split-based and record-free because evaluation of 10M-line runs must stay close
    to pytrec_eval's own speed. Duplicates of (topic, doc): ``first`` keeps the first
    occurrence (the ARQMath procedure, docs/evaluation.md), ``last`` mimics
    building the dict naively, ``error`` refuses like trec_eval does. For Task 2 the
    doc is the formula id. Task 3 runs have no doc ids: use :func:`read_run`.
    """
    if on_duplicate not in ("first", "last", "error"):
        raise ValueError(f"on_duplicate must be first, last or error, not {on_duplicate!r}")
    run: dict[str, dict[str, float]] = {}
    lineno = 0
    with open_text(path) as f:
        try:
            head, first = _head(f)
            if first is None:
                return run
            if layout == "auto":
                layout = detect_layout(first)
            if layout not in LAYOUTS:
                raise ValueError(f"unknown run layout {layout!r}")
            if layout == "arqmath-task3":
                raise FormatError(path, "a Task 3 run has no document ids to load as a score dict",
                                  hint="use read_run() for Task 3 runs")
            # (topic, doc, rank, score) column indices for the expected column count
            if layout == "arqmath-task1":
                ncols, pick = 5, itemgetter(0, 1, 2, 3)
            elif layout == "arqmath-task2":
                ncols, pick = 6, itemgetter(0, 1, 3, 4)
            else:
                ncols, pick = 6, itemgetter(0, 2, 3, 4)
            keep_first = on_duplicate == "first"
            check = on_duplicate == "error"
            run_get = run.get
            f.seek(0)  # re-read the head in the main loop: cheaper than chaining every line
            for lineno, line in enumerate(f, 1):
                parts = line.split()
                if len(parts) != ncols:
                    if not parts:
                        continue
                    parts = _slow_parts(path, line, lineno, layout, parts)
                topic, doc, rank, score = pick(parts)
                try:
                    value = float(score)
                    if not rank.isdigit():  # isdigit is much cheaper than int() on the hot path
                        int(rank)
                except ValueError:
                    _slow_parts(path, line, lineno, layout, parts, full=True)
                    raise  # pragma: no cover - _slow_parts raises the precise error
                docs = run_get(topic)
                if docs is None:
                    docs = run[topic] = {}
                if doc in docs:
                    if keep_first:
                        continue
                    if check:
                        raise FormatError(path, f"duplicate document {doc!r} for topic {topic!r}",
                                          line=lineno, hint="trec_eval refuses runs with duplicates")
                docs[doc] = value
        except DECODE_ERRORS as exc:
            raise decode_error(path, exc, line=lineno + 1) from None
    return run


def _slow_parts(path: PathLike, line: str, lineno: int, layout: str, parts: list[str],
                full: bool = False) -> list[str]:
    """Error path and Task 1 6-column path of :func:`load_run_dict`: reuse the reader's checks."""
    reader = RunReader(path, layout)
    parse = getattr(reader, "_" + layout.replace("-", "_"))
    for _, row in parse([line], lineno):
        if layout == "arqmath-task1" and len(parts) == 6:
            # normalise the lenient 6-column form to the 5-column one
            return [row.topic, row.doc, str(row.rank), repr(row.score), row.tag]
        if full:  # pragma: no cover - the row parsed after all
            return parts
        return parts
    raise AssertionError("unreachable")  # pragma: no cover


# ---------------------------------------------------------------- qrels


#: trec_eval keeps a grade in a C ``long``; 32 bits is what every platform gives it.
MAX_GRADE = 2**31 - 1


def _rel(path: PathLike, value: str, line: str, lineno: int) -> int:
    try:
        rel = int(value)
    except ValueError:
        # lenient: float relevance such as "2.0" (docs/formats.md, Touché qrels)
        try:
            f = float(value)
        except ValueError:
            raise FormatError(path, f"expected an integer relevance, found {value!r}", line=lineno,
                              column=_column_of(line, 3)) from None
        if not f.is_integer():
            raise FormatError(path, f"relevance must be a whole number, found {value!r}", line=lineno,
                              column=_column_of(line, 3), hint="graded relevance is 0, 1, 2, ...")
        rel = int(f)
    if abs(rel) > MAX_GRADE:
        raise FormatError(path, f"relevance {value!r} is out of range (at most {MAX_GRADE:,} either way)",
                          line=lineno, column=_column_of(line, 3), hint="graded relevance is 0, 1, 2, ...")
    return rel


def _qrels_columns(path: PathLike, line: str, lineno: int, n: int) -> FormatError:
    return FormatError(path, f"expected 4 columns `topic iteration doc rel`, found {n}", line=lineno,
                       hint="columns are separated by spaces or tabs")


def read_qrels(path: PathLike) -> Iterator[Qrel]:
    """Stream qrels ``topic iteration doc rel`` (tabs/spaces, CRLF, ``Q0`` or ``0`` in
    column 2, float relevance like ``2.0``); blank lines are skipped."""
    lineno = 0
    with open_text(path) as f:
        try:
            for lineno, line in enumerate(f, 1):
                parts = line.split()
                if len(parts) != 4:
                    if not parts:
                        continue
                    raise _qrels_columns(path, line, lineno, len(parts))
                topic, iteration, doc, rel = parts
                yield Qrel(topic, iteration, doc, _rel(path, rel, line, lineno), lineno)
        except DECODE_ERRORS as exc:
            raise decode_error(path, exc, line=lineno + 1) from None


def load_qrels_dict(path: PathLike) -> dict[str, dict[str, int]]:
    """Load qrels as ``{topic: {doc: rel}}`` (pytrec_eval's shape); a repeated pair keeps the last."""
    qrels: dict[str, dict[str, int]] = {}
    get = qrels.get
    lineno = 0
    with open_text(path) as f:
        try:
            for lineno, line in enumerate(f, 1):
                parts = line.split()
                if len(parts) != 4:
                    if not parts:
                        continue
                    raise _qrels_columns(path, line, lineno, len(parts))
                topic, _it, doc, rel = parts
                try:
                    r = int(rel)
                except ValueError:
                    r = _rel(path, rel, line, lineno)
                if not -MAX_GRADE <= r <= MAX_GRADE:
                    r = _rel(path, rel, line, lineno)  # raises the range error
                docs = get(topic)
                if docs is None:
                    docs = qrels[topic] = {}
                docs[doc] = r
        except DECODE_ERRORS as exc:
            raise decode_error(path, exc, line=lineno + 1) from None
    return qrels


# ---------------------------------------------------------------- writers


def _token(value: object, what: str) -> str:
    text = str(value)
    if not text or any(c.isspace() for c in text):
        raise ValueError(f"{what} {text!r} is empty or contains whitespace")
    return text


def _format_row(row: RunRow, layout: str) -> str:
    score = repr(float(row.score))
    if layout == "trec":
        return (f"{_token(row.topic, 'topic')} Q0 {_token(row.doc, 'doc')} {int(row.rank)} "
                f"{score} {_token(row.tag, 'tag')}\n")
    if layout == "arqmath-task1":
        return (f"{_token(row.topic, 'topic')}\t{_token(row.doc, 'post id')}\t{int(row.rank)}\t"
                f"{score}\t{_token(row.tag, 'tag')}\n")
    if layout == "arqmath-task2":
        if row.post_id is None:
            raise ValueError("a Task 2 row needs post_id")
        return (f"{_token(row.topic, 'topic')}\t{_token(row.doc, 'formula id')}\t"
                f"{_token(row.post_id, 'post id')}\t{int(row.rank)}\t{score}\t{_token(row.tag, 'tag')}\n")
    if layout == "arqmath-task3":
        sources = row.sources or ""
        answer = row.answer or ""
        for what, text in (("sources", sources), ("answer", answer)):
            if any(c in text for c in "\t\r\n"):
                raise ValueError(f"Task 3 {what} must not contain tabs or line breaks")
        return (f"{_token(row.topic, 'topic')}\t{int(row.rank)}\t{score}\t{_token(row.tag, 'tag')}\t"
                f"{sources}\t{answer}\n")
    raise ValueError(f"unknown run layout {layout!r}; expected one of {LAYOUTS}")


def write_run(path: PathLike, rows: Iterable[RunRow], layout: str) -> int:
    """Write a run atomically (temp file + rename); ARQMath layouts use tabs, TREC spaces.

    Returns the number of rows written. ``.gz`` paths are compressed.
    """
    if layout not in LAYOUTS:
        raise ValueError(f"unknown run layout {layout!r}; expected one of {LAYOUTS}")
    n = 0
    with atomic_text_writer(path) as out:
        write = out.write
        for row in rows:
            write(_format_row(row, layout))
            n += 1
    return n


def write_qrels(path: PathLike, rows: Iterable[Qrel | tuple[str, str, str, int]], sep: str = " ") -> int:
    """Write qrels ``topic iteration doc rel`` atomically; returns the number of lines."""
    if sep not in (" ", "\t"):
        raise ValueError("sep must be a space or a tab")
    n = 0
    with atomic_text_writer(path) as out:
        for row in rows:
            topic, iteration, doc, rel = row[0], row[1], row[2], row[3]
            out.write(sep.join((_token(topic, "topic"), _token(iteration, "iteration"),
                                _token(doc, "doc"), str(int(rel)))) + "\n")
            n += 1
    return n
