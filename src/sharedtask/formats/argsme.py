"""args.me corpus JSON (Touché Task 1), streamed one argument at a time.

Each corpus file is ``{"arguments": [ {...}, ... ]}`` and the debateorg file is about
1 GB (docs/formats.md), so it is never loaded whole: a chunked reader
keeps a window of the text and ``json.JSONDecoder.raw_decode`` (the C scanner)
decodes one array element at a time. When an element runs past the end of the
window, the window grows by one chunk and decoding is retried; memory is bounded by
the chunk size plus the largest single argument.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any, NamedTuple

from sharedtask.errors import FormatError
from sharedtask.formats._io import DECODE_ERRORS, PathLike, decode_error, open_text
from sharedtask.formats._ranges import ByteRange, find_boundary, open_range, split_ranges

#: The five corpus files of args.me 2020-04-01, in the order they are read.
ARGSME_FILES: tuple[str, ...] = (
    "debateorg.json", "debatepedia.json", "debatewise.json", "idebate.json", "parliamentary.json",
)

CHUNK_CHARS = 1 << 20
#: A single argument larger than this is taken for a broken file (e.g. an unterminated string).
MAX_ARGUMENT_CHARS = 128 << 20


class Premise(NamedTuple):
    text: str
    stance: str | None  # "PRO" | "CON"


class Argument(NamedTuple):
    """One argument. The most used context fields are lifted; ``context`` keeps all of them."""

    id: str
    conclusion: str
    premises: tuple[Premise, ...]
    source_id: str | None
    source_title: str | None
    source_url: str | None
    source_domain: str | None
    discussion_title: str | None  # context.discussionTitle, else context.topic
    previous_argument_id: str | None
    next_argument_id: str | None
    context: dict[str, Any]


_WS = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder(strict=False)  # lenient: raw control characters inside strings


class _Window:
    """A sliding window over a text stream that knows line numbers of what it dropped.

    Lines of dropped text are counted only when an error needs them, by reading the
    stream again from ``reopen()``: counting them as the window slid took about 7 % of
    the reader's time (cProfile, full-size args.me).
    """

    __slots__ = ("f", "path", "buf", "pos", "dropped_chars", "eof", "reopen")

    def __init__(self, f: IO[str], path: PathLike, reopen: Callable[[], IO[str]]) -> None:
        self.f = f
        self.path = path
        self.buf = ""
        self.pos = 0
        self.dropped_chars = 0
        self.eof = False
        self.reopen = reopen

    def fill(self) -> bool:
        """Drop what was consumed, append one chunk; False at end of file."""
        if self.eof:
            return False
        chunk = self.f.read(CHUNK_CHARS)
        if not chunk:
            self.eof = True
            return False
        buf, pos = self.buf, self.pos
        self.dropped_chars += pos
        self.buf = buf[pos:] + chunk
        self.pos = 0
        return True

    def _lines_dropped(self) -> int:
        lines, left = 0, self.dropped_chars
        if not left:
            return 0
        with self.reopen() as again:
            while left:
                chunk = again.read(min(left, 1 << 24))
                if not chunk:
                    break
                lines += chunk.count("\n")
                left -= len(chunk)
        return lines

    def peek(self) -> str | None:
        """The next non-whitespace character (not consumed), or None at end of file."""
        while True:
            self.pos = _WS.match(self.buf, self.pos).end()  # type: ignore[union-attr]
            if self.pos < len(self.buf):
                return self.buf[self.pos]
            if not self.fill():
                return None

    def where(self, pos: int) -> tuple[int, int]:
        """1-based (line, column) of a position in the window."""
        line = self._lines_dropped() + self.buf.count("\n", 0, pos) + 1
        return line, pos - self.buf.rfind("\n", 0, pos)

    def error(self, message: str, pos: int | None = None, record: str | None = None,
              hint: str | None = None) -> FormatError:
        line, column = self.where(self.pos if pos is None else pos)
        return FormatError(self.path, message, line=line, column=column, record=record, hint=hint)

    def expect(self, char: str, what: str) -> None:
        found = self.peek()
        if found != char:
            shown = "end of file" if found is None else repr(found)
            raise self.error(f"expected {what}, found {shown}",
                             hint="the file may be truncated" if found is None else None)
        self.pos += 1

    def value(self, record: str | None = None) -> Any:
        """Decode the JSON value at the current position, growing the window as needed."""
        self.peek()
        start = self.pos
        while True:
            try:
                obj, end = _DECODER.raw_decode(self.buf, self.pos)
            except json.JSONDecodeError as exc:
                near_end = exc.pos >= len(self.buf) - 16 or exc.msg.startswith("Unterminated string")
                if near_end and len(self.buf) - self.pos > MAX_ARGUMENT_CHARS:
                    raise self.error(f"a single value is larger than {MAX_ARGUMENT_CHARS >> 20} M characters",
                                     start, record, hint="an unterminated string?") from None
                if near_end and self.fill():
                    start = self.pos
                    continue
                line, _ = self.where(start)
                if near_end:
                    raise self.error(f"truncated JSON: the file ends inside a value that starts on line {line}",
                                     exc.pos, record, hint="the file is incomplete; copy or download it again") from None
                raise self.error(f"malformed JSON: {exc.msg}", exc.pos, record) from None
            self.pos = end
            return obj


def _argument(obj: Any, win: _Window, start: int, n: int) -> Argument:
    record = f"argument #{n}"
    if type(obj) is not dict:
        raise win.error(f"expected an argument object, found {type(obj).__name__}", start, record)
    ident = obj.get("id")
    if type(ident) is not str or not ident:
        raise win.error("argument without a string id", start, record,
                        hint='every argument has "id", "conclusion", "premises" and "context"')
    premises = obj.get("premises") or ()
    try:
        plist = tuple([Premise(p["text"], p.get("stance")) for p in premises])
    except (KeyError, TypeError, AttributeError):
        raise win.error(f"argument {ident}: premises must be a list of {{\"text\", \"stance\"}} objects",
                        start, record) from None
    ctx = obj.get("context") or {}
    if type(ctx) is not dict:
        raise win.error(f"argument {ident}: context must be an object", start, record)
    get = ctx.get
    return Argument(
        ident, obj.get("conclusion") or "", plist, get("sourceId"), get("sourceTitle"), get("sourceUrl"),
        get("sourceDomain"), get("discussionTitle") or get("topic"), get("previousArgumentInSourceId"),
        get("nextArgumentInSourceId"), ctx,
    )


def read_argsme(path: PathLike) -> Iterator[Argument]:
    """Stream the arguments of one args.me JSON file (``.gz`` works too)."""
    with open_text(path) as f:
        yield from _read_stream(f, path, lambda: open_text(path))


def _read_stream(f: IO[str], path: PathLike, reopen: Callable[[], IO[str]]) -> Iterator[Argument]:
    win = _Window(f, path, reopen)
    try:
        win.expect("{", "a JSON object `{\"arguments\": [...]}`")
        found = False
        if win.peek() == "}":
            win.pos += 1
        else:
            while True:
                if win.peek() != '"':
                    raise win.error("expected a key string")
                key = win.value()
                win.expect(":", "':' after a key")
                if key == "arguments":
                    found = True
                    yield from _arguments(win)
                else:
                    win.value()  # skip unknown top-level members
                c = win.peek()
                if c == ",":
                    win.pos += 1
                    continue
                win.expect("}", "',' or '}' after a top-level member")
                break
        if win.peek() is not None:
            raise win.error("unexpected data after the top-level object")
        if not found:
            raise FormatError(path, 'no "arguments" array in this file',
                              hint='args.me files are {"arguments": [...]}')
    except DECODE_ERRORS as exc:
        raise decode_error(path, exc) from None


def _arguments(win: _Window) -> Iterator[Argument]:
    win.expect("[", "'[' starting the arguments array")
    if win.peek() == "]":
        win.pos += 1
        return
    n = 0
    while True:
        n += 1
        win.peek()
        start_abs = win.dropped_chars + win.pos
        obj = win.value(record=f"argument #{n}")
        # the window may have been refilled: recompute where the argument started
        start = start_abs - win.dropped_chars
        yield _argument(obj, win, start, n)
        c = win.peek()
        if c == ",":
            win.pos += 1
            continue
        if c == "]":
            win.pos += 1
            return
        shown = "end of file" if c is None else repr(c)
        raise win.error(f"expected ',' or ']' after argument #{n}, found {shown}", record=f"argument #{n}",
                        hint="the file may be truncated" if c is None else None)


def argsme_files(directory: PathLike) -> list[Path]:
    """The five corpus files of a Touché dataset folder, in :data:`ARGSME_FILES` order
    (a ``.json.gz`` stands in for a missing ``.json``)."""
    base = Path(directory)
    out = []
    for name in ARGSME_FILES:
        plain, packed = base / name, base / (name + ".gz")
        if plain.is_file():
            out.append(plain)
        elif packed.is_file():
            out.append(packed)
        else:
            raise FormatError(plain, "args.me corpus file missing",
                              hint="a Touché dataset holds " + ", ".join(ARGSME_FILES))
    return out


def read_argsme_dir(directory: PathLike) -> Iterator[Argument]:
    """Stream all arguments of the five args.me files in a fixed order."""
    for path in argsme_files(directory):
        yield from read_argsme(path)


# ------------------------------------------------------------------ reading one file in parts
#
# debateorg.json is 87 % of the corpus, so reading the files in parallel gains little;
# reading one file in parts does. A part starts at a top-level argument: an argument
# object is preceded by ``}`` ``,`` and begins with ``{"``; inside a JSON string a quote
# is always escaped, so ``{`` directly followed (after blanks) by ``"`` is never string
# content (RFC 8259, section 7). Nested objects (premises, context) match the same
# pattern, so a candidate counts only when the object there decodes and has the keys of
# an argument and is followed by ``,`` or ``]``.

#: Files smaller than this are read whole: splitting them saves less than it costs.
MIN_SPLIT_BYTES = 64 << 20
#: How far past the wanted offset a part boundary is looked for before giving up.
SPLIT_SEARCH_BYTES = 64 << 20
_BOUNDARY = re.compile(rb"\}[ \t\r\n]*,[ \t\r\n]*(\{)[ \t\r\n]*\"")
_PART_PREFIX = b'{"arguments": ['
_PART_SUFFIX = b"]}"


#: A byte range of an args.me file holding whole arguments (see :func:`split_argsme`).
ArgsmeRange = ByteRange


def split_argsme(path: PathLike, parts: int) -> list[ArgsmeRange]:
    """Cut one args.me file into up to ``parts`` ranges of whole arguments, near-equal in bytes.

    Gzipped and small files, and files where no boundary is found, stay in one range.
    Reading every range with :func:`read_argsme_range` yields exactly the arguments
    of :func:`read_argsme`, in the same order.
    """
    return split_ranges(path, parts, _boundary_after, MIN_SPLIT_BYTES)


def _boundary_after(f: IO[bytes], offset: int, size: int) -> tuple[int, int] | None:
    """``(end of the previous argument, start of the next)`` of the first boundary at or after ``offset``."""
    return find_boundary(f, offset, size, _BOUNDARY, SPLIT_SEARCH_BYTES, _argument_starts_at)


def _argument_starts_at(f: IO[bytes], start: int) -> bool:
    """Whether a whole argument object, followed by ``,`` or ``]``, starts at byte ``start``."""
    window = 1 << 20
    while True:
        f.seek(start)
        data = f.read(window)
        text = data.decode("utf-8", errors="replace")
        try:
            obj, end = _DECODER.raw_decode(text)
        except json.JSONDecodeError as exc:
            if exc.pos >= len(text) - 16 and len(data) == window and window < MAX_ARGUMENT_CHARS:
                window *= 4
                continue
            return False
        rest = text[end:end + 4096].lstrip(" \t\r\n")
        if not rest and len(data) == window and window < MAX_ARGUMENT_CHARS:
            window *= 4
            continue
        return (type(obj) is dict and type(obj.get("id")) is str and "conclusion" in obj
                and "premises" in obj and rest[:1] in (",", "]"))


def read_argsme_range(part: ArgsmeRange) -> Iterator[Argument]:
    """Stream the arguments of one range of :func:`split_argsme` (errors name the file's own lines)."""
    path, start, end = part
    prefix = _PART_PREFIX if start else b""

    def spliced() -> IO[str]:
        raw = open_range(part, prefix, _PART_SUFFIX if end is not None else b"")
        return io.TextIOWrapper(raw, encoding="utf-8-sig", newline="")

    with spliced() as f:
        try:
            yield from _read_stream(f, path, spliced)
        except FormatError as exc:
            if not start:
                raise
            raise _shifted(exc, path, start, len(prefix)) from None


def _shifted(exc: FormatError, path: Path, start: int, prefix_chars: int) -> FormatError:
    """An error of a range re-addressed to the whole file's lines and columns."""
    loc = exc.location
    line, column = loc.line, loc.column
    if line is not None:
        newlines, line_start = 0, 0
        with open(path, "rb") as f:  # in chunks: the range may start 500 MB into the file
            offset = 0
            while offset < start:
                chunk = f.read(min(1 << 24, start - offset))
                if not chunk:
                    break
                newlines += chunk.count(b"\n")
                last = chunk.rfind(b"\n")
                if last >= 0:
                    line_start = offset + last + 1
                offset += len(chunk)
            if line == 1 and column is not None:
                f.seek(line_start)
                before = f.read(start - line_start).decode("utf-8", errors="replace")
                column = len(before) + column - prefix_chars
        line += newlines
    record = f"{loc.record} of the part from byte {start:,}" if loc.record else None
    return FormatError(path, exc.detail, line=line, column=column, record=record, hint=exc.hint)
