"""What a container left in ``$outputDir``, read by the host without trusting it.

A container controls every name in its output directory: ``run.txt`` may be a
symlink to a host file, a FIFO that blocks a reader, a device, or a 100 GB
sparse file; the tree may be millions of entries or thousands of levels deep.
Everything here therefore:

- never follows a link: files are opened relative to a directory descriptor
  with ``O_NOFOLLOW`` and checked with ``fstat`` on the open descriptor;
- accepts only regular files, and refuses them by size before reading a byte;
- walks trees iteratively with a bound on entries, bytes and depth.

See docs/threat-model.md for what this protects against.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from sharedtask.units import format_size

#: Validation statuses of a run record that make a run unusable (no scores, a failed row).
REJECTED = ("invalid", "refused", "no run file", "error")
#: Deepest directory level the host descends into (deeper trees are counted, not walked).
MAX_DEPTH = 256


@dataclass(frozen=True)
class RunFileCheck:
    """The run file of an output directory, or why the host refuses to read it.

    ``code`` is a finding code of the catalogue (``RUN-OUTPUT-LINK``,
    ``RUN-OUTPUT-SPECIAL``, ``RUN-TOO-LARGE``, ``RUN-MISSING``) when refused.
    """

    path: Path | None
    code: str | None = None
    reason: str = ""

    @property
    def ok(self) -> bool:
        return self.path is not None


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISLNK, "a symbolic link"), (stat.S_ISFIFO, "a FIFO"),
                       (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISDIR, "a directory")):
        if test(mode):
            return name
    return "not a regular file"


def check_run_file(output_dir: Path, file_name: str, max_bytes: int) -> RunFileCheck:
    """Find ``file_name`` or ``file_name.gz`` at the top of ``output_dir`` (TIRA's lookup).

    Only ``lstat`` is used, so nothing a link points to is touched; the size is the
    apparent size (a sparse file counts with its full length).
    """
    try:
        dir_fd = os.open(output_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError as exc:
        return RunFileCheck(None, "RUN-MISSING", f"the output directory cannot be opened: {exc.strerror}")
    try:
        found: list[tuple[str, os.stat_result]] = []
        for name in (file_name, f"{file_name}.gz"):
            try:
                found.append((name, os.stat(name, dir_fd=dir_fd, follow_symlinks=False)))
            except FileNotFoundError:
                continue
            except OSError as exc:
                return RunFileCheck(None, "RUN-MISSING", f"{name} cannot be examined: {exc.strerror}")
    finally:
        os.close(dir_fd)
    if not found:
        return RunFileCheck(None, "RUN-MISSING", f"no {file_name} or {file_name}.gz in the output directory")
    if len(found) > 1:
        return RunFileCheck(None, "RUN-MISSING", f"the output has both {file_name} and {file_name}.gz "
                                                 "(TIRA refuses this: keep exactly one)")
    name, info = found[0]
    if stat.S_ISLNK(info.st_mode):
        return RunFileCheck(None, "RUN-OUTPUT-LINK",
                            f"{name} is a symbolic link; the host never follows links out of a container's output")
    if not stat.S_ISREG(info.st_mode):
        return RunFileCheck(None, "RUN-OUTPUT-SPECIAL", f"{name} is {_kind(info.st_mode)}, not a regular file")
    if info.st_size > max_bytes:
        return RunFileCheck(None, "RUN-TOO-LARGE", f"{name} is {format_size(info.st_size)}, more than the "
                                                   f"{format_size(max_bytes)} the host reads of a run file")
    return RunFileCheck(output_dir / name)


@dataclass
class Usage:
    """Apparent bytes and entries (files, directories, links, others) under a directory."""

    bytes: int = 0
    entries: int = 0
    depth: int = 0
    truncated: bool = False  # the walk stopped at a bound: the figures are lower bounds


def output_usage(root: Path, *, max_bytes: int | None = None, max_entries: int | None = None,
                 entry_cost: int = 0, allocated: bool = False) -> Usage:
    """Walk ``root`` without following links, stopping as soon as a bound is passed.

    Iterative (a tree 100,000 levels deep costs no recursion), and it stops early
    so that a burst of files is noticed in one walk of bounded cost. Sizes are
    apparent sizes (a sparse file counts whole: the host would read it whole) unless
    ``allocated`` asks for the blocks used on disk; every entry costs at least
    ``entry_cost`` bytes.
    """
    usage = Usage()
    stack: list[tuple[str, int]] = [(os.fspath(root), 0)]
    while stack:
        current, depth = stack.pop()
        usage.depth = max(usage.depth, depth)
        try:
            with os.scandir(current) as entries:
                for entry in entries:
                    usage.entries += 1
                    usage.bytes += entry_cost
                    try:
                        if entry.is_dir(follow_symlinks=False):
                            if depth + 1 < MAX_DEPTH:
                                stack.append((entry.path, depth + 1))
                            else:
                                usage.depth = MAX_DEPTH
                                usage.truncated = True
                        else:
                            info = entry.stat(follow_symlinks=False)
                            usage.bytes += info.st_blocks * 512 if allocated else info.st_size
                    except OSError:
                        continue
                    if (max_bytes is not None and usage.bytes > max_bytes) or (
                            max_entries is not None and usage.entries > max_entries):
                        usage.truncated = True
                        return usage
        except OSError:
            continue
    return usage


def remove_tree(root: Path) -> None:
    """Delete a directory tree a container wrote, however deep, without following links.

    ``shutil.rmtree`` recurses once per level (Python 3.11) and fails with
    ``RecursionError`` on a few thousand nested directories. This walk keeps one
    descriptor open, goes down with ``openat`` and back up with ``..``.
    """
    try:
        info = os.lstat(root)
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(info.st_mode):
        os.unlink(root)
        return
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
    fd = os.open(root, flags)
    path: list[str] = []  # names from root down to the directory fd is open on
    try:
        while True:
            _make_writable(fd)
            with os.scandir(fd) as entries:
                batch = [(e.name, e.is_dir(follow_symlinks=False)) for _, e in zip(range(4096), entries)]
            child = None
            for name, is_dir in batch:
                if is_dir:
                    child = child or name
                else:
                    os.unlink(name, dir_fd=fd)
            if child is not None:
                new_fd = os.open(child, flags, dir_fd=fd)
                os.close(fd)
                fd = new_fd
                path.append(child)
            elif batch:
                continue  # more than one batch of files: read on
            elif not path:
                break
            else:
                parent = os.open("..", flags, dir_fd=fd)
                os.close(fd)
                fd = parent
                os.rmdir(path.pop(), dir_fd=fd)
    finally:
        os.close(fd)
    os.rmdir(root)


def _make_writable(fd: int) -> None:
    """A container may leave directories without write permission for their owner."""
    try:
        os.fchmod(fd, 0o700)
    except OSError:
        pass  # not ours and we are not root: unlink will say so


@dataclass
class Copied:
    """What :func:`copy_tree` copied; ``complete`` is False when it stopped at ``max_bytes``."""

    bytes: int = 0
    entries: int = 0
    complete: bool = True
    error: str | None = None  # an entry that could not be copied (the copy stopped there)


def copy_tree(src: Path, dst: Path, max_bytes: int) -> Copied:
    """Copy a tree a container wrote, however deep, keeping links as links and holes as holes.

    ``cp -a`` and ``tar`` stop at PATH_MAX (a few hundred levels of short names); this
    walk holds one descriptor per side, goes down with ``openat`` and up with ``..``,
    as :func:`remove_tree` does. Owners, modes and times are kept; FIFOs and sockets are
    recreated as such (never opened). Data bytes are counted against ``max_bytes``: hard
    links are copied apart, so a file linked a thousand times cannot multiply the copy.
    """
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
    copied = Copied()
    sfd, dfd = os.open(src, flags), os.open(dst, flags)
    pending: list[list[str]] = []  # per level below the root: subdirectories still to copy
    try:
        while True:
            subdirs: list[str] = []
            with os.scandir(sfd) as entries:
                names = [e.name for e in entries]
            for name in names:
                info = os.stat(name, dir_fd=sfd, follow_symlinks=False)
                copied.entries += 1
                if stat.S_ISDIR(info.st_mode):
                    os.mkdir(name, 0o700, dir_fd=dfd)
                    subdirs.append(name)
                    continue
                if not _copy_entry(name, info, sfd, dfd, copied, max_bytes):
                    copied.complete = False
                    return copied
            pending.append(subdirs)
            while pending and not pending[-1]:  # this level is done: fix it up and go back up
                pending.pop()
                _copy_attrs(os.fstat(sfd), None, dfd)
                if not pending:
                    return copied
                sfd, dfd = _reopen(sfd, ".."), _reopen(dfd, "..")
            child = pending[-1].pop()
            sfd, dfd = _reopen(sfd, child), _reopen(dfd, child)
    finally:
        os.close(sfd)
        os.close(dfd)


def _reopen(fd: int, name: str) -> int:
    new = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
    os.close(fd)
    return new


def _copy_entry(name: str, info: os.stat_result, sfd: int, dfd: int, copied: Copied, max_bytes: int) -> bool:
    """Copy one non-directory entry; False when its data would pass ``max_bytes``."""
    mode = info.st_mode
    if stat.S_ISLNK(mode):
        os.symlink(os.readlink(name, dir_fd=sfd), name, dir_fd=dfd)
    elif stat.S_ISREG(mode):
        src = os.open(name, os.O_RDONLY | os.O_NOFOLLOW, dir_fd=sfd)
        try:
            dst = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600, dir_fd=dfd)
            try:
                if not _copy_data(src, dst, info.st_size, copied, max_bytes):
                    return False
                _copy_attrs(info, None, dst)
            finally:
                os.close(dst)
        finally:
            os.close(src)
        return True
    elif stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode):
        os.mknod(name, stat.S_IFMT(mode) | 0o600, dir_fd=dfd)
    else:
        return True  # a device: the container cannot make one (no CAP_MKNOD); never copied
    _copy_attrs(info, (name, dfd), None)
    return True


def _copy_data(src: int, dst: int, size: int, copied: Copied, max_bytes: int) -> bool:
    """Copy the data extents only (SEEK_DATA/SEEK_HOLE): a sparse file stays sparse."""
    offset = 0
    while offset < size:
        try:
            start = os.lseek(src, offset, os.SEEK_DATA)
        except OSError:  # ENXIO: only a hole is left
            break
        end = os.lseek(src, start, os.SEEK_HOLE)
        copied.bytes += end - start
        if copied.bytes > max_bytes:
            return False
        done = start
        os.lseek(dst, start, os.SEEK_SET)
        while done < end:  # sendfile: copy_file_range refuses two file systems (EXDEV) on Linux >= 5.19
            n = os.sendfile(dst, src, done, end - done)
            if n == 0:
                break
            done += n
        offset = end
    os.ftruncate(dst, size)
    return True


def _copy_attrs(info: os.stat_result, at: tuple[str, int] | None, fd: int | None) -> None:
    """Owner, mode and times of ``info`` onto an open file, or onto a name (never followed)."""
    if fd is not None:
        if os.geteuid() == 0:
            os.fchown(fd, info.st_uid, info.st_gid)
        os.fchmod(fd, stat.S_IMODE(info.st_mode))
        os.utime(fd, ns=(info.st_atime_ns, info.st_mtime_ns))
        return
    assert at is not None
    name, dir_fd = at
    if os.geteuid() == 0:
        os.chown(name, info.st_uid, info.st_gid, dir_fd=dir_fd, follow_symlinks=False)
    if not stat.S_ISLNK(info.st_mode):
        os.chmod(name, stat.S_IMODE(info.st_mode), dir_fd=dir_fd)
    os.utime(name, ns=(info.st_atime_ns, info.st_mtime_ns), dir_fd=dir_fd, follow_symlinks=False)
