"""A worker's scratch folders: one per delivery of a job, each marked with the process that owns it.

A worker unpacks nothing of the organizer's here, but a run's outputs (up to the task's output
limit) sit in its scratch folder until they are sent back; a worker killed mid-run would leave
them on the disk for ever. Each folder holds an ``.owner`` file (the owner value of
:mod:`sharedtask.sandbox.orphans`: host, pid and the pid's start time), so a restarted worker
removes the folders whose owner is gone and never those of a live worker sharing the folder.
"""

from __future__ import annotations

import uuid
from pathlib import Path

from sharedtask.sandbox.orphans import owner, owner_alive
from sharedtask.sandbox.outputs import remove_tree

OWNER_FILE = ".owner"


def new_scratch(work_dir: Path, job_id: str) -> Path:
    """A fresh folder for one delivery of ``job_id``, marked as this process's."""
    work_dir.mkdir(parents=True, exist_ok=True)
    folder = work_dir / f"{job_id}-{uuid.uuid4().hex[:8]}"
    folder.mkdir()
    (folder / OWNER_FILE).write_text(owner() + "\n", encoding="utf-8")
    return folder


def remove_stale(work_dir: Path) -> list[Path]:
    """Remove scratch folders whose owning process on this host has ended; returns them.

    A folder without an owner mark (made by hand, or by an older version) is left alone,
    and so is one whose owner is on another host (a shared file system).
    """
    removed: list[Path] = []
    try:
        entries = sorted(work_dir.iterdir())
    except OSError:
        return removed
    for folder in entries:
        if folder.is_symlink() or not folder.is_dir():
            continue
        try:
            value = (folder / OWNER_FILE).read_text(encoding="utf-8").strip()
        except OSError:
            continue
        if owner_alive(value) is False:
            remove_tree(folder)
            removed.append(folder)
    return removed
