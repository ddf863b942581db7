"""The C converter of ARQMath Posts rows (``postsconv.c``), with lxml and Python where it stops.

:func:`convert_range` writes the part file that
:func:`lucene_baseline.arqmath.convert_range` writes, byte for byte: the C code reads
the rows it fully understands, turns bodies and titles into index text and writes the
JSONL lines of answers whose question it has seen; it hands back to Python every row
whose text needs :func:`lucene_baseline.mathtext.html_to_index_text` (an entity it does
not know, a bare ``$``), and stops at anything else, where lxml reads up to the next row
boundary (``read_post_rows`` on that window) before the C code goes on
(``tests/test_baselines_postsconv.py``).

The library is built from the source by the image (``Dockerfile``), or here on first use
with the system's C compiler into ``$XDG_CACHE_HOME/sharedtask``; without one, callers
use the Python path (same bytes, about five times the CPU). ``SHAREDTASK_POSTSCONV=0``
turns it off.
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import logging
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import IO

from sharedtask.formats._ranges import ByteRange
from sharedtask.formats.arqmath import PostsFrame, read_post_rows, row_boundary_after

from lucene_baseline.jsonl import encode_basestring_ascii, json_line
from lucene_baseline.mathtext import html_to_index_text

log = logging.getLogger("baseline")

SOURCE = Path(__file__).with_name("postsconv.c")
ENV = "SHAREDTASK_POSTSCONV"
BLOCK = 8 << 20  # bytes read per call: large enough that a call's overhead vanishes
OUT_SLACK = 1 << 20  # the output buffer holds 2 * BLOCK + this (text is rarely longer than its row)
ST_DONE, ST_STOP, ST_FULL, ST_NOMEM, ST_YIELD = 0, 1, 2, 3, 4

#: A record of st_convert_rows (postsconv.c) or a row of lxml: four strings, the first the kind.
Row = tuple[str, str, str, str]


def library_name() -> str:
    """The file name of the library built from this source (its hash: a stale build is never used)."""
    return f"postsconv-{hashlib.sha256(SOURCE.read_bytes()).hexdigest()[:16]}.so"


def build(into: Path) -> Path:
    """Compiles the source into ``into`` (atomically: concurrent builds do not collide)."""
    compiler = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        raise OSError("no C compiler (cc) on PATH")
    into.mkdir(parents=True, exist_ok=True)
    target = into / library_name()
    with tempfile.TemporaryDirectory(dir=into) as tmp:
        built = Path(tmp) / target.name
        proc = subprocess.run([compiler, "-O2", "-shared", "-fPIC", "-o", str(built), str(SOURCE)],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            raise OSError(f"{compiler} failed: {proc.stderr.strip()[-500:]}")
        os.replace(built, target)
    return target


def _cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "sharedtask"


@cache
def library() -> ctypes.CDLL | None:
    """The loaded library, built if needed; None (logged once) when off or not buildable."""
    if os.environ.get(ENV, "1").lower() in ("0", "off", "no", "false"):
        return None
    name = library_name()
    found = next((p for p in (SOURCE.with_name(name), _cache_dir() / name) if p.is_file()), None)
    try:
        lib = ctypes.CDLL(str(found or build(_cache_dir())))
    except OSError as exc:
        log.info("the C row converter is not available (%s): converting in Python", exc)
        return None
    size_p = ctypes.POINTER(ctypes.c_size_t)
    lib.st_new.restype = ctypes.c_void_p
    lib.st_new.argtypes = []
    lib.st_free.restype = None
    lib.st_free.argtypes = [ctypes.c_void_p]
    lib.st_add_title.restype = ctypes.c_int
    lib.st_add_title.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p, ctypes.c_size_t]
    lib.st_convert_rows.restype = ctypes.c_int
    lib.st_convert_rows.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_void_p,
                                    ctypes.c_size_t, size_p, size_p]
    return lib


@dataclass
class Counts:
    """How a range was read: rows converted in C, rows left to Python, lxml windows."""

    c_rows: int = 0
    python_rows: int = 0
    lxml_windows: int = 0


def convert_range(part: ByteRange, frame: PostsFrame, target: Path, counts: Counts | None = None) -> dict[str, str]:
    """One range into one part file (see lucene_baseline.arqmath.convert_range); its titles.

    Raises what ``read_post_rows`` raises for a window it cannot read (callers fall back
    to the one-pass reader for the exact error). Needs :func:`library`.
    """
    lib = library()
    if lib is None:
        raise RuntimeError("the C row converter is not available")
    counts = counts if counts is not None else Counts()
    titles: dict[str, str] = {}
    handle = lib.st_new()
    if not handle:
        raise MemoryError("the C row converter ran out of memory")
    try:
        with open(target, "wb", buffering=1 << 20) as f:  # binary: the C code's lines go in as they are
            write = f.write
            for record in _records(lib, handle, part, frame, counts):
                if type(record) is bytes:  # JSONL lines, written by the C code
                    write(record)
                    continue
                kind, ident, other, text = record
                if kind == "1":
                    titles[ident] = other
                elif kind == "q":
                    titles[ident] = title = html_to_index_text(other)
                    escaped = encode_basestring_ascii(title)[1:-1].encode()
                    key = ident.encode()
                    if lib.st_add_title(handle, key, len(key), escaped, len(escaped)) != 0:
                        raise MemoryError("the C row converter ran out of memory")
                else:  # "a" (HTML) or "d" (text) of an answer
                    write(part_line(ident, other, html_to_index_text(text) if kind == "a" else text, titles).encode())
    finally:
        lib.st_free(handle)
    return titles


def part_line(ident: str, parent: str, text: str, titles: dict[str, str]) -> str:
    """An answer's line in a part file: its JSONL document, or, while its question's title
    is unknown, a tab and ``[answer id, question id, text]`` as JSON (merged later)."""
    title = titles.get(parent)
    if title is None:
        return "\t" + json.dumps([ident, parent, text]) + "\n"
    return json_line(ident, f"{title} {text}")


def _records(lib: ctypes.CDLL, handle: int, part: ByteRange, frame: PostsFrame,
             counts: Counts) -> Iterator[bytes | Row]:
    """The C code's records of a range (a run of JSONL lines as bytes); lxml's rows (as "q"
    and "a") where it stops."""
    end = part.end
    with open(part.path, "rb") as f:
        if end is None:
            end = os.fstat(f.fileno()).st_size
        pos = part.start + (len(frame.head) if part.start == 0 else 0)
        while pos < end:
            stop = yield from _c_records(lib, handle, f, pos, end, counts)
            if stop is None:
                return
            # lxml reads from the stop to the next row boundary; the C code resumes there
            found = row_boundary_after(f, stop + 1, end)
            window_end, pos = (found if found is not None and found[1] < end else (end, end))
            window = ByteRange(part.path, stop, window_end if window_end < end or part.end is not None else None)
            counts.lxml_windows += 1
            for kind, ident, other, body in read_post_rows(window, frame):
                counts.python_rows += 1
                yield ("q" if kind == "1" else "a"), ident, other, body


def _c_records(lib: ctypes.CDLL, handle: int, f: IO[bytes], pos: int, end: int,
               counts: Counts) -> Generator[bytes | Row, None, int | None]:
    """Records from ``pos`` on, until ``end`` (returns None) or a stop (returns its offset).

    The input and output buffers live as long as the range: fresh 8 MB objects per block
    cost page faults that showed as a fifth of the time (perf).
    """
    convert = lib.st_convert_rows
    consumed, written = ctypes.c_size_t(), ctypes.c_size_t()
    out = bytearray(2 * BLOCK + OUT_SLACK)
    data = bytearray(2 * BLOCK)
    filled, base = 0, pos  # data[:filled] = file[base:base + filled]
    f.seek(pos)
    while True:
        if len(data) - filled < BLOCK // 2:  # a row longer than what is left: more room
            data = data[:filled] + bytearray(max(len(data), 2 * BLOCK))
        with memoryview(data) as view:
            want = min(len(data) - filled, end - (base + filled))
            got = f.readinto(view[filled:filled + want]) if want > 0 else 0
        filled += got
        final = base + filled >= end or got == 0
        address = ctypes.addressof(ctypes.c_char.from_buffer(data))
        out_address = ctypes.addressof(ctypes.c_char.from_buffer(out))
        start = 0
        while True:
            status = convert(handle, address + start, filled - start, int(final), out_address, len(out),
                             ctypes.byref(consumed), ctypes.byref(written))
            if status == ST_NOMEM:
                raise MemoryError("the C row converter ran out of memory")
            if written.value:
                with memoryview(out) as view:
                    fields = view[:written.value].tobytes().split(b"\0")
                it = iter(fields)
                for kind, first, second, third in zip(it, it, it, it):
                    if kind == b"J":  # lines as they go into the part file: never decoded here
                        counts.c_rows += first.count(b"\n")
                        yield first
                        continue
                    if kind in (b"q", b"a"):
                        counts.python_rows += 1
                    else:
                        counts.c_rows += 1
                    yield kind.decode(), first.decode(), second.decode(), third.decode()
            start += consumed.value
            if status == ST_FULL and written.value == 0:  # one row larger than the buffer
                out = bytearray(2 * len(out))
                out_address = ctypes.addressof(ctypes.c_char.from_buffer(out))
            if status in (ST_FULL, ST_YIELD):
                continue
            break
        if status == ST_STOP:
            return base + start
        if final:
            return None
        data[:filled - start] = data[start:filled]  # the cut row to the front
        filled, base = filled - start, base + start
