"""Datasets by id and checksum: the organizer names them, each worker finds and checks its own copy.

The organizer's side hashes the input files once (or takes the sha256 the data
registry recorded when it placed them); a worker looks the id up in its own
``--data-root``, the data store or the bundled samples, re-hashes what it finds and
refuses the job, with the first difference, when a file is missing, extra or changed.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

from sharedtask.data.checksum import sha256
from sharedtask.errors import SharedTaskError
from sharedtask.executor.job import DatasetRef

SAMPLE_PREFIX = "sample/"
_cache: dict[tuple[str, int, int, int], str] = {}  # (path, size, mtime_ns, inode) -> sha256
_lock = threading.Lock()


def _files(root: Path) -> dict[str, Path]:
    """Regular files under ``root`` by path relative to it (links are not followed)."""
    found: dict[str, Path] = {}
    stack = [root]
    while stack:
        folder = stack.pop()
        with os.scandir(folder) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    stack.append(Path(entry.path))
                elif entry.is_file(follow_symlinks=True):
                    found[Path(entry.path).relative_to(root).as_posix()] = Path(entry.path)
    return found


def _hash(path: Path) -> str:
    """sha256 of a file, remembered while its size, mtime and inode stay the same."""
    info = path.stat()
    key = (str(path.resolve()), info.st_size, info.st_mtime_ns, info.st_ino)
    with _lock:
        known = _cache.get(key)
    if known is None:
        known = sha256(path)
        with _lock:
            _cache[key] = known
    return known


def file_digests(input_dir: Path) -> dict[str, str]:
    """sha256 of every file of a dataset folder (the registry's record when it has one)."""
    from sharedtask.data.store import provenance

    recorded = provenance(input_dir)
    if recorded is not None and recorded.get("sha256"):
        return dict(recorded["sha256"])
    return {rel: _hash(path) for rel, path in sorted(_files(input_dir).items())}


def dataset_id(task_id: str, name: str, input_dir: Path, sample_input: Path) -> str:
    """``sample/<task>`` for a bundled sample, the registry id for a registry dataset, else ``<task>/<name>``."""
    from sharedtask.data.store import provenance

    if input_dir.resolve() == sample_input.resolve():
        return SAMPLE_PREFIX + task_id
    recorded = provenance(input_dir)
    if recorded is not None:
        return str(recorded["id"])
    return f"{task_id}/{name}"


def locate(ref: DatasetRef, data_root: Path | None) -> Path:
    """This machine's copy of the dataset's input folder: ``DATA_ROOT/<id>/input`` first,
    then the data store (registry ids), then the bundled sample (``sample/<task>``)."""
    candidates: list[Path] = []
    if data_root is not None:
        candidates.append(data_root / ref.id / "input")
    if ref.id.startswith(SAMPLE_PREFIX):
        from sharedtask.spec import load_task

        try:
            candidates.append(load_task(ref.id[len(SAMPLE_PREFIX):]).sample_dir / "input")
        except SharedTaskError:
            pass
    else:
        from sharedtask.data import get_dataset
        from sharedtask.data.store import dataset_dir

        try:
            candidates.append(dataset_dir(get_dataset(ref.id)) / "input")
        except SharedTaskError:
            pass
    for folder in candidates:
        if folder.is_dir():
            return folder
    where = ", ".join(str(c) for c in candidates) or "nowhere"
    raise SharedTaskError(f"dataset {ref.id} is not on this worker (looked in {where})",
                          hint="copy it to --data-root DIR/<id>/input, or `sharedtask data fetch` it")


def check(ref: DatasetRef, folder: Path) -> None:
    """Raise with the first file that is missing, extra or has another sha256 than the organizer's."""
    have = _files(folder)
    for rel, want in sorted(ref.sha256.items()):
        path = have.get(rel)
        if path is None:
            raise SharedTaskError(f"dataset {ref.id}: {rel} is missing in {folder}",
                                  hint="copy the organizer's dataset to this worker")
        got = _hash(path)
        if got != want:
            raise SharedTaskError(f"dataset {ref.id}: {rel} has sha256 {got[:16]}…, the organizer's has {want[:16]}…",
                                  hint="replace this worker's copy (sharedtask data verify ID tells which files differ)")
    extra = sorted(set(have) - set(ref.sha256))
    if extra:
        raise SharedTaskError(f"dataset {ref.id}: {folder} has {len(extra)} file(s) the organizer's has not, "
                              f"first {extra[0]}", hint="remove them or copy the organizer's dataset again")


