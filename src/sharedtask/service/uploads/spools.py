"""An upload on its way to disk: hashed and counted as it is written, refused past the limit,
named by the process that writes it so that a restart removes only the spools of the dead."""

from __future__ import annotations

import hashlib
import os
import secrets
from pathlib import Path

from sharedtask.service.uploads.bounds import UploadError


def spool_path(uploads: Path, suffix: str) -> Path:
    """A new spool's path, ``uploads/<pid>-<random><suffix>``: the process id tells a server
    starting up which spools belong to a live sibling (``serve --processes``) and which to a killed one."""
    uploads.mkdir(parents=True, exist_ok=True)
    return uploads / f"{os.getpid()}-{secrets.token_hex(8)}{suffix}"


def remove_stale_spools(uploads: Path) -> None:
    """Remove the spools of server processes that are gone (killed mid-upload); a spool of a process
    of this host that still runs (a sibling server process) is left alone."""
    from sharedtask.service.locks import gone, owner

    if not uploads.is_dir():
        return
    host = owner().partition(":")[0]
    for leftover in uploads.iterdir():
        pid = leftover.name.partition("-")[0]
        if pid.isdigit() and int(pid) != os.getpid() and not gone(f"{host}:{pid}:"):
            continue
        if leftover.is_file() or leftover.is_symlink():
            leftover.unlink(missing_ok=True)


class Spool:
    """Writes an upload to a file while hashing and counting it; refuses past ``limit`` bytes."""

    def __init__(self, path: Path, limit: int) -> None:
        self.path, self.limit = path, limit
        self.size = 0
        self._sha = hashlib.sha256()
        self._fh = open(path, "wb")

    def write(self, chunk: bytes) -> None:
        self.size += len(chunk)
        if self.size > self.limit:
            raise UploadError(413, f"the image archive is larger than the limit of {self.limit} bytes",
                              hint="make the image smaller (multi-stage build, fewer layers)")
        self._sha.update(chunk)
        self._fh.write(chunk)

    def close(self) -> str:
        self._fh.close()
        return self._sha.hexdigest()

    def discard(self) -> None:
        self._fh.close()
        self.path.unlink(missing_ok=True)
