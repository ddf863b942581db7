"""A build context, collected by us (not by the docker SDK) into the archive dockerd receives.

Why: the context is a stranger's folder. Reading it with ``os.walk`` + ``read_bytes`` hung
``demo`` for ever on a FIFO and exhausted memory on a link to ``/dev/zero`` (issue 26), and it
happened before the build's timeout started. Here every entry is looked at with ``lstat``
and opened relative to its folder's descriptor (``openat``: ``O_NOFOLLOW``, ``O_NONBLOCK``,
then ``fstat``), so only folders, regular files and links that stay inside the context are
taken; the number of entries and the bytes read are bounded, and so is the time (the
build's deadline covers the collection). The archive is written to a spooled temporary
file (at most ``SPOOL`` bytes in memory) and handed to dockerd as a custom context.

The hash (the image label ``sharedtask.source-hash`` that decides whether to rebuild) is
computed from the same bytes, the way it always was (path and bytes of each file in
``os.walk`` order, SKIP_DIRS left out), so existing up-to-date images stay up to date.
``.dockerignore`` is honoured as the docker SDK honours it (its own pattern matcher).
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
import tarfile
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from sharedtask.errors import SharedTaskError
from sharedtask.findings.codes import finding
from sharedtask.findings import Finding

#: Folders left out of the hash (not of the archive: .dockerignore decides that).
SKIP_DIRS = frozenset({".git", "__pycache__", ".pytest_cache", ".hypothesis", ".venv", "node_modules",
                       "sharedtask-runs", "sharedtask-report", "tests", "benchmarks"})
SPOOL = 32 << 20
DOCKERFILE_MAX = 1 << 20
_READ = 1 << 20
_OPEN_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
_OPEN_DIR = os.O_RDONLY | os.O_NOFOLLOW | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0)


@dataclass(frozen=True)
class ContextLimits:
    """The most entries and bytes a build context may hold (``build_sandbox`` in a manifest)."""

    max_files: int = 100_000
    max_bytes: int = 2 * 1024**3


class ContextRefused(SharedTaskError):
    """The context cannot be built: carries the finding (BUILD-CONTEXT) that says why."""

    def __init__(self, found: Finding) -> None:
        super().__init__(f"{found.path}: {found.message}", hint=found.hint)
        self.finding = found


@dataclass
class Collected:
    """The archive for dockerd (positioned at 0), the context's hash and what it holds."""

    archive: IO[bytes]
    digest: str
    files: int
    bytes: int


def _ignore_patterns(root_fd: int) -> list[str]:
    """The lines of ``.dockerignore`` as the docker SDK reads them (blank lines and comments out)."""
    try:
        text = _read_small(root_fd, ".dockerignore", "context/.dockerignore", DOCKERFILE_MAX)
    except FileNotFoundError:
        return []
    lines = (line.strip() for line in text.decode("utf-8", "replace").splitlines())
    return [line for line in lines if line and not line.startswith("#")]


def _read_small(dir_fd: int, rel: str, shown: str, limit: int) -> bytes:
    """A regular file below ``dir_fd`` (no link anywhere on the way), at most ``limit`` bytes."""
    parts = [p for p in rel.split("/") if p not in ("", ".")]
    if not parts or ".." in parts:
        raise ContextRefused(finding("BUILD-CONTEXT", f"{rel!r} is not a path inside the build context", shown))
    fds: list[int] = []
    try:
        fd = dir_fd
        for part in parts[:-1]:
            try:
                fd = os.open(part, _OPEN_DIR, dir_fd=fd)
            except FileNotFoundError:
                raise FileNotFoundError(shown) from None
            except OSError as exc:
                raise ContextRefused(finding("BUILD-CONTEXT", f"the folder {part!r} on its way cannot be opened: "
                                             f"{exc.strerror} (a link?)", shown)) from None
            fds.append(fd)
        try:
            fd = os.open(parts[-1], _OPEN_FILE, dir_fd=fd)
        except OSError as exc:
            if exc.errno == errno.ENOENT:
                raise FileNotFoundError(shown) from None
            raise ContextRefused(finding("BUILD-CONTEXT", f"cannot open it: {exc.strerror} (a link or a special file?)",
                                         shown)) from None
        fds.append(fd)
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ContextRefused(finding("BUILD-CONTEXT", "is not a regular file", shown))
        if st.st_size > limit:
            raise ContextRefused(finding("BUILD-CONTEXT", f"holds {st.st_size:,} bytes; at most {limit:,} are read",
                                         shown))
        return os.read(fd, limit + 1)[:limit]
    finally:
        for f in fds:
            os.close(f)


