"""Measurements taken while a container runs: peak memory (sizes: sandbox/outputs.py).

Peak memory comes from the container's own cgroup, read on the host through
``/proc/<pid>/cgroup`` of its main process:
- cgroup v2: ``memory.peak`` (Linux >= 5.19), else the maximum of sampled ``memory.current``;
- cgroup v1: ``memory.max_usage_in_bytes`` (the kernel's high-water mark).
Both high-water marks are exact up to the last sample; the cgroup disappears
with the container, so growth in the final sampling interval can be missed.
When the cgroup is not readable (remote daemon, Docker Desktop) the stats API's
``memory_stats`` is sampled instead, which is coarser. The record says which.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable

CGROUP_ROOT = Path("/sys/fs/cgroup")


def _cgroup_files(pid: int) -> tuple[Path | None, str]:
    """The file holding the memory high-water mark of ``pid``'s cgroup, and its description."""
    try:
        lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
    except OSError:
        return None, ""
    for line in lines:
        _, controllers, rel = line.split(":", 2)
        if "memory" in controllers.split(","):  # cgroup v1
            path = CGROUP_ROOT / "memory" / rel.lstrip("/") / "memory.max_usage_in_bytes"
            if path.is_file():
                return path, "cgroup v1 memory.max_usage_in_bytes"
    for line in lines:
        hierarchy, controllers, rel = line.split(":", 2)
        if hierarchy == "0" and controllers == "":  # cgroup v2 unified
            base = CGROUP_ROOT / rel.lstrip("/")
            if (base / "memory.peak").is_file():
                return base / "memory.peak", "cgroup v2 memory.peak"
            if (base / "memory.current").is_file():
                return base / "memory.current", "cgroup v2 memory.current (sampled maximum)"
    return None, ""


def _cgroup_files_by_id(container_id: str) -> tuple[Path | None, str]:
    """The usual cgroup locations of a docker container (cgroupfs and systemd drivers).

    Known without asking the daemon for the pid, so short runs are caught too.
    """
    candidates = [
        (CGROUP_ROOT / "memory" / "docker" / container_id / "memory.max_usage_in_bytes",
         "cgroup v1 memory.max_usage_in_bytes"),
        (CGROUP_ROOT / "memory" / "system.slice" / f"docker-{container_id}.scope" / "memory.max_usage_in_bytes",
         "cgroup v1 memory.max_usage_in_bytes"),
        (CGROUP_ROOT / "system.slice" / f"docker-{container_id}.scope" / "memory.peak", "cgroup v2 memory.peak"),
        (CGROUP_ROOT / "docker" / container_id / "memory.peak", "cgroup v2 memory.peak"),
    ]
    for path, description in candidates:
        if path.is_file():
            return path, description
    return None, ""


class MemoryProbe:
    """Tracks the peak memory of one running container."""

    def __init__(self, pid: int | None, stats: Callable[[], dict[str, Any]] | None, interval: float,
                 container_id: str | None = None) -> None:
        self.peak: int | None = None
        self.current: int | None = None
        self._file: Path | None = None
        self._stats = stats
        self.source = "not measured"
        description = ""
        if container_id:
            self._file, description = _cgroup_files_by_id(container_id)
        if self._file is None and pid:
            self._file, description = _cgroup_files(pid)
        if self._file is not None:
            self.source = f"{description}, sampled every {interval:g} s"
        if self._file is None and stats is not None:
            self.source = f"docker stats API memory_stats, sampled every {interval:g} s"

    def sample(self) -> None:
        value: int | None = None
        if self._file is not None:
            try:
                value = int(self._file.read_text().strip())
            except (OSError, ValueError):
                return  # cgroup already gone: the container has exited
        elif self._stats is not None:
            try:
                memory = self._stats().get("memory_stats", {})
            except Exception:  # noqa: BLE001 - container may be gone between samples
                return
            value = memory.get("max_usage") or memory.get("usage")
        if value is None:
            return
        self.current = value
        self.peak = value if self.peak is None else max(self.peak, value)
