"""Size limits the kernel enforces: a sparse ext4 image per run, loop-mounted.

Why not a walk: a walk of a directory misses what it cannot reach in time (trees
thousands of levels deep, a burst between two polls, volumes elsewhere). A file
system of a fixed size cannot be written past its end: ``write`` fails with ENOSPC
at any depth, and ``statvfs`` says how full it is in one call.

Each bounded file system is an ext4 image, sparse (it takes on disk only what was
written), made with ``mkfs.ext4`` for this run, loop-mounted, and unlinked at once,
so the kernel frees its blocks when the last mount goes away. Its free space is
set exactly with ext4's ``reserved_clusters`` (Documentation/ABI/testing/sysfs-fs-ext4):
a writer can use ``limit + SLACK`` bytes and no more, so what passes the limit is
seen (status ``output-limit``/``disk-limit``) while the overshoot stays <= SLACK.

Measured alternatives (docs/threat-model.md, "Limits"): XFS project quotas need the
host's file system to be XFS mounted with ``prjquota``; ``--storage-opt size`` needs
overlay2 on such an XFS; a size-limited tmpfs is enforced too, but its pages are RAM.

Loop devices are autoclear (``mount -o loop``), and every image is named after the
process that made it (:func:`sharedtask.sandbox.orphans.owner`), so :func:`reap`
unmounts what a SIGKILLed process left (the backing file's name stays readable in
``/sys/block/loopN/loop/backing_file`` after the unlink).
"""

from __future__ import annotations

import ctypes
import errno
import os
import re
import shutil
import subprocess
import uuid
from dataclasses import dataclass
from pathlib import Path

from sharedtask.sandbox.orphans import owner, owner_alive

#: Bytes a writer may pass the limit by before the kernel says ENOSPC (seen, not silent).
SLACK = 512 * 1024
#: A writer that failed with less than this left below its limit was most likely refused by the
#: kernel: ext4 can refuse a large write() whole rather than fill the last blocks (measured:
#: ``dd bs=1M`` stops exactly at the limit with 256 KiB of slack left).
NEAR = 1024 * 1024
BLOCK = 4096
INODE_SIZE = 256  # mke2fs's default for ext4
#: Where images and mount points live: on disk (a sparse image in a tmpfs would be RAM).
ENV_DIR = "SHAREDTASK_LIMITS_DIR"
DEFAULT_DIR = Path("/var/tmp/sharedtask-limits")
PREFIX = "sharedtask-limit"
MNT_DETACH = 2
MS_BIND = 4096


class LimitFsError(OSError):
    """A bounded file system could not be made or mounted (the message says why)."""


def base_dir() -> Path:
    return Path(os.environ.get(ENV_DIR) or DEFAULT_DIR)


def _tool(name: str) -> str | None:
    """``name`` on PATH or in the sbin folders (a non-login root shell may lack them)."""
    return shutil.which(name, path=os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin"]))


def unavailable() -> str | None:
    """Why kernel-enforced limits cannot be used here, or None when they can."""
    if not Path("/proc/self/mountinfo").is_file():
        return "not Linux: loop-mounted file systems need a Linux host"
    if os.geteuid() != 0:
        return "not root: mounting a loop device needs root (the organizer's worker and service run as root)"
    for tool in ("mkfs.ext4", "mount", "umount"):
        if _tool(tool) is None:
            return f"{tool} not found (apt-get install e2fsprogs mount)"
    if not Path("/dev/loop-control").exists():
        return "no /dev/loop-control: the kernel has no loop driver (modprobe loop)"
    return None


def _run(argv: list[str]) -> None:
    proc = subprocess.run([_tool(argv[0]) or argv[0], *argv[1:]], capture_output=True, text=True)
    if proc.returncode != 0:
        raise LimitFsError(f"{' '.join(argv[:2])} failed: {(proc.stderr or proc.stdout).strip()[:300]}")


def _umount(path: Path, lazy: bool = False) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.umount2(os.fsencode(path), MNT_DETACH if lazy else 0) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err), str(path))


