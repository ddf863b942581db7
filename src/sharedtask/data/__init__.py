"""Official data: named, verified datasets (docs/data.md).

``registry`` reads the declarations (``tasks/datasets/*.yml``); ``store`` assembles a
dataset folder in the task's ``$inputDataset`` layout plus its truth, from files shipped
in the package (ARQMath topics and qrels, ``arqmath/``), ir_datasets (``irds``), official
URLs (``fetch``, resumable) or a local copy (import), and verifies them (``checksum``).
"""

from __future__ import annotations

from pathlib import Path

from sharedtask.data.registry import DataFile, Dataset, all_datasets, get_dataset, official_dataset

__all__ = ["DataFile", "Dataset", "all_datasets", "get_dataset", "official_dataset", "official_truth"]


def official_truth(task_id: str) -> tuple[Dataset, Path] | None:
    """The task's official dataset and its truth folder, assembled from what needs no
    download (package files, ir_datasets); None when the registry has none for the task."""
    from sharedtask.data import store

    ds = official_dataset(task_id)
    if ds is None or not any(f.role == "truth" and f.source in ("package", "irds") for f in ds.files):
        return None
    store.assemble(ds, roles=("truth",), show_progress=False)
    return ds, store.dataset_dir(ds) / "truth"
