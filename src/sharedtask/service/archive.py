"""The organizer's download of a task's runs (``GET /api/tasks/{task}/archive``), built from untrusted folders.

Why: ``output/run.txt`` was written by a team's container. A run killed at its output
limit can leave a file of any apparent size (a sparse 10 GB file takes a few KB of disk),
and a symbolic link or a FIFO where a file should be. Adding such a file as it is would
make the server read and gzip 10 GB, read a file the link points to, or wait forever on
the FIFO.

So every file of a run folder is opened without following links (``O_NOFOLLOW`` on each
component below the run folder, ``O_NONBLOCK`` so that a FIFO cannot block), must be a
regular file, at most the task's output limit (``sandbox.max_output``) and not sparse
(a hole before its end, or far fewer bytes on disk than its length); then exactly the
length it had when it was checked is copied, in chunks, and never more. A file that is
left out is not an error: the run's entry in ``submissions.json`` says which and why
(``archive_notes``).
"""

from __future__ import annotations

import errno
import io
import json
import os
import stat
import tarfile
import tempfile
from pathlib import Path
from typing import Any

from fastapi.responses import FileResponse
from sqlalchemy import select
from sqlalchemy.orm import Session
from starlette.background import BackgroundTask

from sharedtask.service import submissions
from sharedtask.service.state import ServiceState, task_of, team_names
from sharedtask.service.models import Submission
from sharedtask.units import format_size, parse_size

CHUNK = 1 << 20
#: The files of a run folder the archive holds, each as ``<folder>/<file name>``.
RUN_FILES = ("output/run.txt", "run-record.json", "ir-metadata.yml")
#: Below this length a file is never called sparse for its block count alone (small files may
#: live inline in the inode, with no block of their own).
SPARSE_MIN = 1 << 20
#: A file above SPARSE_MIN with fewer than 1/SPARSE_RATIO of its length on disk is sparse.
SPARSE_RATIO = 8


def task_archive(task_id: str, session: Session, service: ServiceState) -> FileResponse:
    """Every finished run of the task with its record and ir_metadata, and submissions.json (.tar.gz)."""
    task = task_of(service, task_id)
    limit = parse_size(task.sandbox.max_output, "output limit")
    names = team_names(session)
    subs = list(session.scalars(select(Submission).where(Submission.task_id == task_id,
                                                          Submission.run_dir.is_not(None))
                                .order_by(Submission.id)))
    fd, tmp = tempfile.mkstemp(prefix="archive-", suffix=".tar.gz", dir=service.config.data_dir)
    try:
        with open(fd, "wb") as raw, tarfile.open(fileobj=raw, mode="w:gz") as tar:
            tar.copybufsize = CHUNK
            index = []
            for sub in subs:
                folder = f"{task_id}/{names[sub.team_id]}/{sub.id}-{sub.tag}"
                entry: dict[str, Any] = {**submissions.submission_json(sub, names[sub.team_id]), "folder": folder}
                notes = [note for name in RUN_FILES
                         if (note := add_run_file(tar, Path(sub.run_dir or ""), name,
                                                  f"{folder}/{Path(name).name}", limit))]
                if notes:
                    entry["archive_notes"] = notes
                index.append(entry)
            data = json.dumps(index, indent=2, default=str).encode("utf-8")
            info = tarfile.TarInfo(f"{task_id}/submissions.json")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return FileResponse(tmp, media_type="application/gzip", filename=f"{task_id}-runs.tar.gz",
                        background=BackgroundTask(lambda: Path(tmp).unlink(missing_ok=True)))


def add_run_file(tar: tarfile.TarFile, run_dir: Path, relative: str, arcname: str, limit: int) -> str | None:
    """Add ``run_dir/relative`` as ``arcname`` if it is safe to; otherwise a note saying why it is left out.

    A file that does not exist is skipped without a note (a failed run has no run.txt).
    """
    try:
        fd = _open_below(run_dir, relative)
    except FileNotFoundError:
        return None
    except _LeftOut as exc:
        return f"{relative} was left out: {exc}"
    except OSError as exc:
        return f"{relative} was left out: it cannot be opened ({os.strerror(exc.errno or 0)})"
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return f"{relative} was left out: it is not a regular file ({_kind(info.st_mode)})"
        if info.st_size > limit:
            return (f"{relative} was left out: it is {info.st_size} bytes long, more than the task's output "
                    f"limit of {format_size(limit)}")
        if _sparse(fd, info):
            return (f"{relative} was left out: it is sparse ({info.st_size} bytes long, {info.st_blocks * 512} "
                    "bytes on disk)")
        member = tarfile.TarInfo(arcname)
        member.size, member.mode, member.mtime = info.st_size, 0o644, int(info.st_mtime)
        source = _Exactly(fd, info.st_size)
        tar.addfile(member, source)
        if source.short:
            return f"{relative} shrank while it was archived: its last {source.short} bytes are zeros"
        return None
    finally:
        os.close(fd)


class _LeftOut(Exception):
    """Why a path below a run folder is not opened."""


def _open_below(run_dir: Path, relative: str) -> int:
    """``relative`` opened for reading below ``run_dir`` with no link followed on the way.

    Each folder is opened with ``O_NOFOLLOW`` relative to the one above (``openat``), so a
    link anywhere below ``run_dir`` is refused, and the file with ``O_NONBLOCK``, so that
    opening a FIFO returns at once.
    """
    parts = Path(relative).parts
    flags = os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW
    folder = os.open(run_dir, os.O_RDONLY | os.O_CLOEXEC | os.O_DIRECTORY)
    try:
        for part in parts[:-1]:
            try:
                below = os.open(part, flags | os.O_DIRECTORY, dir_fd=folder)
            except OSError as exc:
                if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
                    raise
                link = stat.S_ISLNK(os.stat(part, dir_fd=folder, follow_symlinks=False).st_mode)
                raise _LeftOut(f"{part} above it is a symbolic link" if link
                               else f"{part} above it is not a folder") from None
            os.close(folder)
            folder = below
        try:
            return os.open(parts[-1], flags | os.O_NONBLOCK | os.O_NOCTTY, dir_fd=folder)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise _LeftOut("it is a symbolic link") from None
            raise
    finally:
        os.close(folder)


def _sparse(fd: int, info: os.stat_result) -> bool:
    """A hole before the end (SEEK_HOLE), or, where holes cannot be asked for, few blocks on disk."""
    if info.st_size == 0:
        return False
    try:
        hole = os.lseek(fd, 0, os.SEEK_HOLE)
        os.lseek(fd, 0, os.SEEK_SET)
        if hole < info.st_size:
            return True
    except OSError:
        pass
    return info.st_size > SPARSE_MIN and info.st_blocks * 512 * SPARSE_RATIO < info.st_size


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a folder")):
        if test(mode):
            return name
    return "an unknown kind of file"


class _Exactly:
    """``size`` bytes of ``fd`` and never more; zeros if the file ended sooner (counted in ``short``)."""

    def __init__(self, fd: int, size: int) -> None:
        self.fd, self.left, self.short = fd, size, 0

    def read(self, n: int = -1) -> bytes:
        n = self.left if n is None or n < 0 else min(n, self.left)
        data = os.read(self.fd, min(n, CHUNK)) if n else b""
        if n and not data:
            data = bytes(min(n, CHUNK))
            self.short += len(data)
        self.left -= len(data)
        return data