def _mount_bind(source: Path, target: Path) -> None:
    """mount(2) with MS_BIND: what ``mount --bind`` does, without a process."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.mount(os.fsencode(source), os.fsencode(target), None, ctypes.c_ulong(MS_BIND), None) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err), str(target))


def _device_name(path: Path) -> str:
    """``loopN`` of the file system mounted at ``path`` (from its device number)."""
    dev = os.stat(path).st_dev
    link = Path(f"/sys/dev/block/{os.major(dev)}:{os.minor(dev)}")
    return link.resolve().name


@dataclass
class BoundedFs:
    """One mounted image: ``limit`` bytes (and ``entries`` inodes) allowed, ``limit + SLACK`` possible."""

    mountpoint: Path
    device: str
    limit: int
    entries: int | None
    free_blocks: int  # f_bavail when empty
    free_inodes: int  # f_favail when empty
    block_size: int = BLOCK

    def usage(self) -> tuple[int, int]:
        """Bytes (blocks of data, directories and metadata) and entries written since it was empty."""
        st = os.statvfs(self.mountpoint)
        return ((self.free_blocks - st.f_bavail) * st.f_frsize, self.free_inodes - st.f_favail)

    def near_full(self) -> bool:
        """Within :data:`NEAR` of the limit (a failed write here was the limit's doing)."""
        used, _ = self.usage()
        return used > self.limit - NEAR or os.statvfs(self.mountpoint).f_favail == 0

    def over(self) -> str | None:
        """Which bound was passed (``"bytes"``/``"entries"``), or None."""
        used, entries = self.usage()
        if used > self.limit:
            return "bytes"
        if self.entries is not None and entries > self.entries:
            return "entries"
        return None


def _name(purpose: str) -> str:
    """A new name carrying this process as its owner (what :func:`reap` reads back)."""
    _, pid, started = owner().split("/")
    return f"{PREFIX}-{pid}-{started}-{purpose}-{uuid.uuid4().hex[:8]}"


def new_mountpoint(purpose: str) -> Path:
    """An empty folder to mount on later (its path can go into a container spec first)."""
    folder = base_dir()
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    mnt = folder / f"{_name(purpose)}.mnt"
    mnt.mkdir()
    return mnt


def create(purpose: str, limit: int, *, entries: int | None = None, root_owner: str = "0:0",
           mountpoint: Path | None = None) -> BoundedFs:
    """Make, mount and bound a fresh file system; ``mountpoint`` defaults to a new folder in :func:`base_dir`.

    ``entries`` caps files, directories and links (the image gets that many inodes and a
    few more, so passing it is seen); without it one inode per 8 KiB (mke2fs's default is
    16 KiB; a layer of many small files, e.g. a pip install, needs more).
    """
    folder = base_dir()
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    name = _name(purpose)
    image = folder / f"{name}.img"
    mnt = mountpoint or folder / f"{name}.mnt"
    inodes = entries + 64 if entries is not None else max(limit // 8192, 1024)
    # Room for the data, the inode tables and ext4's own metadata (bitmaps, descriptors, ~2 %),
    # then cut down to exactly limit + SLACK with reserved_clusters below.
    size = limit + SLACK + inodes * INODE_SIZE + limit // 32 + 16 * 1024**2
    size = -(-size // BLOCK) * BLOCK
    mounted = False
    try:
        with open(image, "xb") as fh:
            fh.truncate(size)  # sparse: nothing is written but mkfs's metadata
        _run(["mkfs.ext4", "-q", "-F", "-b", str(BLOCK), "-m", "0", "-N", str(inodes), "-L", purpose[:16],
              "-O", "^has_journal,^resize_inode", "-E", f"lazy_itable_init=1,nodiscard,root_owner={root_owner}",
              str(image)])
        mnt.mkdir(exist_ok=True)
        # noinit_itable: the image is sparse (zeros); no background thread writes the inode tables.
        _run(["mount", "-t", "ext4", "-o", "loop,noinit_itable,nosuid,nodev", str(image), str(mnt)])
        mounted = True
        image.unlink()
        (mnt / "lost+found").rmdir()  # the output starts empty (TIRA); e2fsck would recreate it
        device = _device_name(mnt)
        _set_capacity(mnt, device, limit + SLACK)
        st = os.statvfs(mnt)
        return BoundedFs(mnt, device, limit, entries, st.f_bavail, st.f_favail, st.f_frsize)
    except BaseException:
        if mounted:
            try:
                _umount(mnt, lazy=True)
            except OSError:
                pass
        image.unlink(missing_ok=True)
        if mnt.parent == folder:
            try:
                mnt.rmdir()
            except OSError:
                pass
        raise


def bound_layer(layer_dir: Path, staging: BoundedFs) -> BoundedFs:
    """Put a created container's overlay2 layer folder (``diff``, ``work``, ``link``, ``lower``)
    on ``staging`` (a fresh :func:`create`), before the container starts.

    The folder's few entries are copied onto the image (``cp -a``: owners, modes, xattrs),
    which is then bind-mounted over the folder; dockerd mounts the overlay from there at
    start, so every write of the container lands on the image. ``docker rm`` unmounts it
    (moby's ``EnsureRemoveAll`` unmounts a busy folder it removes), which frees the loop
    device with the container.
    """
    try:
        _run(["cp", "-a", f"{layer_dir}/.", f"{staging.mountpoint}/"])
        _mount_bind(staging.mountpoint, layer_dir)
    finally:
        release(staging)
    if _device_name(layer_dir) != staging.device:
        raise LimitFsError(f"{layer_dir} is not on the bounded image after the bind mount")
    st = os.statvfs(layer_dir)  # docker's few entries are part of the empty state
    return BoundedFs(layer_dir, staging.device, staging.limit, None, st.f_bavail, st.f_favail, st.f_frsize)


def _set_capacity(mnt: Path, device: str, capacity: int) -> None:
    """Reserve all blocks but ``capacity`` bytes' worth: nobody, root included, can use reserved clusters."""
    knob = Path(f"/sys/fs/ext4/{device}/reserved_clusters")
    st = os.statvfs(mnt)
    want = -(-capacity // st.f_frsize)
    extra = st.f_bavail - want
    if extra < 0:
        raise LimitFsError(f"the image holds {st.f_bavail * st.f_frsize} bytes, less than {capacity}")
    knob.write_text(str(int(knob.read_text()) + extra))
    if os.statvfs(mnt).f_bavail != want:
        raise LimitFsError(f"{knob} did not bound the free space to {capacity} bytes")


def release(fs: BoundedFs) -> None:
    """Unmount (lazily if still busy) and remove the mount point; the loop device clears itself."""
    try:
        _umount(fs.mountpoint)
    except OSError as exc:
        # EINVAL/ENOENT: not mounted any more (docker removed the layer with its container)
        if exc.errno not in (errno.EINVAL, errno.ENOENT):
            _umount(fs.mountpoint, lazy=True)
    if fs.mountpoint.parent == base_dir():
        try:
            fs.mountpoint.rmdir()
        except OSError:
            pass


def detach(fs: BoundedFs) -> None:
    """Lazy unmount (MNT_DETACH): whoever still uses the file system keeps it until done."""
    _umount(fs.mountpoint, lazy=True)


_NAME = re.compile(rf"{PREFIX}-(\d+)-(\d+|\?)-")


def _dead(name: str) -> bool:
    match = _NAME.match(name)
    if match is None:
        return False
    host = owner().split("/")[0]
    return owner_alive(f"{host}/{match.group(1)}/{match.group(2)}") is False


def _mountpoints(major_minor: str) -> list[str]:
    points = []
    with open("/proc/self/mountinfo", encoding="utf-8", errors="surrogateescape") as fh:
        for line in fh:
            fields = line.split()
            if len(fields) > 4 and fields[2] == major_minor:
                points.append(fields[4].replace("\\040", " "))
    return points


def reap() -> list[str]:
    """Unmount the bounded file systems (and delete the images) of processes that are gone.

    Call after the orphan containers are removed: docker unmounts a writable layer with
    its container; what is still mounted then belongs to nobody.
    """
    reaped: list[str] = []
    if os.geteuid() != 0:
        return reaped
    for backing in Path("/sys/block").glob("loop*/loop/backing_file"):
        try:
            name = Path(backing.read_text().strip().removesuffix(" (deleted)")).name
            major_minor = (backing.parent.parent / "dev").read_text().strip()
        except OSError:
            continue
        if not _dead(name):
            continue
        for point in _mountpoints(major_minor):
            try:
                _umount(Path(point), lazy=True)
                reaped.append(point)
            except OSError:
                continue
    folder = base_dir()
    if folder.is_dir():
        for leftover in folder.iterdir():
            if not _dead(leftover.name):
                continue
            try:
                if leftover.is_dir() and not os.path.ismount(leftover):
                    leftover.rmdir()
                elif leftover.is_file():
                    leftover.unlink()
                reaped.append(str(leftover))
            except OSError:
                continue
    return reaped
