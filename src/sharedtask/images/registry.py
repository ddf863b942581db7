"""The organizer's registry: how images reach compute workers by layer, so shared layers travel once.

A ``docker save`` archive carries every layer of its image, so seven images on one base moved
the base seven times (3.07 GB, issue 41). Pushed to a registry, an image is a manifest naming
its layers by digest; a worker's daemon pulls ``HOST:PORT/name@sha256:<manifest>`` and fetches
only the layers it lacks. The worker still runs only what has the organizer's image id
(:func:`sharedtask.images.shipping.ensure`).

``serve --broker`` uses the registry named by ``--images-registry HOST:PORT`` (checked to
answer when the server starts), or starts Debian's ``docker-registry`` (the distribution
registry) on loopback with its storage in the data folder: plain HTTP is what Docker accepts
from 127.0.0.0/8 without any set-up, and loopback keeps the teams' images on this machine.
"""

from __future__ import annotations

import atexit
import re
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from sharedtask.errors import SharedTaskError

BINARY = "docker-registry"
#: a registry's address as Docker names it: host (name, IPv4, [IPv6]) and port (443 when left out)
ADDRESS = re.compile(r"(?:[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?|\[[0-9A-Fa-f:]+\])(?::(?P<port>[0-9]{1,5}))?")


def check_address(address: str, option: str = "--images-registry") -> str:
    """``HOST[:PORT]`` as Docker names a registry, or one line saying what was expected."""
    match = ADDRESS.fullmatch(address)
    if match is None or (match["port"] is not None and not 0 < int(match["port"]) < 65536):
        raise SharedTaskError(f"{option} {address!r}: expected HOST[:PORT] of a registry, e.g. registry.example.org:5000",
                              hint="the address workers pull from, without http:// and without a path")
    return address


def check_answers(address: str, option: str = "--images-registry", timeout: float = 5.0) -> None:
    """One line unless ``address`` answers as a registry (the v2 API's ``/v2/``, by https then http).

    Why: a registry that is away would fail every submission at its first push; the organizer
    hears it once, at start. 401 counts as an answer (a registry with logins)."""
    import ssl
    import urllib.error
    import urllib.request

    check_address(address, option)
    # A probe only (nothing is sent but GET /v2/): the registry's certificate is Docker's to trust
    # (/etc/docker/certs.d/HOST:PORT/ca.crt), not this Python's, so it is not verified here.
    probe = ssl.create_default_context()
    probe.check_hostname, probe.verify_mode = False, ssl.CERT_NONE
    reasons = []
    for scheme in ("https", "http"):
        try:
            with urllib.request.urlopen(f"{scheme}://{address}/v2/", timeout=timeout,  # noqa: S310
                                        context=probe if scheme == "https" else None) as response:
                if response.headers.get("Docker-Distribution-Api-Version"):
                    return
                reasons.append(f"{scheme}: not a registry's answer")
        except urllib.error.HTTPError as exc:
            if exc.code == 401 and exc.headers.get("Docker-Distribution-Api-Version"):
                return
            reasons.append(f"{scheme}: HTTP {exc.code}")
        except (ssl.SSLError, urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            reasons.append(f"{scheme}: {getattr(reason, 'strerror', None) or reason}")
    raise SharedTaskError(f"{option} {address} does not answer as a registry ({'; '.join(map(str, reasons))})",
                          hint="start it (docker-registry serve CONFIG) or leave the option out (serve starts one "
                               "on loopback); --images-dir DIR ships whole archives instead")


def registry_of(reference: str) -> str:
    """The registry a reference is pulled from, by Docker's rule: the first component when it has a
    ``.`` or ``:`` or is ``localhost``, else Docker Hub (``docker.io``)."""
    first, slash, _ = reference.partition("/")
    return first if slash and ("." in first or ":" in first or first == "localhost") else "docker.io"


def is_loopback(address: str) -> bool:
    """``localhost``, 127.0.0.0/8 or ``[::1]``, with or without a port."""
    import ipaddress

    host = address[1:].split("]")[0] if address.startswith("[") else address.rsplit(":", 1)[0]
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_pull(reference: str, allowed: str | None) -> None:
    """One line unless a worker may pull ``reference``: from its ``--images-registry``, or, without
    one, from a registry on its own loopback (what ``serve --broker`` starts). Why: as for archives
    (issue 39), a job in the broker must not send a worker's daemon to any host it names."""
    source = registry_of(reference)
    if (source == allowed) if allowed else is_loopback(source):
        return
    raise SharedTaskError(f"image {reference[:200]} is not in this worker's registry "
                          f"({allowed or 'none given: loopback registries only'})",
                          hint="a worker pulls only from the organizer's registry: start it with "
                               "--images-registry HOST[:PORT]")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _port_free(port: int) -> bool:
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


@dataclass
class LocalRegistry:
    """``docker-registry`` on 127.0.0.1, its blobs and access log in ``folder`` (kept across restarts,
    on the same port when it is free: jobs stored before a restart name that address)."""

    folder: Path
    port: int
    process: subprocess.Popen[bytes]

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def log(self) -> Path:
        return self.folder / "registry.log"

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(30)


def available() -> str | None:
    """The path of Debian's ``docker-registry``, or None."""
    return shutil.which(BINARY)


def _die_with_parent() -> Callable[[], None] | None:
    """For the child: SIGTERM when the server dies, even by SIGKILL (Linux ``prctl(PR_SET_PDEATHSIG)``,
    man 2 prctl), so a killed server leaves no registry holding its port. Resolved here, in the
    parent: the child between fork and exec only calls it (no import, no lookup)."""
    import ctypes
    import signal

    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):  # not Linux: atexit still stops it on a clean exit
        return None
    return lambda: prctl(1, int(signal.SIGTERM))  # 1: PR_SET_PDEATHSIG


