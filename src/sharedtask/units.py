"""Sizes in the units docker and the task specs use (``512m``, ``2g``, ``1.5GiB``).

Shared by the task specs (output bounds), the sandbox policy and every display of a size.
"""

from __future__ import annotations

import re

from sharedtask.errors import SharedTaskError

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(i?b?)\s*$", re.IGNORECASE)
_UNITS = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}


def parse_size(value: str | int | float, what: str = "size") -> int:
    """Bytes from docker-style sizes: ``512m``, ``2g``, ``1.5GiB``, ``100k`` or a plain number.

    Units are binary (docker's own convention: ``--memory 2g`` is 2 GiB).
    """
    if isinstance(value, bool):
        raise SharedTaskError(f"invalid {what}: {value!r}")
    if isinstance(value, (int, float)):
        number, unit = float(value), ""
    else:
        match = _SIZE.match(value)
        if not match:
            raise SharedTaskError(f"invalid {what}: {value!r}", hint="use e.g. 512m, 2g, 1.5GiB")
        number, unit = float(match.group(1)), match.group(2).lower()
    size = int(number * _UNITS[unit])
    if size <= 0:
        raise SharedTaskError(f"invalid {what}: {value!r} (must be positive)")
    return size


def format_size(size: int | None) -> str:
    """Human size in binary units: ``2 GiB``, ``512 MiB``, ``1.5 KiB``."""
    if size is None:
        return "unknown"
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(value) < 1024:
            return f"{value:.0f} {unit}" if unit == "B" or value == int(value) else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} TiB" if value != int(value) else f"{value:.0f} TiB"
