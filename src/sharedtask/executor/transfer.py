"""A finished run folder as one checksummed archive, and its atomic landing on the organizer's side.

Outputs come back without a shared file system: the worker packs the run folder
(``output/``, logs, ``run-record.json``, ``ir-metadata.yml``) into a gzip'd tar that
travels in the job's result. The container wrote ``output/``, so the packer walks it
without following links and within a depth bound, and the organizer extracts with
tarfile's ``data`` filter (PEP 706: no absolute paths, no links out of the folder, no
devices). The archive's sha256 is checked before a byte is extracted, the folder is
extracted beside its destination and renamed into place: a run folder is either
complete or absent.
"""

from __future__ import annotations

import base64
import hashlib
import io
import os
import stat
import tarfile
import uuid
from pathlib import Path

from sharedtask.errors import SharedTaskError
from sharedtask.sandbox.outputs import MAX_DEPTH, remove_tree


def pack(folder: Path) -> tuple[str, str]:
    """The folder as a base64 gzip'd tar, and the sha256 of the tar.gz bytes.

    Regular files, directories and symbolic links (as links) are kept; FIFOs, devices
    and levels deeper than ``MAX_DEPTH`` are left out.
    """
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz", compresslevel=6) as tar:
        stack: list[tuple[Path, int]] = [(folder, 0)]
        while stack:
            current, depth = stack.pop()
            with os.scandir(current) as entries:
                for entry in sorted(entries, key=lambda e: e.name):
                    path = Path(entry.path)
                    info = os.lstat(path)
                    name = path.relative_to(folder).as_posix()
                    if stat.S_ISDIR(info.st_mode):
                        tar.add(path, arcname=name, recursive=False)
                        if depth + 1 < MAX_DEPTH:
                            stack.append((path, depth + 1))
                    elif stat.S_ISLNK(info.st_mode):
                        tar.add(path, arcname=name, recursive=False)
                    elif stat.S_ISREG(info.st_mode):
                        member = tar.gettarinfo(path, arcname=name)
                        with open(path, "rb", opener=lambda p, f: os.open(p, f | os.O_NOFOLLOW)) as fh:
                            tar.addfile(member, fh)
    data = buffer.getvalue()
    return base64.b64encode(data).decode("ascii"), hashlib.sha256(data).hexdigest()


def land(archive_b64: str, sha256: str, run_dir: Path, extra: dict[str, str] | None = None) -> None:
    """Check, extract beside ``run_dir`` and rename into place; ``extra`` files are written first.

    Raises :class:`SharedTaskError` when the archive is not the one the worker sent.
    """
    data = base64.b64decode(archive_b64)
    got = hashlib.sha256(data).hexdigest()
    if got != sha256:
        raise SharedTaskError(f"the outputs for {run_dir.name} arrived damaged: sha256 {got[:16]}…, "
                              f"the worker sent {sha256[:16]}…", hint="run the job again")
    run_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = run_dir.parent / f".{run_dir.name}.landing-{uuid.uuid4().hex[:8]}"
    staging.mkdir()
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
            tar.extractall(staging, filter="data")
        for name, text in (extra or {}).items():
            (staging / name).write_text(text, encoding="utf-8")
        if run_dir.exists() or run_dir.is_symlink():
            remove_tree(run_dir)
        os.replace(staging, run_dir)
    except BaseException:
        remove_tree(staging)
        raise