def start_local(folder: Path, *, limit: float = 30.0) -> LocalRegistry:
    """Start ``docker-registry`` on loopback for this process's life (stopped at exit)."""
    binary = available()
    if binary is None:
        raise SharedTaskError(f"{BINARY} is not installed", hint="apt-get install docker-registry")
    folder = folder.resolve()
    folder.mkdir(parents=True, exist_ok=True)
    port_file = folder / "port"
    kept = int(port_file.read_text()) if port_file.is_file() and port_file.read_text().strip().isdigit() else 0
    port = kept if kept and _port_free(kept) else _free_port()
    port_file.write_text(f"{port}\n")
    config = folder / "config.yml"
    # The distribution registry's configuration (docs.docker.com/registry/configuration): a folder
    # for storage, loopback only, deletes refused.
    config.write_text(f"version: 0.1\nlog:\n  level: info\nstorage:\n  filesystem:\n    rootdirectory: "
                      f"{folder / 'data'}\nhttp:\n  addr: 127.0.0.1:{port}\n")
    process = subprocess.Popen([binary, "serve", str(config)], stdout=open(folder / "registry.log", "ab"),
                               stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, preexec_fn=_die_with_parent())
    registry = LocalRegistry(folder, port, process)
    atexit.register(registry.stop)
    deadline = time.monotonic() + limit  # a hang bound: it answers in well under a second
    while time.monotonic() < deadline:
        if process.poll() is not None:
            tail = registry.log.read_text(errors="replace").strip().splitlines()[-1:] or ["no output"]
            raise SharedTaskError(f"{BINARY} stopped at start: {tail[0][:300]}", hint=f"see {registry.log}")
        try:
            check_answers(registry.address, timeout=1.0)
            return registry
        except SharedTaskError:
            time.sleep(0.1)
    registry.stop()
    raise SharedTaskError(f"{BINARY} did not answer on {registry.address} within {limit:g} s",
                          hint=f"see {registry.log}")


__all__ = ["LocalRegistry", "available", "check_address", "check_answers", "check_pull", "is_loopback",
           "registry_of", "start_local"]
