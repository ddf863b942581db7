"""Cutting one large file into byte ranges of whole records, read by separate processes.

Used by the args.me reader (JSON arguments) and the ARQMath Posts reader (``<row/>``
elements): a format supplies a function that finds the next record boundary at or
after an offset; this module cuts near-equal ranges with it and serves a range as
``prefix + file[start:end] + suffix``, so that the range reads like a whole file of the
same format.
"""

from __future__ import annotations

import io
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any, NamedTuple

from sharedtask.formats._io import PathLike, is_gzip

#: ``boundary(f, offset, size) -> (end of the previous record, start of the next) | None``
Boundary = Callable[[IO[bytes], int, int], "tuple[int, int] | None"]


class ByteRange(NamedTuple):
    """A byte range of a file holding whole records (see :func:`split_ranges`)."""

    path: Path
    start: int  # 0, or the offset of the range's first record
    end: int | None  # None (to the end), or the offset just after its last record


def split_ranges(path: PathLike, parts: int, boundary: Boundary, min_bytes: int) -> list[ByteRange]:
    """Cut ``path`` into up to ``parts`` ranges of whole records, near-equal in bytes.

    Gzipped files, files under ``min_bytes`` and files where ``boundary`` finds
    nothing stay in one range ``(path, 0, None)``.
    """
    path = Path(path)
    whole = [ByteRange(path, 0, None)]
    if parts < 2 or is_gzip(path):
        return whole
    size = os.path.getsize(path)
    if size < min_bytes:
        return whole
    cuts: list[tuple[int, int]] = []
    with open(path, "rb") as f:
        for k in range(1, parts):
            after = max(size * k // parts, cuts[-1][1] + 1 if cuts else 0)
            found = boundary(f, after, size)
            if found is None:
                break
            cuts.append(found)
    if not cuts:
        return whole
    ranges, start = [], 0
    for cut, next_start in cuts:
        ranges.append(ByteRange(path, start, cut))
        start = next_start
    ranges.append(ByteRange(path, start, None))
    return ranges


def find_boundary(f: IO[bytes], offset: int, size: int, pattern: re.Pattern[bytes], search_bytes: int,
                  accept: Callable[[IO[bytes], int], bool] | None = None) -> tuple[int, int] | None:
    """The first match of ``pattern`` at or after ``offset`` (within ``search_bytes``) that ``accept``s.

    ``pattern`` matches the last byte of the previous record, then the blanks between,
    with group 1 starting the next record; returns ``(end of previous, start of next)``.
    """
    pos = offset
    while pos < min(size, offset + search_bytes):
        f.seek(pos)
        block = f.read(1 << 20)
        if not block:
            return None
        for m in pattern.finditer(block):
            start = pos + m.start(1)
            if accept is None or accept(f, start):
                return pos + m.start() + 1, start
        pos += max(1, len(block) - 64)  # overlap: a boundary may straddle two blocks
    return None


class Spliced(io.RawIOBase):
    """``prefix + file[start:end] + suffix`` as one binary stream."""

    def __init__(self, path: Path, start: int, end: int | None, prefix: bytes, suffix: bytes) -> None:
        self._f: IO[bytes] | None = open(path, "rb")
        self._f.seek(start)
        self._left = None if end is None else end - start
        self._pieces = [prefix]
        self._suffix = suffix

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        while self._pieces and not self._pieces[0]:
            self._pieces.pop(0)
        if self._pieces:
            piece = self._pieces[0]
            n = min(len(view), len(piece))
            view[:n] = piece[:n]
            self._pieces[0] = piece[n:]
            return n
        if self._f is not None:
            want = len(view) if self._left is None else min(len(view), self._left)
            n = self._f.readinto(view[:want]) if want else 0
            if n:
                if self._left is not None:
                    self._left -= n
                return n
            self._f.close()
            self._f = None
            self._pieces = [self._suffix]
            return self.readinto(buffer)
        return 0

    def close(self) -> None:
        if self._f is not None:
            self._f.close()
            self._f = None
        super().close()


def open_range(part: ByteRange, prefix: bytes, suffix: bytes, buffer: int = 1 << 20) -> io.BufferedReader:
    """A buffered binary stream of ``prefix + part + suffix``."""
    return io.BufferedReader(Spliced(part.path, part.start, part.end, prefix, suffix), buffer)