def read_dockerfile(context: Path, dockerfile: str) -> str:
    """The Dockerfile's text, read without following links (a FIFO or /dev/zero cannot stand in)."""
    root = _open_root(context)
    try:
        data = _read_small(root, dockerfile, str(context / dockerfile), DOCKERFILE_MAX)
    finally:
        os.close(root)
    return data.decode("utf-8", "replace")


def _open_root(context: Path) -> int:
    try:
        return os.open(context, _OPEN_DIR)
    except OSError as exc:
        raise ContextRefused(finding("BUILD-CONTEXT", f"the build context cannot be opened as a folder: "
                                     f"{exc.strerror}", str(context))) from None


class _Walk:
    def __init__(self, context: Path, dockerfile: str, extra: str, limits: ContextLimits, deadline: float,
                 timeout: float) -> None:
        from docker.utils.build import PatternMatcher  # the SDK's own .dockerignore semantics

        self.context, self.dockerfile, self.limits = context, dockerfile, limits
        self.deadline, self.timeout = deadline, timeout
        self.digest = hashlib.sha256(extra.encode())
        self.files = 0
        self.bytes = 0
        self.archive = tempfile.SpooledTemporaryFile(max_size=SPOOL)
        self.tar = tarfile.open(fileobj=self.archive, mode="w", format=tarfile.PAX_FORMAT)
        self.root = _open_root(context)
        patterns = _ignore_patterns(self.root)
        self.matcher = PatternMatcher(patterns)
        self.exceptions = any(p.startswith("!") for p in patterns)

    def refuse(self, rel: str, message: str) -> ContextRefused:
        return ContextRefused(finding("BUILD-CONTEXT", message, str(self.context / rel) if rel else str(self.context)))

    def tick(self, rel: str) -> None:
        if time.monotonic() > self.deadline:
            raise SharedTaskError(f"collecting the build context {self.context} timed out after {self.timeout:g} s "
                                  f"(build limit; at {rel or '.'})")

    def sent(self, rel: str) -> bool:
        return rel in (self.dockerfile, ".dockerignore") or not self.matcher.matches(rel)

    def run(self) -> Collected:
        try:
            self.folder(self.root, "", hashed=True)
            self.tar.close()
        except BaseException:
            self.archive.close()
            raise
        finally:
            os.close(self.root)
        self.archive.seek(0)
        return Collected(self.archive, self.digest.hexdigest()[:24], self.files, self.bytes)

    def folder(self, fd: int, rel: str, hashed: bool) -> None:
        """Files first, then sub-folders, each sorted by name: os.walk's order, which the hash keeps."""
        entries = sorted(os.scandir(fd), key=lambda e: e.name)
        subdirs = []
        for entry in entries:
            child = f"{rel}/{entry.name}" if rel else entry.name
            self.tick(child)
            st = entry.stat(follow_symlinks=False)
            if stat.S_ISDIR(st.st_mode):
                subdirs.append((entry.name, child, st))
                continue
            hash_it = hashed and not entry.name.endswith((".pyc", ".pyo"))
            send = self.sent(child)
            if not (hash_it or send):
                continue
            self.count(child)
            if stat.S_ISREG(st.st_mode):
                self.file(fd, entry.name, child, st, hash_it, send)
            elif stat.S_ISLNK(st.st_mode):
                self.link(fd, entry.name, child, st, hash_it, send)
            else:
                kind = ("a FIFO" if stat.S_ISFIFO(st.st_mode) else "a socket" if stat.S_ISSOCK(st.st_mode)
                        else "a device" if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode) else "a special file")
                raise self.refuse(child, f"is {kind}: a build context holds regular files, folders and links "
                                  "inside it only")
        for name, child, st in subdirs:
            hash_it = hashed and name not in SKIP_DIRS
            send = self.sent(child)
            if not (hash_it or send or self.exceptions):
                continue
            self.count(child)
            if send:
                self.tar.addfile(self.info(child, st, tarfile.DIRTYPE))
            try:
                sub = os.open(name, _OPEN_DIR, dir_fd=fd)
            except OSError as exc:
                raise self.refuse(child, f"cannot be opened as a folder: {exc.strerror}") from None
            try:
                self.folder(sub, child, hash_it)
            finally:
                os.close(sub)

    def count(self, rel: str) -> None:
        self.files += 1
        if self.files > self.limits.max_files:
            raise self.refuse(rel, f"the build context holds more than {self.limits.max_files:,} entries "
                              "(the organizer's bound)")

    @staticmethod
    def info(rel: str, st: os.stat_result, kind: bytes, size: int = 0) -> tarfile.TarInfo:
        info = tarfile.TarInfo(rel)
        info.type, info.size = kind, size
        info.mode, info.mtime = stat.S_IMODE(st.st_mode), int(st.st_mtime)
        return info  # uid, gid 0: what COPY gives every file anyway

    def file(self, dir_fd: int, name: str, rel: str, st: os.stat_result, hash_it: bool, send: bool) -> None:
        try:
            fd = os.open(name, _OPEN_FILE, dir_fd=dir_fd)
        except OSError as exc:
            raise self.refuse(rel, f"cannot be opened: {exc.strerror}") from None
        try:
            now = os.fstat(fd)
            if not stat.S_ISREG(now.st_mode):  # replaced since the lstat
                raise self.refuse(rel, "is no longer a regular file")
            if hash_it:
                self.digest.update(rel.encode() + b"\0")
            reader = _Bounded(fd, now.st_size, self, rel, hash_it)
            if send:
                self.tar.addfile(self.info(rel, now, tarfile.REGTYPE, now.st_size), reader)
            else:
                while reader.read(_READ):
                    pass
            if reader.left:
                raise self.refuse(rel, "changed while it was read")
        except OSError as exc:
            raise self.refuse(rel, f"could not be read: {exc}") from None
        finally:
            os.close(fd)

    def link(self, dir_fd: int, name: str, rel: str, st: os.stat_result, hash_it: bool, send: bool) -> None:
        target = os.readlink(name, dir_fd=dir_fd)
        inside = os.path.normpath(os.path.join(os.path.dirname(rel), target))
        if os.path.isabs(target) or inside == ".." or inside.startswith("../"):
            raise self.refuse(rel, f"is a symbolic link to {target!r}, outside the build context")
        if hash_it:
            self.digest.update(rel.encode() + b"\0" + b"symlink:" + os.fsencode(target))
        if send:
            info = self.info(rel, st, tarfile.SYMTYPE)
            info.linkname = target
            self.tar.addfile(info)


