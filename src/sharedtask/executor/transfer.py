"""A finished run folder as one checksummed archive, and its atomic landing on the organizer's side.

Outputs come back without a shared file system: the worker packs the run folder
(``output/``, logs, ``run-record.json``, ``ir-metadata.yml``) into a gzip'd tar that
travels in the job's result. The container wrote ``output/``, so the packer walks it
without following links and within a depth bound. The organizer trusts neither the
worker nor the team: it makes folders and regular files only, each with ``openat``
below a staging folder of its own, and refuses the whole archive (that run fails, not
the batch) for a link of any kind, a device, a FIFO, an absolute or ``..`` path or more
bytes than the task allows. The archive's sha256 is checked before a byte is extracted,
the folder is extracted beside its destination and renamed into place: a run folder is
either complete or absent.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import io
import os
import stat
import tarfile
import uuid
import zlib
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


class LandingRefused(SharedTaskError):
    """A worker's archive holds something a run folder may not: that run fails, the batch goes on."""


#: Per member, what it is when it is not a regular file or a folder (for the refusal).
_KINDS = {tarfile.SYMTYPE: "a symbolic link", tarfile.LNKTYPE: "a hard link", tarfile.CHRTYPE: "a character device",
          tarfile.BLKTYPE: "a block device", tarfile.FIFOTYPE: "a FIFO"}
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def _parts(member: tarfile.TarInfo) -> list[str]:
    """The member's path as plain names, or a refusal naming it (absolute, ``..``, ``.``, empty, too deep)."""
    name = member.name
    parts = name.split("/")
    if name.startswith("/") or any(p in ("", ".", "..") for p in parts) or "\x00" in name:
        raise LandingRefused(f"the outputs hold {name[:200]!r}, an absolute or escaping path",
                             hint="a run folder may hold plain relative names only")
    if len(parts) > MAX_DEPTH + 2:
        raise LandingRefused(f"the outputs hold {name[:200]!r}, deeper than {MAX_DEPTH} levels")
    return parts


def _open_dir(parent: int, name: str, create: bool) -> int:
    """``name`` in the folder ``parent`` as a folder descriptor, never through a link (``openat``)."""
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=parent)
    except FileNotFoundError:
        if not create:
            raise
    os.mkdir(name, 0o755, dir_fd=parent)
    return os.open(name, _DIR_FLAGS, dir_fd=parent)


def _folder(root: int, parts: list[str]) -> int:
    """The folder ``parts`` below ``root`` (made as needed), as a new descriptor."""
    current = os.dup(root)
    try:
        for part in parts:
            following = _open_dir(current, part, create=True)
            os.close(current)
            current = following
    except BaseException:
        os.close(current)
        raise
    return current


def _extract(tar: tarfile.TarFile, root: int, max_bytes: int, max_entries: int) -> None:
    """Folders and regular files only, each made with ``openat`` below ``root``, within the bounds."""
    written = entries = 0
    for member in tar:
        entries += 1
        if entries > max_entries:
            raise LandingRefused(f"the outputs hold more than {max_entries} entries")
        parts = _parts(member)
        if not (member.isdir() or member.isreg()):
            kind = _KINDS.get(member.type, f"of tar type {member.type!r}")
            target = f" to {member.linkname[:200]!r}" if member.issym() or member.islnk() else ""
            raise LandingRefused(f"the outputs hold {member.name[:200]!r}, {kind}{target}",
                                 hint="a run's outputs may hold regular files and folders only; "
                                      "write the file itself, not a link")
        try:
            if member.isdir():
                os.close(_folder(root, parts))
                continue
            if written + member.size > max_bytes:
                raise LandingRefused(f"the outputs unpack to more than {max_bytes} bytes "
                                     f"(at {member.name[:200]!r})")
            parent = _folder(root, parts[:-1])
            try:
                fd = os.open(parts[-1], _FILE_FLAGS, 0o644, dir_fd=parent)
            finally:
                os.close(parent)
        except (FileExistsError, NotADirectoryError, IsADirectoryError):
            raise LandingRefused(f"the outputs hold {member.name[:200]!r} twice, or as a file and a folder") from None
        source = tar.extractfile(member)
        assert source is not None
        with os.fdopen(fd, "wb") as out:
            while chunk := source.read(1 << 20):
                written += len(chunk)
                if written > max_bytes:
                    raise LandingRefused(f"the outputs unpack to more than {max_bytes} bytes "
                                         f"(at {member.name[:200]!r})")
                out.write(chunk)


def _write_extra(root: int, name: str, text: str) -> None:
    if "/" in name or name in ("", ".", ".."):
        raise ValueError(f"not a plain file name: {name!r}")
    try:
        os.unlink(name, dir_fd=root)
    except FileNotFoundError:
        pass
    except IsADirectoryError:
        raise LandingRefused(f"the outputs hold a folder named {name!r}, a file the coordinator writes") from None
    except PermissionError:  # Linux: unlink of a folder is EISDIR or EPERM
        raise LandingRefused(f"the outputs hold a folder named {name!r}, a file the coordinator writes") from None
    with os.fdopen(os.open(name, _FILE_FLAGS, 0o644, dir_fd=root), "w", encoding="utf-8") as fh:
        fh.write(text)


def land(archive_b64: str, sha256: str, run_dir: Path, extra: dict[str, str] | None = None, *,
         max_bytes: int = 2**40, max_entries: int = 10**7) -> None:
    """Check, extract beside ``run_dir`` and rename into place; ``extra`` files are written last.

    The archive came from a worker that ran a team's code: nothing in it is followed. Only
    folders and regular files are made, each with ``openat`` below a staging folder this
    process created, within ``max_bytes`` and ``max_entries``. Raises
    :class:`LandingRefused` naming the member for a link, a device, a FIFO, an absolute or
    ``..`` path, or too much; :class:`SharedTaskError` when the archive is not the one the
    worker sent. Either way nothing lands.
    """
    try:
        data = base64.b64decode(archive_b64, validate=True)
    except (ValueError, TypeError):
        raise SharedTaskError(f"the outputs for {run_dir.name} arrived damaged (not base64)",
                              hint="run the job again") from None
    got = hashlib.sha256(data).hexdigest()
    if got != sha256:
        raise SharedTaskError(f"the outputs for {run_dir.name} arrived damaged: sha256 {got[:16]}…, "
                              f"the worker sent {str(sha256)[:16]}…", hint="run the job again")
    run_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = run_dir.parent / f".{run_dir.name}.landing-{uuid.uuid4().hex[:8]}"
    staging.mkdir()
    try:
        root = os.open(staging, _DIR_FLAGS)
        try:
            try:
                with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
                    _extract(tar, root, max_bytes, max_entries)
            except (tarfile.TarError, EOFError, gzip.BadGzipFile, zlib.error) as exc:
                raise LandingRefused(f"the outputs are not a readable archive ({exc.__class__.__name__}: "
                                     f"{str(exc)[:200]})") from None
            for name, text in (extra or {}).items():
                _write_extra(root, name, text)
        finally:
            os.close(root)
        if run_dir.exists() or run_dir.is_symlink():
            remove_tree(run_dir)
        os.replace(staging, run_dir)
    except BaseException:
        remove_tree(staging)
        raise
