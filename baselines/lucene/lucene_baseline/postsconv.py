"""The C converter of ARQMath Posts rows (``postsconv.c``), with lxml and Python where it stops.

:func:`rows` yields what :func:`sharedtask.formats.arqmath.read_post_rows` yields for a
range, with each answer's body and each question's title already turned into index text
when the C code could do it (kinds ``"1"``/``"2"``), or still HTML for
:func:`lucene_baseline.mathtext.html_to_index_text` (kinds ``"q"``/``"a"``). The C code
reads the common case only; at anything else it stops, and the stretch up to the next
row boundary is read by lxml (``read_post_rows`` on that window), so every row comes out
as the Python path gives it (``tests/test_baselines_postsconv.py``).

The library is built from the source by the image (``Dockerfile``), or here on first use
with the system's C compiler into ``$XDG_CACHE_HOME/sharedtask``; without one, callers
use the Python path (same bytes, about four times the CPU). ``SHAREDTASK_POSTSCONV=0``
turns it off.
"""

from __future__ import annotations

import ctypes
import hashlib
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

log = logging.getLogger("baseline")

SOURCE = Path(__file__).with_name("postsconv.c")
ENV = "SHAREDTASK_POSTSCONV"
BLOCK = 8 << 20  # bytes read per call: large enough that a call's overhead vanishes
OUT_SLACK = 1 << 20  # the output buffer holds 2 * BLOCK + this (text is rarely longer than its row)
ST_DONE, ST_STOP, ST_FULL, ST_NOMEM = 0, 1, 2, 3

#: ``(kind, id, title or parent id, body)``: kinds ``"1"``/``"2"`` converted, ``"q"``/``"a"`` HTML.
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
    fn = lib.st_convert_rows
    fn.restype = ctypes.c_int
    fn.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t,
                   ctypes.POINTER(ctypes.c_size_t), ctypes.POINTER(ctypes.c_size_t)]
    return lib


@dataclass
class Counts:
    """How a range was read: rows converted in C, rows left to Python, lxml windows."""

    c_rows: int = 0
    python_rows: int = 0
    lxml_windows: int = 0


def rows(part: ByteRange, frame: PostsFrame, counts: Counts | None = None) -> Iterator[Row]:
    """The rows of one range of ``split_posts`` (or of the whole file, ``(path, 0, None)``).

    Raises what ``read_post_rows`` raises for a window it cannot read (callers fall back
    to the one-pass reader for the exact error). Needs :func:`library`.
    """
    lib = library()
    if lib is None:
        raise RuntimeError("the C row converter is not available")
    counts = counts if counts is not None else Counts()
    end = part.end
    with open(part.path, "rb") as f:
        if end is None:
            end = os.fstat(f.fileno()).st_size
        pos = part.start + (len(frame.head) if part.start == 0 else 0)
        while pos < end:
            stop = yield from _c_rows(lib.st_convert_rows, f, pos, end, counts)
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


def _c_rows(convert: Callable[..., int], f: IO[bytes], pos: int, end: int,
            counts: Counts) -> Generator[Row, None, int | None]:
    """Rows from ``pos`` on, in C, until ``end`` (returns None) or a stop (returns its offset).

    The input and output buffers live as long as the range: fresh 8 MB objects per block
    cost page faults that showed as a fifth of the time (perf).
    """
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
            status = convert(address + start, filled - start, int(final), out_address, len(out),
                             ctypes.byref(consumed), ctypes.byref(written))
            if status == ST_NOMEM:
                raise MemoryError("the C row converter ran out of memory")
            if written.value:
                with memoryview(out) as view:
                    fields = str(view[:written.value], "utf-8").split("\0")
                it = iter(fields)
                for row in zip(it, it, it, it):
                    if row[0] in ("q", "a"):
                        counts.python_rows += 1
                    else:
                        counts.c_rows += 1
                    yield row
            start += consumed.value
            if status == ST_FULL:
                if written.value == 0:  # one row larger than the buffer
                    out = bytearray(2 * len(out))
                    out_address = ctypes.addressof(ctypes.c_char.from_buffer(out))
                continue
            break
        if status == ST_STOP:
            return base + start
        if final:
            return None
        data[:filled - start] = data[start:filled]  # the cut row to the front
        filled, base = filled - start, base + start
