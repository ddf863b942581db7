"""Streaming checksums: one pass over a file, every digest the registry declares.

A corpus is gigabytes: the file is read in 1 MiB blocks into one reused buffer
(``readinto``), and hashlib releases the GIL for blocks that large, so the pass runs at
the speed of sha256 itself (benchmarks/data_verify.py measures it against hashlib on
bytes in memory).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Callable, Iterable

BLOCK = 1 << 20


def digests(path: Path, algorithms: Iterable[str] = ("sha256",),
            progress: Callable[[int], None] | None = None) -> dict[str, str]:
    """Hex digests of ``path`` for each algorithm (``sha256``, ``md5``), in one read."""
    hashers = {name: hashlib.new(name) for name in algorithms}
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
