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