class _Bounded:
    """A file object over ``fd`` that reads at most ``size`` bytes, hashes them and keeps the
    walk's byte bound and deadline."""

    def __init__(self, fd: int, size: int, walk: _Walk, rel: str, hash_it: bool) -> None:
        self.fd, self.left, self.walk, self.rel, self.hash_it = fd, size, walk, rel, hash_it

    def read(self, n: int = _READ) -> bytes:
        n = min(n if n >= 0 else self.left, self.left, _READ)
        if n <= 0:
            return b""
        self.walk.tick(self.rel)
        data = os.read(self.fd, n)
        self.left -= len(data)
        self.walk.bytes += len(data)
        if self.walk.bytes > self.walk.limits.max_bytes:
            raise self.walk.refuse(self.rel, f"the build context holds more than {self.walk.limits.max_bytes:,} "
                                   "bytes (the organizer's bound)")
        if self.hash_it:
            self.walk.digest.update(data)
        return data


def collect(context: Path, *, dockerfile: str = "Dockerfile", extra: str = "", limits: ContextLimits | None = None,
            deadline: float | None = None, timeout: float = 0.0) -> Collected:
    """Collect ``context`` into an archive for dockerd, with its hash (see the module's docstring).

    Raises ContextRefused (a BUILD-CONTEXT finding) or SharedTaskError when the deadline passes."""
    limits = limits or ContextLimits()
    deadline = deadline if deadline is not None else time.monotonic() + 3600
    return _Walk(Path(context), dockerfile, extra, limits, deadline, timeout).run()
