"""Our seccomp profile under runc: Docker's default, with io_uring refused (EPERM).

Why: io_uring has been the way around seccomp filters and the source of a run of kernel
privilege escalations; Docker blocks it by default only from 25.0 on, and the daemons
organizers run (Debian's 20.10 here) still allow it. A profile passed to Docker
*replaces* the default, so "allow everything but io_uring" would drop all of Docker's
other restrictions; we need Docker's default itself, minus io_uring.

Where the default comes from, in this order:

1. ``$SHAREDTASK_SECCOMP_PROFILE``: a profile file the organizer gives (for example
   moby's ``profiles/seccomp/default.json`` of their daemon's version);
2. the daemon itself: Docker compiles its default into ``dockerd`` and hands it to runc in
   the OCI bundle's ``config.json`` (``linux.seccomp``, the OCI runtime spec, same field
   names as Docker's profile format). One short container with the sandbox's own options
   (all capabilities dropped, so the capability-dependent rules are those our runs get)
   is started once, its ``config.json`` read, and the result cached per daemon version and
   kernel under ``~/.cache/sharedtask/seccomp/``. This needs read access to the daemon's
   state folder (root, as the daemon runs here).

When neither works, runs keep Docker's default and the run record says so
(``policy.seccomp``), with the reason: nothing is hidden, nothing is claimed.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: The calls this profile refuses on top of Docker's default.
IO_URING = ("io_uring_setup", "io_uring_enter", "io_uring_register")
ENV = "SHAREDTASK_SECCOMP_PROFILE"
EPERM = 1
#: Where dockerd's containerd keeps OCI bundles (Docker 20.10 with its own containerd; a system containerd).
BUNDLE_ROOTS = ("/run/docker/containerd/daemon/io.containerd.runtime.v2.task/moby",
                "/var/run/docker/containerd/daemon/io.containerd.runtime.v2.task/moby",
                "/run/docker/containerd/daemon/io.containerd.runtime.v1.linux/moby",
                "/run/containerd/io.containerd.runtime.v2.task/moby")
PROBE_IMAGE = "sharedtask/base:latest"


@dataclass(frozen=True)
class Profile:
    """The profile to apply (JSON text, None: Docker's default) and what it is, for the record."""

    json: str | None
    description: str
    path: str | None = None  # the cached file, for the record's `docker run` line

    @property
    def sha256(self) -> str | None:
        return None if self.json is None else hashlib.sha256(self.json.encode()).hexdigest()


def without_io_uring(profile: dict[str, Any]) -> dict[str, Any]:
    """``profile`` with io_uring taken out of every rule and refused with EPERM.

    Refuses (ValueError) a profile whose default action allows: that is not a default profile.
    """
    if not isinstance(profile, dict) or not isinstance(profile.get("syscalls"), list):
        raise ValueError("not a seccomp profile (no syscalls list)")
    if str(profile.get("defaultAction", "")).upper() in ("SCMP_ACT_ALLOW", "SCMP_ACT_LOG"):
        raise ValueError(f"its defaultAction {profile.get('defaultAction')} allows every other call")
    out = copy.deepcopy(profile)
    rules = []
    for rule in out["syscalls"]:
        names = [n for n in (rule.get("names") or ([rule["name"]] if rule.get("name") else [])) if n not in IO_URING]
        if not names:
            continue
        rule.pop("name", None)
        rule["names"] = names
        rules.append(rule)
    rules.append({"names": list(IO_URING), "action": "SCMP_ACT_ERRNO", "errnoRet": EPERM,
                  "comment": "sharedtask: io_uring bypasses seccomp and has been a source of kernel escalations"})
    out["syscalls"] = rules
    return out


def from_oci(seccomp: dict[str, Any]) -> dict[str, Any]:
    """A Docker profile from an OCI ``linux.seccomp`` section (the same field names; flags dropped)."""
    keep = ("defaultAction", "defaultErrnoRet", "architectures", "syscalls")
    return {k: seccomp[k] for k in keep if seccomp.get(k) is not None}


_lock = threading.Lock()
_known: dict[str, Profile] = {}


def _cache_dir() -> Path:
    from sharedtask.resources import cache_root

    return cache_root() / "seccomp"


def _daemon_key(client: Any) -> str:
    info = client.version()
    text = json.dumps([info.get("Version"), info.get("KernelVersion"), info.get("Arch")])
    return hashlib.sha256(text.encode()).hexdigest()[:16] + "-" + str(info.get("Version", "unknown"))


def _bundle_config(container_id: str) -> dict[str, Any] | None:
    for root in BUNDLE_ROOTS:
        try:
            return json.loads((Path(root) / container_id / "config.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
    return None


def _probe(client: Any, image: str) -> dict[str, Any]:
    """Docker's default profile as the daemon hands it to runc for a container with our options."""
    from sharedtask.sandbox.orphans import OWNER_LABEL, SANDBOX_LABEL, owner
    from sharedtask.sandbox.policy import HOSTNAME

    container = client.containers.run(
        image, ["sleep", "60"], detach=True, network_mode="none", cap_drop=["ALL"],
        security_opt=["no-new-privileges"], hostname=HOSTNAME, mem_limit=64 * 2**20, pids_limit=16,
        labels={SANDBOX_LABEL: "1", OWNER_LABEL: owner(), "sharedtask.purpose": "seccomp-probe"})
    try:
        deadline = time.monotonic() + 5  # the bundle exists once the container has started
        config = None
        while config is None and time.monotonic() < deadline:
            config = _bundle_config(container.id)
            if config is None:
                time.sleep(0.1)
        if config is None:
            raise OSError("the daemon's OCI bundle is not readable here (run as root, or set "
                          f"${ENV} to Docker's default.json)")
        seccomp = (config.get("linux") or {}).get("seccomp")
        if not isinstance(seccomp, dict):
            raise OSError("the daemon applies no seccomp profile (seccomp=unconfined or a kernel without it)")
        return from_oci(seccomp)
    finally:
        try:
            container.remove(force=True)
        except Exception:  # noqa: BLE001 - the orphan reaper removes it later
            pass


def profile(client: Any, image: str | None = None) -> Profile:
    """The profile for runc runs on this daemon (cached); Docker's default with a reason when none."""
    env = os.environ.get(ENV)
    key = f"env:{env}" if env else "daemon"
    with _lock:
        if key in _known:
            return _known[key]
        _known[key] = result = _resolve(client, env, image)
        return result


def _resolve(client: Any, env: str | None, image: str | None) -> Profile:
    if env:
        try:
            base = json.loads(Path(env).read_text(encoding="utf-8"))
            text = json.dumps(without_io_uring(base), sort_keys=True)
        except (OSError, ValueError) as exc:
            return Profile(None, f"docker default (io_uring allowed: ${ENV} {env} unusable: {exc})")
        return Profile(text, f"sharedtask: {env} with io_uring refused", env)
    try:
        cached = _cache_dir() / f"{_daemon_key(client)}.json"
    except Exception as exc:  # noqa: BLE001 - no daemon: the run fails there with its own message
        return Profile(None, f"docker default (io_uring allowed: {exc.__class__.__name__})")
    description = "sharedtask: the daemon's default with io_uring refused"
    try:
        return Profile(cached.read_text(encoding="utf-8"), description, str(cached))
    except OSError:
        pass
    if not any(os.access(root, os.R_OK | os.X_OK) for root in BUNDLE_ROOTS):
        return Profile(None, "docker default (io_uring allowed: the daemon's state folder is not readable here; "
                             f"run as root or set ${ENV} to Docker's default.json)")
    errors = []
    for candidate in dict.fromkeys(c for c in (PROBE_IMAGE, image) if c):
        try:
            text = json.dumps(without_io_uring(_probe(client, candidate)), sort_keys=True)
            break
        except Exception as exc:  # noqa: BLE001 - docker.errors.* or OSError: try the next, then say why
            errors.append(f"{candidate}: {str(exc).splitlines()[0][:200] if str(exc) else exc.__class__.__name__}")
    else:
        return Profile(None, "docker default (io_uring allowed: " + "; ".join(errors) + ")")
    cached.parent.mkdir(parents=True, exist_ok=True)
    part = cached.with_name(cached.name + f".{os.getpid()}.part")
    part.write_text(text, encoding="utf-8")
    os.replace(part, cached)
    return Profile(text, description, str(cached))
