"""Which of a run's write limits the kernel holds, and the file systems that hold them.

- ``$outputDir`` is a bounded ext4 image (:mod:`.limitfs`) mounted in a private folder and
  bound into the container; after the run its tree is copied to the run's output folder.
- The container's writable layer (overlay2's layer folder) is put on a bounded image
  between ``create`` and ``start``.
- Volumes the image declares (``VOLUME``) would be anonymous docker volumes, unbounded:
  they get folders of one more bounded image of the disk limit's size instead (without
  the kernel: a size-limited tmpfs each, whose pages count against the memory limit).
  Either way docker makes no volume, and the image's files at that path are not copied in.

Where the kernel cannot hold a limit (not root, no loop driver, another storage driver,
or ``SHAREDTASK_KERNEL_LIMITS=0``) the walk of before holds it and the run record says so
with the reason, as the seccomp profile does: a participant's laptop without root can
still run the sandbox, and an organizer sees in every record what held its limits.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from sharedtask.errors import SharedTaskError
from sharedtask.sandbox import limitfs
from sharedtask.sandbox.outputs import Copied, copy_tree
from sharedtask.sandbox.policy import INPUT_MOUNT, INPUT_RUN_MOUNT, OUTPUT_MOUNT, Limits
from sharedtask.units import format_size

ENV_SWITCH = "SHAREDTASK_KERNEL_LIMITS"
_UNMOUNTING: list[threading.Thread] = []
WALKED = "walked while the container runs"


def kernel_unavailable() -> str | None:
    """Why the kernel cannot hold the limits here (None: it can).

    ``SHAREDTASK_KERNEL_LIMITS``: unset or ``1`` uses the kernel where it can and records
    the walk otherwise; ``0`` always walks; ``require`` refuses to run without the kernel
    (for an organizer's machine, where a silent fallback would be a hole).
    """
    switch = os.environ.get(ENV_SWITCH, "1").strip().lower()
    if switch in ("0", "no", "off", "false"):
        return f"turned off by {ENV_SWITCH}=0"
    reason = limitfs.unavailable()
    if reason is not None and switch == "require":
        raise SharedTaskError(f"the kernel cannot hold the output and disk limits here: {reason}",
                              hint=f"run as root on Linux with the loop driver and e2fsprogs, or unset {ENV_SWITCH}")
    return reason


def declared_volumes(image_attrs: dict[str, Any]) -> list[str]:
    """The image's ``VOLUME`` paths, except the contract's own mounts (bound anyway)."""
    declared = (image_attrs.get("Config") or {}).get("Volumes") or {}
    contract = {INPUT_MOUNT, OUTPUT_MOUNT, INPUT_RUN_MOUNT, "/tmp"}
    return [path for path in sorted(declared) if os.path.normpath(path) not in contract]


@dataclass
class Bounds:
    """The bounded file systems of one run (None where the walk holds the limit instead)."""

    limits: Limits
    output: limitfs.BoundedFs | None = None
    layer: limitfs.BoundedFs | None = None
    volumes: limitfs.BoundedFs | None = None
    declared: list[str] = field(default_factory=list)
    #: the output's and the writable layer's images, made while docker creates the container
    pending: "Future[limitfs.BoundedFs] | None" = None
    staging: "Future[limitfs.BoundedFs] | None" = None
    output_mountpoint: Path | None = None
    output_enforcement: str = WALKED
    disk_enforcement: str = "not enforced: the container did not start"
    copied: Copied = field(default_factory=Copied)
    #: why the kernel does not hold the limits of this run (None: it does), decided once
    unavailable: str | None = None

    @classmethod
    def prepare(cls, limits: Limits, declared: list[str], give: Callable[[Path], None]) -> "Bounds":
        """Start making the output and layer file systems (mkfs and mount take tens of ms each:
        they run while docker creates the container; :meth:`bound_layer` waits for them);
        make the volumes' now. ``give`` hands the output's root to the container user."""
        bounds = cls(limits, declared=declared)
        reason = bounds.unavailable = kernel_unavailable()
        if reason is not None:
            bounds.output_enforcement = f"{WALKED} (not kernel-enforced: {reason})"
            return bounds

        def make_output(mountpoint: Path) -> limitfs.BoundedFs:
            fs = limitfs.create("output", limits.max_output, entries=limits.max_output_entries, mountpoint=mountpoint)
            try:
                give(fs.mountpoint)
            except BaseException:
                limitfs.release(fs)
                raise
            return fs

        try:
            bounds.output_mountpoint = limitfs.new_mountpoint("output")
            pool = ThreadPoolExecutor(2)
            bounds.pending = pool.submit(make_output, bounds.output_mountpoint)
            bounds.staging = pool.submit(limitfs.create, "layer", limits.disk)
            pool.shutdown(wait=False)
            if declared:
                bounds.volumes = limitfs.create("volumes", limits.disk)
                for n in range(len(declared)):
                    folder = bounds.volumes.mountpoint / f"v{n}"
                    folder.mkdir()
                    folder.chmod(0o1777)  # like /tmp: whichever user the container runs as
        except OSError as exc:
            bounds.release()
            raise SharedTaskError(f"the output file system could not be made: {exc}",
                                  hint=f"set {ENV_SWITCH}=0 to fall back to walking $outputDir") from None
        bounds.output_enforcement = (f"enforced by the kernel: a {format_size(limits.max_output)} ext4 image "
                                     f"(+{format_size(limitfs.SLACK)} slack), loop-mounted")
        return bounds

    def apply(self, spec: dict[str, Any], output_dir: Path) -> dict[str, Any]:
        """The container spec with $outputDir and the declared volumes on their bounded file systems."""
        volumes = dict(spec["volumes"])
        if self.output_mountpoint is not None:
            volumes[str(self.output_mountpoint)] = volumes.pop(str(output_dir.resolve()))
        tmpfs = dict(spec.get("tmpfs") or {})
        for n, path in enumerate(self.declared):
            if self.volumes is not None:
                volumes[str(self.volumes.mountpoint / f"v{n}")] = {"bind": path, "mode": "rw"}
            else:  # sized like /tmp: the pages are memory, held by the memory limit too
                tmpfs[path] = f"rw,nosuid,nodev,size={min(self.limits.disk, self.limits.memory)},mode=1777"
        return {**spec, "volumes": volumes, **({"tmpfs": tmpfs} if tmpfs else {})}

    def bound_layer(self, container: Any) -> str | None:
        """Put the created container's writable layer on a bounded image; the overlay2 upper
        folder when the walk must hold the disk limit instead, else None."""
        if self.pending is not None:  # the output's file system must be mounted before the start
            pending, self.pending = self.pending, None
            try:
                self.output = pending.result()
            except OSError as exc:
                raise SharedTaskError(f"the output file system could not be made: {exc}",
                                      hint=f"set {ENV_SWITCH}=0 to fall back to walking $outputDir") from None
        driver = container.attrs.get("GraphDriver") or {}
        upper = (driver.get("Data") or {}).get("UpperDir")
        reason = self.unavailable
        if reason is None and (driver.get("Name") != "overlay2" or not upper or Path(upper).name != "diff"
                               or not os.path.isdir(upper)):
            reason = (f"storage driver {driver.get('Name') or 'unknown'} without a local overlay2 layer folder "
                      "(a remote daemon or another driver)")
        if reason is None:
            try:
                assert self.staging is not None
                staging, self.staging = self.staging.result(), None
                self.layer = limitfs.bound_layer(Path(upper).parent, staging)
            except OSError as exc:
                raise SharedTaskError(f"the container's writable layer could not be bounded: {exc}",
                                      hint=f"set {ENV_SWITCH}=0 to fall back to walking the layer") from None
            self.disk_enforcement = (f"enforced by the kernel: the writable layer is a {format_size(self.limits.disk)} "
                                     f"ext4 image (+{format_size(limitfs.SLACK)} slack), loop-mounted")
            if self.declared:
                self.disk_enforcement += (f"; declared volumes ({', '.join(self.declared)}) are folders of "
                                          "another such image")
            return None
        volumes = (f"; declared volumes ({', '.join(self.declared)}) are bounded tmpfs" if self.declared
                   and self.volumes is None else "")
        if upper and os.access(upper, os.R_OK | os.X_OK):
            self.disk_enforcement = f"enforced: the writable layer is {WALKED} (not kernel-enforced: {reason}){volumes}"
            return str(upper)
        self.disk_enforcement = (f"not enforced: storage driver {driver.get('Name') or 'unknown'} "
                                 "has no writable layer readable by this user")
        return None

    def usage(self) -> tuple[int | None, int | None, int | None]:
        """Output bytes, output entries and layer bytes as the kernel counts them (None: walked)."""
        out_bytes = out_entries = layer_bytes = None
        if self.output is not None:
            out_bytes, out_entries = self.output.usage()
        for fs in (self.layer, self.volumes):  # the disk limit holds for their sum
            if fs is not None:
                try:
                    layer_bytes = (layer_bytes or 0) + fs.usage()[0]
                except OSError:  # docker removed the layer with the container
                    pass
        return out_bytes, out_entries, layer_bytes

    def full(self) -> str | None:
        """``"output"``/``"disk"`` when that file system is (nearly) full: the kernel refused writes."""
        for name, fs in (("output", self.output), ("disk", self.layer), ("disk", self.volumes)):
            try:
                if fs is not None and fs.near_full():
                    return name
            except OSError:
                continue
        return None

    def collect(self, output_dir: Path) -> None:
        """Copy the output tree to ``output_dir`` (after the container is gone)."""
        if self.output is not None:
            # Data bytes, hard links counted per name: what the host would read.
            try:
                self.copied = copy_tree(self.output.mountpoint, output_dir, self.limits.max_output + limitfs.SLACK)
            except OSError as exc:
                self.copied = Copied(complete=False, error=f"{exc.strerror or exc} ({exc.filename or 'an entry'})")

    def detach_layer(self) -> None:
        """Lazily unmount the layer's image from the layer folder, in a thread, before ``docker rm``.

        The container's usage has been read; docker then removes its own small folder, and the
        image's teardown (tens of ms: ext4's unmount and the loop device's) is off the run's path.
        """
        layer, self.layer = self.layer, None
        if layer is None:
            return

        def detach() -> None:
            try:
                limitfs.detach(layer)
            except OSError:
                pass  # docker rm unmounts it with the container
        thread = threading.Thread(target=detach, name="sandbox-detach-layer")
        thread.start()
        _remember(thread)

    def release(self, wait: bool = True) -> None:
        """Unmount what is still mounted (the layer normally went with the container).

        ``wait=False`` unmounts in a thread: tearing down a loop device takes tens of
        milliseconds the run need not wait for once its output is copied. The thread is
        not a daemon, so the interpreter finishes it before it exits; should the process be
        killed first, the next run's reaper unmounts what is left (limitfs.reap).
        """
        systems = [fs for fs in (self.output, self.layer, self.volumes) if fs is not None]
        for future in (self.pending, self.staging):  # made for a container that was never started
            if future is not None:
                try:
                    systems.append(future.result())
                except OSError:
                    pass
        mountpoint = self.output_mountpoint
        self.output = self.layer = self.volumes = self.pending = self.staging = self.output_mountpoint = None

        def unmount() -> None:
            for fs in systems:
                try:
                    limitfs.release(fs)
                except OSError:
                    pass
            if mountpoint is not None:  # when the output's file system was never mounted
                try:
                    mountpoint.rmdir()
                except OSError:
                    pass
        if wait:
            unmount()
        else:
            thread = threading.Thread(target=unmount, name="sandbox-unmount")
            thread.start()
            _remember(thread)


def _remember(thread: threading.Thread) -> None:
    """Keep the unmounts still running (a long-lived worker must not collect finished ones)."""
    _UNMOUNTING[:] = [t for t in _UNMOUNTING if t.is_alive()] + [thread]


def wait_released() -> None:
    """Wait until the unmounts started by ``release(wait=False)`` are done."""
    while _UNMOUNTING:
        _UNMOUNTING.pop().join()
