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
from sharedtask.units import format_size, parse_size

# Container paths of the TIRA contract (docs/task-contract.md).
INPUT_MOUNT = "/tira-data/input"
OUTPUT_MOUNT = "/tira-data/output"
INPUT_RUN_MOUNT = "/tira-data/input-run"
# Resolvable host name: Anserini's log4j logs UnknownHostException without one
# under --network none (docker/README.md).
HOSTNAME = "tira-sandbox"

#: The unprivileged uid:gid a root organizer's containers run as (no name on the host).
SANDBOX_USER = "10001:10001"
#: OCI runtimes the sandbox knows: docker's default and gVisor (docs/threat-model.md).
RUNTIMES = ("runc", "runsc")


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


def parse_runtime(value: str | None) -> str:
    """``runc`` (default) or ``runsc``; anything else is a usage error with the choices."""
    runtime = value or "runc"
    if runtime not in RUNTIMES:
        raise SharedTaskError(f"unknown runtime {value!r}", hint=f"choose one of {', '.join(RUNTIMES)}")
    return runtime


def parse_user(value: str | None) -> str | None:
    """The container user: ``None``/``"image"`` keeps the image's USER, else ``UID[:GID]``.

    ``"me"`` (the default of the CLI) is the invoking user's uid:gid, so that output
    files belong to whoever ran the command (TIRA would leave them root-owned). An
    organizer working as root gets :data:`SANDBOX_USER` instead: uid 0 in the
    container would be root on the host's files should anything escape.
    """
    if value is None or value == "image":
        return None
    if value == "me":
        return SANDBOX_USER if os.getuid() == 0 else f"{os.getuid()}:{os.getgid()}"
    if not re.fullmatch(r"\d+(:\d+)?", value):
        raise SharedTaskError(
            f"invalid --user {value!r}", hint="use UID or UID:GID (numbers), 'me' or 'image'"
        )
    return value


DOCKER_MIN_MEMORY = 6 * 1024**2  # bytes: the daemon's linuxMinMemory
DOCKER_MIN_CPUS = 0.01


@dataclass(frozen=True)
class Limits:
    """Resource limits of one run, in plain units (bytes, cores, seconds)."""

    memory: int  # bytes; also the memory+swap limit (no swap)
    cpus: float
    timeout: float  # wall-clock seconds
    pids: int
    max_output: int  # bytes written to $outputDir
    max_output_entries: int = 100_000  # files, directories and links in $outputDir
    disk: int = 10 * 1024**3  # bytes written to the container's own file system

    @classmethod
    def from_spec(cls, sandbox: Any) -> "Limits":
        """From a task's ``SandboxLimits`` (strings like ``4g`` as in the YAML)."""
        return cls(
            memory=parse_size(sandbox.memory, "memory limit"),
            cpus=float(sandbox.cpus),
            timeout=parse_duration(sandbox.timeout),
            pids=int(sandbox.pids),
            max_output=parse_size(sandbox.max_output, "output limit"),
            max_output_entries=int(sandbox.max_output_entries),
            disk=parse_size(sandbox.disk, "disk limit"),
        )

    def with_overrides(
        self,
        *,
        memory: str | int | None = None,
        cpus: float | None = None,
        timeout: str | float | None = None,
        pids: int | None = None,
        max_output: str | int | None = None,
        disk: str | int | None = None,
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
        if disk is not None:
            changes["disk"] = parse_size(disk, "disk limit")
        return replace(self, **changes)

    def check_docker_accepts(self, host_cpus: int | None) -> None:
        """Refuse, in one line and before anything is made, the limits Docker itself refuses.

        The bounds are the daemon's (moby ``daemon/daemon_unix.go``, ``verifyPlatformContainerResources``:
        "Minimum memory limit allowed is 6MB"; "Range of CPUs is from 0.01 to N.00, as there are
        only N CPUs available"); ``host_cpus`` is the daemon's count (``docker info``'s NCPU).
        """
        if self.memory < DOCKER_MIN_MEMORY:
            raise SharedTaskError(f"--memory {format_size(self.memory)} is below Docker's minimum of "
                                  f"{format_size(DOCKER_MIN_MEMORY)}", hint="give at least --memory 6m")
        if self.cpus < DOCKER_MIN_CPUS:
            raise SharedTaskError(f"--cpus {self.cpus:g} is below Docker's minimum of {DOCKER_MIN_CPUS:g}",
                                  hint="give at least --cpus 0.01")
        if host_cpus and self.cpus > host_cpus:
            raise SharedTaskError(f"--cpus {self.cpus:g} is more than the {host_cpus} CPU(s) of the Docker host",
                                  hint=f"give at most --cpus {host_cpus}")

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["memory_human"] = format_size(self.memory)
        data["max_output_human"] = format_size(self.max_output)
        data["disk_human"] = format_size(self.disk)
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
    runtime: str = "runc"
    #: the CPU profile (sharedtask.sandbox.cpu): which vector units numeric libraries may use
    cpu: str = "native"
    #: the seccomp profile under runc (sharedtask.sandbox.seccomp.Profile); None: Docker's default
    seccomp: Any = None

    def to_json(self) -> dict[str, Any]:
        return {
            "limits": self.limits.to_json(),
            "network": self.network or "none",
            "user": self.user or "image default",
            "read_only_root": self.read_only_root,
            "runtime": self.runtime,
            "cpu_profile": self.cpu,
            "capabilities": "all dropped",
            "no_new_privileges": True,
            "input_mount": "read-only",
            "tmp": "tmpfs (counts against the memory limit)",
            "seccomp": self._seccomp_json(),
        }

    def _seccomp_json(self) -> dict[str, Any]:
        if self.runtime != "runc":
            return {"profile": f"{self.runtime}'s own system call table"}
        if self.seccomp is None:
            return {"profile": "docker default"}
        return {"profile": self.seccomp.description, "sha256": self.seccomp.sha256, "file": self.seccomp.path}

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
        if self.runtime != "runc":
            options["runtime"] = self.runtime
        elif self.seccomp is not None and self.seccomp.json is not None:
            # Replaces Docker's default: ours is that default with io_uring refused (sandbox/seccomp.py).
            options["security_opt"] = [*options["security_opt"], f"seccomp={self.seccomp.json}"]
        return options
