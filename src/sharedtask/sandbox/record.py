"""The run record: what ran, how it ended, and under which limits, next to the output.

Two files in the run's record directory (the parent of ``output/`` by default):
- ``run-record.json``: everything an organizer needs to judge or reproduce the run;
- ``ir-metadata.yml``: the same provenance in the vocabulary of ir_metadata
  (https://www.ir-metadata.org: sections platform, implementation, data,
  resources), the format TIRA's resource tracker writes as
  ``.tracking-results.yml`` (docs/task-contract.md).
"""

from __future__ import annotations

import json
import os
import platform
import shlex
from pathlib import Path
from typing import Any

import yaml

from sharedtask import __version__
from sharedtask.sandbox.cpu import describe, host_cpu, profile
from sharedtask.sandbox.policy import Policy
from sharedtask.units import format_size
from sharedtask.sandbox.runner import RunRequest, RunResult

RECORD_VERSION = 1
RECORD_JSON = "run-record.json"
IR_METADATA_YAML = "ir-metadata.yml"


def reproduce_command(request: RunRequest, result: RunResult) -> str:
    """A plain ``docker run`` line that reproduces the run outside sharedtask."""
    opts = result.container_options
    parts = ["docker", "run", "--rm", "--hostname", str(opts["hostname"])]
    if opts.get("runtime"):
        parts += ["--runtime", str(opts["runtime"])]
    parts += ["--network", str(opts.get("network_mode") or opts.get("network"))]
    for host, ip in (opts.get("extra_hosts") or {}).items():
        parts += ["--add-host", f"{host}:{ip}"]
    parts += ["--cap-drop", "ALL", "--security-opt", "no-new-privileges"]
    seccomp = request.policy.seccomp if request.policy.runtime == "runc" else None
    if seccomp is not None and seccomp.json is not None and seccomp.path:
        parts += ["--security-opt", f"seccomp={seccomp.path}"]
    parts += ["--pids-limit", str(opts["pids_limit"]), "--memory", str(opts["mem_limit"]),
              "--memory-swap", str(opts["memswap_limit"]), "--cpus", f"{opts['nano_cpus'] / 1e9:g}"]
    if opts.get("read_only"):
        parts.append("--read-only")
    for path, options in (opts.get("tmpfs") or {}).items():
        parts += ["--tmpfs", f"{path}:{options}"]
    if opts.get("user"):
        parts += ["--user", str(opts["user"])]
    for host, mount in result.mounts.items():
        parts += ["-v", f"{host}:{mount['bind']}:{mount['mode']}"]
    for key, value in result.environment.items():
        parts += ["-e", f"{key}={value}"]
    if result.container_entrypoint and request.command is not None:
        parts += ["--entrypoint", "sh", result.image_id, "-c", *(result.container_command or [])]
    else:
        parts.append(result.image_id)
    return shlex.join(parts)


def build_record(
    request: RunRequest,
    result: RunResult,
    *,
    task_id: str | None,
    validation: dict[str, Any],
    dataset_files: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The JSON-serialisable run record; ``dataset_files``: the registry dataset id and
    the sha256 of each input file the run saw (sharedtask.data.store.provenance)."""
    return {
        "record_version": RECORD_VERSION,
        "sharedtask_version": __version__,
        "task": task_id,
        "dataset": {"id": request.dataset_id, "input_dir": str(request.input_dir.resolve()),
                    "input_run": str(request.input_run.resolve()) if request.input_run else None,
                    "registry": dataset_files},
        "image": {"name": result.image, "id": result.image_id, "repo_digests": result.repo_digests},
        "command": request.command,
        "container": {"id": result.container_id, "entrypoint": result.container_entrypoint, "command": result.container_command,
                      "environment": result.environment, "mounts": result.mounts},
        "started_at": result.started_at,
        "ended_at": result.ended_at,
        "wall_seconds": result.wall_seconds,
        "exit_code": result.exit_code,
        "status": result.status,
        "message": result.message,
        "oom_killed": result.oom_killed,
        "peak_memory": {"bytes": result.peak_memory, "human": format_size(result.peak_memory),
                        "source": result.peak_memory_source},
        "output": {"dir": str(request.output_dir.resolve()), "bytes": result.output_bytes,
                   "entries": result.output_entries, "disk_bytes": result.output_disk_bytes,
                   "limit": request.policy.limits.max_output, "enforcement": result.output_enforcement},
        "disk": {"bytes": result.disk_bytes, "limit": request.policy.limits.disk,
                 "enforcement": result.disk_enforcement},
        "policy": request.policy.to_json(),
        "cpu": describe(profile(request.policy.cpu)),
        "logs": {"stdout": str(result.stdout_path.resolve()), "stderr": str(result.stderr_path.resolve()),
                 "truncated": result.log_truncated},
        "validation": validation,
        "reproduce": reproduce_command(request, result),
    }


def _ram() -> str:
    try:
        pages, size = os.sysconf("SC_PHYS_PAGES"), os.sysconf("SC_PAGE_SIZE")
        return format_size(pages * size)
    except (ValueError, OSError, AttributeError):
        return "unknown"


def _distribution() -> str:
    try:
        return platform.freedesktop_os_release().get("PRETTY_NAME", "unknown")
    except OSError:
        return "unknown"


def build_ir_metadata(request: RunRequest, result: RunResult, *, task_id: str | None,
                      policy: Policy, docker_version: str | None,
                      dataset_files: dict[str, Any] | None = None) -> dict[str, Any]:
    """ir_metadata-style provenance (platform, implementation, data, resources)."""
    limits = policy.limits
    return {
        # The version TIRA's own resource tracker writes into .tracking-results.yml.
        "schema version": "0.2",
        "tag": f"{result.image}@{task_id or request.dataset_id}",
        "platform": {
            "hardware": {
                "cpu": {"model": host_cpu()[0], "architecture": platform.machine(),
                        "number of cores": os.cpu_count()},
                "ram": _ram(),
            },
            "operating system": {"kernel": platform.release(), "distribution": _distribution()},
            "software": {
                "docker": docker_version or "unknown",
                "sharedtask": __version__,
                "python": platform.python_version(),
            },
        },
        "implementation": {
            "executable": {"cmd": request.command if request.command is not None else "image entrypoint"},
            "container": {"image": result.image, "id": result.image_id, "digests": result.repo_digests,
                          "runtime": policy.runtime},
        },
        "data": {"test collection": {"name": task_id or "unknown", "dataset": request.dataset_id,
                                     "source": str(request.input_dir.resolve()),
                                     **({"registry": dataset_files} if dataset_files else {})}},
        "resources": {
            "runtime": f"{result.wall_seconds:.3f} s",
            "cpu": {"limit": f"{limits.cpus:g} cores"},
            "ram": {"limit": format_size(limits.memory), "peak": format_size(result.peak_memory),
                    "peak source": result.peak_memory_source},
            "exit code": result.exit_code,
            "status": result.status,
        },
    }


def write_record(record_dir: Path, record: dict[str, Any], ir_metadata: dict[str, Any]) -> Path:
    """Write both files; returns the JSON's path."""
    record_dir.mkdir(parents=True, exist_ok=True)
    json_path = record_dir / RECORD_JSON
    json_path.write_text(json.dumps(record, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    with (record_dir / IR_METADATA_YAML).open("w", encoding="utf-8") as fh:
        yaml.safe_dump(ir_metadata, fh, sort_keys=False, allow_unicode=True)
    return json_path
