"""Official data: named, verified datasets (docs/data.md).

``registry`` reads the declarations (``tasks/datasets/*.yml``); ``store`` assembles a
dataset folder in the task's ``$inputDataset`` layout plus its truth, from files shipped
in the package (ARQMath topics and qrels, ``arqmath/``), ir_datasets (``irds``), official
URLs (``fetch``, resumable) or a local copy (import), and verifies them (``checksum``).
"""

from __future__ import annotations

from pathlib import Path

from sharedtask.data.registry import DataFile, Dataset, all_datasets, get_dataset, official_dataset

__all__ = ["DataFile", "Dataset", "all_datasets", "dataset_folders", "get_dataset", "import_hint", "official_dataset",
           "official_truth", "placed_dataset", "placing_hint"]


def official_truth(task_id: str) -> tuple[Dataset, Path] | None:
    """The task's official dataset and its truth folder when its truth ships with the package
    or was imported (``data import``); None otherwise. Truth that ir_datasets or a URL would
    download is used only when named (``--dataset``): a command must not reach the network unasked."""
    from sharedtask.data import store

    ds = official_dataset(task_id)
    truth = [f for f in (ds.files if ds is not None else ()) if f.role == "truth"]
    if ds is None or not truth or any(f.source in ("irds", "url") for f in truth):
        return None
    missing = store.assemble(ds, roles=("truth",), show_progress=False)
    if missing and import_hint(ds):  # truth imported by hand only (MathQA), not imported yet
        return None
    return ds, store.dataset_dir(ds) / "truth"


def placed_dataset(truth_dir: Path) -> Dataset | None:
    """The registry dataset whose placed truth folder ``truth_dir`` is (None for any other folder)."""
    from sharedtask.data import store
    from sharedtask.errors import SharedTaskError

    truth_dir = Path(truth_dir)
    if truth_dir.name != "truth":
        return None
    dataset_id = store.read_manifest(truth_dir.parent).get("dataset")
    if not isinstance(dataset_id, str):
        return None
    try:
        return get_dataset(dataset_id)
    except SharedTaskError:
        return None


def import_hint(ds: Dataset) -> str | None:
    """How to place a dataset's truth when all of it comes by import only (the MathQA suite's
    files); None otherwise (ARQMath Task 2's imported formula index is read through --input)."""
    files = [f for f in ds.role("truth") if f.required]
    if not files or any(f.source != "import" for f in ds.role("truth")):
        return None
    return f"sharedtask data import {ds.id} --from DIR, DIR holding {', '.join(f.origin or f.path for f in files)}"


def placing_hint(ds: Dataset, missing: list[DataFile]) -> str:
    """The command that places ``missing`` files of ``ds``: build from a checkout, or fetch/import."""
    if ds.checkout is not None and any(f.source == "build" for f in missing):
        return (f"sharedtask data build {ds.id} --from CHECKOUT, a clone of {ds.checkout.repository} "
                f"at commit {ds.checkout.commit}")
    return f"sharedtask data fetch {ds.id}, or sharedtask data import {ds.id} --from PATH"


def dataset_folders(task_id: str, name: str) -> tuple[Path, Path | None, str]:
    """``$inputDataset`` and truth folders of a registry dataset of ``task_id``, assembled.

    ``name`` is a full id (``arqmath-3-task1/test``), ``irds:<id>`` or the short name
    (``test``). Input files that need a download or an import are a clear error that
    says which command places them; missing truth only means "not scored".
    """
    from sharedtask.data import store
    from sharedtask.errors import SharedTaskError

    ds = get_dataset(name if "/" in name or name.startswith("irds:") else f"{task_id}/{name}")
    if ds.task != task_id:
        raise SharedTaskError(f"dataset {ds.id} belongs to task {ds.task}, not {task_id}")
    missing = store.assemble(ds, show_progress=False)
    inputs = [f.target for f in missing if f.role == "input"]
    if inputs:
        raise SharedTaskError(f"dataset {ds.id} lacks {', '.join(inputs)}", hint=placing_hint(ds, missing))
    root = store.dataset_dir(ds)
    truth_missing = any(f.role == "truth" for f in missing)
    return root / "input", None if truth_missing else root / "truth", ds.id
