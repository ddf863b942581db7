"""What a ``docker-registry`` sent, from its access log: which blobs travelled, and how many bytes.

Why: "shared layers travel once" is a claim about bytes on the wire; the registry's own log
is where they are counted (tests/test_images_by_layer.py, benchmarks/images_to_workers.py),
not our word for it. docker-registry (the distribution registry, 2.x) writes one line per
answered request in the combined log format besides its structured lines.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Served:
    """One request the registry answered, from its access log (combined log format)."""

    method: str
    path: str
    status: int
    bytes: int

    @property
    def blob(self) -> str | None:
        """The digest of the blob fetched (``GET /v2/<name>/blobs/<digest>``), else None."""
        match = re.fullmatch(r"/v2/.+/blobs/(sha256:[0-9a-f]{64})", self.path)
        return match.group(1) if match and self.method == "GET" else None


_LINE = re.compile(r'^\S+ \S+ \S+ \[[^\]]*\] "(?P<method>[A-Z]+) (?P<path>\S+) HTTP/[0-9.]+" (?P<status>\d{3}) '
                   r'(?P<bytes>\d+|-)')


def served(log: str) -> list[Served]:
    """The requests of a ``docker-registry`` log (its access lines; the structured lines are skipped)."""
    out = []
    for line in log.splitlines():
        match = _LINE.match(line)
        if match:
            size = match["bytes"]
            out.append(Served(match["method"], match["path"], int(match["status"]), 0 if size == "-" else int(size)))
    return out


__all__ = ["Served", "served"]
