"""Streaming checksums: one pass over a file, every digest the registry declares.

A corpus is gigabytes: the file is mapped into memory (no copy out of the page cache)
and hashed in 64 MiB slices, for which hashlib releases the GIL, so the pass runs close
to the speed of sha256 itself (benchmarks/data_verify.py measures it against hashlib on
bytes in memory). Files that cannot be mapped (empty, pipes) are read in 1 MiB blocks.
"""

from __future__ import annotations

import hashlib
import mmap
from pathlib import Path
from typing import Callable, Iterable

BLOCK = 1 << 20
SLICE = 64 << 20


def digests(path: Path, algorithms: Iterable[str] = ("sha256",),
            progress: Callable[[int], None] | None = None) -> dict[str, str]:
    """Hex digests of ``path`` for each algorithm (``sha256``, ``md5``), in one read."""
    hashers = {name: hashlib.new(name) for name in algorithms}
    with open(path, "rb", buffering=0) as fh:
        try:
            mapped = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        except (ValueError, OSError):
            mapped = None
        if mapped is not None:
            with mapped:
                if hasattr(mapped, "madvise"):
                    mapped.madvise(mmap.MADV_SEQUENTIAL)
                view = memoryview(mapped)
                try:
                    for start in range(0, len(mapped), SLICE):
                        with view[start:start + SLICE] as chunk:  # released before the map closes
                            for h in hashers.values():
                                h.update(chunk)
                            if progress is not None:
                                progress(len(chunk))
                finally:
                    view.release()
            return {name: h.hexdigest() for name, h in hashers.items()}
    buf = bytearray(BLOCK)
    view = memoryview(buf)
    with open(path, "rb", buffering=0) as fh:
        while True:
            n = fh.readinto(buf)
            if not n:
                break
            chunk = view[:n]
            for h in hashers.values():
                h.update(chunk)
            if progress is not None:
                progress(n)
    return {name: h.hexdigest() for name, h in hashers.items()}


def sha256(path: Path) -> str:
    return digests(path)["sha256"]
