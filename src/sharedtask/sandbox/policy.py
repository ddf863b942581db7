"""Sandbox limits and policy: parsing user/spec values and turning them into docker options.

Kept apart from the runner so that the exact isolation a run gets can be read,
tested and recorded without a daemon. Defaults follow docs/architecture.md ("Sandbox by
default") and are at least as strict as TIRA (docs/task-contract.md,
"The execution contract"), except where noted.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import asdict, dataclass, replace
from typing import Any

from sharedtask.errors import SharedTaskError

# Container paths of the TIRA contract (docs/task-contract.md).
INPUT_MOUNT = "/tira-data/input"
OUTPUT_MOUNT = "/tira-data/output"
INPUT_RUN_MOUNT = "/tira-data/input-run"
# Resolvable host name: Anserini's log4j logs UnknownHostException without one
# under --network none (docker/README.md).
HOSTNAME = "tira-sandbox"

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


def parse_duration(value: str | int | float) -> float:
    """Seconds from ``90``, ``90s``, ``15m``, ``2h``."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        seconds = float(value)
    else:
        match = re.match(r"^\s*(\d+(?:\.\d+)?)\s*([smh]?)\s*$", str(value), re.IGNORECASE)
        if not match:
            raise SharedTaskError(f"invalid timeout: {value!r}", hint="use seconds, e.g. 600, 90s, 15m, 2h")
        seconds = float(match.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600}[match.group(2).lower()]
    if seconds <= 0 or math.isinf(seconds):
        raise SharedTaskError(f"invalid timeout: {value!r} (must be a positive number of seconds)")
    return seconds


def parse_user(value: str | None) -> str | None:
    """The container user: ``None``/``"image"`` keeps the image's USER, else ``UID[:GID]``.

    ``"me"`` (the default of the CLI) is the invoking user's uid:gid, so that output
    files belong to whoever ran the command (TIRA would leave them root-owned).
    """
    if value is None or value == "image":
        return None
    if value == "me":
        return f"{os.getuid()}:{os.getgid()}"
    if not re.fullmatch(r"\d+(:\d+)?", value):
        raise SharedTaskError(
            f"invalid --user {value!r}", hint="use UID or UID:GID (numbers), 'me' or 'image'"
        )
    return value


@dataclass(frozen=True)
class Limits:
    """Resource limits of one run, in plain units (bytes, cores, seconds)."""

    memory: int  # bytes; also the memory+swap limit (no swap)
    cpus: float
    timeout: float  # wall-clock seconds
    pids: int
    max_output: int  # bytes written to $outputDir

    @classmethod
    def from_spec(cls, sandbox: Any) -> "Limits":
        """From a task's ``SandboxLimits`` (strings like ``4g`` as in the YAML)."""
        return cls(
            memory=parse_size(sandbox.memory, "memory limit"),
            cpus=float(sandbox.cpus),
            timeout=parse_duration(sandbox.timeout),
            pids=int(sandbox.pids),
            max_output=parse_size(sandbox.max_output, "output limit"),
        )

    def with_overrides(
        self,
        *,
        memory: str | int | None = None,
        cpus: float | None = None,
        timeout: str | float | None = None,
        pids: int | None = None,
        max_output: str | int | None = None,
    ) -> "Limits":
        """A copy with the given values replaced (None keeps the spec's value)."""
        changes: dict[str, Any] = {}
        if memory is not None:
            changes["memory"] = parse_size(memory, "memory limit")
        if cpus is not None:
            if cpus <= 0:
                raise SharedTaskError(f"invalid --cpus {cpus} (must be positive)")
            changes["cpus"] = float(cpus)
        if timeout is not None:
            changes["timeout"] = parse_duration(timeout)
        if pids is not None:
            if pids <= 0:
                raise SharedTaskError(f"invalid --pids {pids} (must be positive)")
            changes["pids"] = int(pids)
        if max_output is not None:
            changes["max_output"] = parse_size(max_output, "output limit")
        return replace(self, **changes)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["memory_human"] = format_size(self.memory)
        data["max_output_human"] = format_size(self.max_output)
        return data


@dataclass(frozen=True)
class Policy:
    """Everything about isolation besides the resource numbers.

    ``network``: ``None`` means ``network_mode=none`` (TIRA: "detached from the
    internet"); otherwise the name of a docker network to join ("bridge" for
    ``--allow-network``).

    ``read_only_root``: off by default, like TIRA. Images legitimately write
    caches into $HOME or the working directory (nltk, pyterrier, pip); a
    read-only root would fail them here although TIRA accepts them. Writes
    outside $outputDir land in the container's own layer, which is deleted with
    the container, so they leave no trace on the host either way. /tmp is always
    a tmpfs (exec allowed: JNI libraries unpack there), charged to the memory limit.
    """

    limits: Limits
    network: str | None = None
    user: str | None = None  # UID[:GID]; None keeps the image's USER
    read_only_root: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "limits": self.limits.to_json(),
            "network": self.network or "none",
            "user": self.user or "image default",
            "read_only_root": self.read_only_root,
            "capabilities": "all dropped",
            "no_new_privileges": True,
            "input_mount": "read-only",
            "tmp": "tmpfs (counts against the memory limit)",
        }

    def container_options(self) -> dict[str, Any]:
        """Keyword arguments for ``docker.containers.create`` that enforce this policy."""
        lim = self.limits
        options: dict[str, Any] = {
            "hostname": HOSTNAME,
            "cap_drop": ["ALL"],
            "security_opt": ["no-new-privileges"],
            "pids_limit": lim.pids,
            "mem_limit": lim.memory,
            "memswap_limit": lim.memory,  # equal to mem_limit: no swap
            "nano_cpus": int(lim.cpus * 1e9),
            "read_only": self.read_only_root,
            "tmpfs": {"/tmp": f"rw,exec,nosuid,nodev,size={lim.memory},mode=1777"},
            # The daemon's own copy of the logs must not fill the disk either; we
            # stream them to files as they come.
            "log_config": {"type": "json-file", "config": {"max-size": "64m", "max-file": "1"}},
        }
        if self.network is None:
            options["network_mode"] = "none"
            # No DNS without a network: map our own name so it resolves.
            options["extra_hosts"] = {HOSTNAME: "127.0.0.1"}
        else:
            options["network"] = self.network
        if self.user is not None:
            options["user"] = self.user
        return options
