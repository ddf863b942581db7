"""The dataset registry: named datasets declared as data in ``tasks/datasets/*.yml``.

Each dataset belongs to a task and lists its files: where each comes from (a file
shipped in the package, an official URL, a part of an ir_datasets dataset, or only a
local copy imported by hand), its checksum, format and role (input or truth). Every
registry file is checked against ``tasks/dataset.schema.json`` when it loads; an error
names the file and the path inside it, as task specs do.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from sharedtask.errors import SharedTaskError, SpecError, choices_hint
from sharedtask.spec import read_yaml, tasks_dir, yaml_path

SCHEMA_FILE = "dataset.schema.json"
REGISTRY_DIR = "datasets"
IRDS_PREFIX = "irds:"
PACKAGE_DATA = Path(__file__).resolve().parent
#: (source target, format) pairs sharedtask.data.derive can build
DERIVATIONS = {("truth/gold.json", "mathqa-problems-jsonl")}


@dataclass(frozen=True)
class DataFile:
    """One file of a dataset, as the registry declares it."""

    path: str
    role: str  # input | truth
    format: str
    description: str = ""
    required: bool = True
    package: str | None = None
    url: str | None = None
    extract: str | None = None
    irds: str | None = None
    origin: str | None = None
    size: int | None = None
    sha256: str | None = None
    md5: str | None = None
    source_md5: str | None = None  # irds parts written from records: md5 of ir_datasets' source file
    derive: str | None = None  # built from this other target of the dataset (sharedtask.data.derive)
    build: str | None = None  # built from the user's checkout (sharedtask data build; the dataset's checkout)

    @property
    def source(self) -> str:
        """Where the file comes from, as one word: package, url, irds or import. An ``irds``
        file with a ``url`` (the organizers' archive ir_datasets extracts it from) is placed
        through ir_datasets, or from that archive by ``data fetch`` and ``data import``."""
        if self.package:
            return "package"
        if self.irds:
            return "irds"
        if self.url:
            return "url"
        if self.derive:
            return "derived"
        if self.build:
            return "build"
        return "import"

    @property
    def is_glob(self) -> bool:
        return any(ch in self.path for ch in "*?[")

    @property
    def target(self) -> str:
        """The path inside the dataset folder: ``input/...`` or ``truth/...``."""
        return f"{self.role}/{self.path}"

    def package_path(self) -> Path:
        assert self.package is not None
        return PACKAGE_DATA / self.package

    def describe_source(self) -> str:
        if self.package:
            return f"shipped with sharedtask ({self.package})"
        archive = self.url + (f" (member {self.extract})" if self.extract else "") if self.url else ""
        if self.irds:
            return f"ir_datasets {self.irds}" + (f", or the organizers' archive {archive}" if archive else "")
        if self.url:
            return archive
        if self.derive:
            return f"built from {self.derive} once it is placed"
        if self.build:
            return f"built from your {self.build} clone: sharedtask data build ID --from CHECKOUT"
        return "import only: sharedtask data import ID --from DIR" + (f" (the release's {self.origin})" if self.origin else "")


@dataclass(frozen=True)
class Checkout:
    """The repository and commit the dataset's ``build:`` files are derived from."""

    repository: str
    commit: str


@dataclass(frozen=True)
class Dataset:
    id: str
    task: str
    title: str
    files: tuple[DataFile, ...]
    official: bool = False
    irds: str | None = None
    judged_topics: int | None = None
    source_path: Path | None = None
    checkout: Checkout | None = None

    def file(self, target: str) -> DataFile | None:
        return next((f for f in self.files if f.target == target), None)

    def role(self, role: str) -> list[DataFile]:
        return [f for f in self.files if f.role == role]


def registry_dir() -> Path:
    return tasks_dir() / REGISTRY_DIR


def local_registry_dir() -> Path:
    """Datasets declared on this machine: a new edition's truth (``sharedtask qrels --register``,
    docs/assessment.md), in the data store next to the files it places."""
    from sharedtask.data.root import store_root

    return store_root() / "registry"


@cache
def _schema() -> dict[str, Any]:
    with (tasks_dir() / SCHEMA_FILE).open(encoding="utf-8") as fh:
        return json.load(fh)


def read_registry_file(path: Path) -> dict[str, Any]:
    import hashlib

    from sharedtask.spec import known_valid, remember_valid

    doc = read_yaml(path)
    # The task specs' cache of documents that passed their schema (sharedtask.spec) spares
    # importing jsonschema on every short command (about 0.1 s of start-up).

    digest = hashlib.sha256(json.dumps([_schema(), doc], sort_keys=True, default=str).encode()).hexdigest()
    if known_valid(digest):
        return doc
    import jsonschema

    validator = jsonschema.Draft202012Validator(_schema())
    errors = sorted(validator.iter_errors(doc), key=lambda e: (len(e.absolute_path), list(map(str, e.absolute_path))))
    if not errors:
        remember_valid(digest)
    if errors:
        err = errors[0]
        raise SpecError(f"{path}: {yaml_path(list(err.absolute_path))}: {err.message}",
                        hint=f"the registry format is {tasks_dir() / SCHEMA_FILE}")
    return doc


def dataset_from_entry(path: Path, dataset_id: str, entry: dict[str, Any]) -> Dataset:
    from sharedtask.spec import task_ids

    if entry["task"] not in task_ids():
        raise SpecError(f"{path}: datasets.{dataset_id}.task: unknown task {entry['task']!r}")
    files = tuple(DataFile(**f) for f in entry["files"])
    targets = [f.target for f in files]
    dupes = sorted({t for t in targets if targets.count(t) > 1})
    if dupes:
        raise SpecError(f"{path}: datasets.{dataset_id}.files: {', '.join(dupes)} declared twice")
    for f in files:
        if f.irds and not entry.get("irds"):
            raise SpecError(f"{path}: datasets.{dataset_id}: file {f.target} comes from ir_datasets, "
                            "so the dataset needs an irds: id")
        if f.derive and f.derive not in targets:
            raise SpecError(f"{path}: datasets.{dataset_id}: file {f.target} is derived from {f.derive}, "
                            "which the dataset does not declare")
        if f.derive and (f.derive, f.format) not in DERIVATIONS:
            raise SpecError(f"{path}: datasets.{dataset_id}: no way to build {f.format} from {f.derive}",
                            hint="known: " + ", ".join(f"{fmt} from a {src}" for src, fmt in DERIVATIONS))
        if f.build and not entry.get("checkout"):
            raise SpecError(f"{path}: datasets.{dataset_id}: file {f.target} is built from a checkout, "
                            "so the dataset needs checkout: {repository, commit}")
        if f.package and not f.package_path().is_file():
            raise SpecError(f"{path}: datasets.{dataset_id}: {f.package} is not in the package data")
    return Dataset(id=dataset_id, task=entry["task"], title=entry["title"], files=files,
                   official=entry.get("official", False), irds=entry.get("irds"),
                   judged_topics=entry.get("judged_topics"), source_path=path,
                   checkout=Checkout(**entry["checkout"]) if entry.get("checkout") else None)


@cache
def all_datasets() -> dict[str, Dataset]:
    """Every dataset of every registry file, by id (file-name order): the shipped registry,
    then the local one (:func:`local_registry_dir`)."""
    out: dict[str, Dataset] = {}
    for path in [*sorted(registry_dir().glob("*.yml")), *sorted(local_registry_dir().glob("*.yml"))]:
        for dataset_id, entry in read_registry_file(path)["datasets"].items():
            if dataset_id in out:
                raise SpecError(f"{path}: datasets.{dataset_id}: also declared in {out[dataset_id].source_path}")
            out[dataset_id] = dataset_from_entry(path, dataset_id, entry)
    return out


def get_dataset(name: str) -> Dataset:
    """A dataset by registry id or by ``irds:<ir_datasets id>``; unknown names list the known ones."""
    datasets = all_datasets()
    if name.startswith(IRDS_PREFIX):
        irds_id = name[len(IRDS_PREFIX):]
        for ds in datasets.values():
            if ds.irds == irds_id:
                return ds
        known = ", ".join(IRDS_PREFIX + d.irds for d in datasets.values() if d.irds)
        raise SharedTaskError(f"no dataset of the registry is the ir_datasets id {irds_id!r}",
                              hint=f"known: {known}")
    if name not in datasets:
        if "/" in name and Path(name).expanduser().is_dir():  # --dataset is a registry id; a folder is --input
            raise SharedTaskError(f"{name!r} is a folder; --dataset names a dataset of the registry "
                                  "(`sharedtask data list`)", hint=f"give a folder as --input {name} "
                                  f"(evaluate: --truth {name})")
        raise SharedTaskError(f"unknown dataset {name!r}", hint=choices_hint(name, datasets, "datasets"))
    return datasets[name]


def official_dataset(task_id: str) -> Dataset | None:
    """The task's official test dataset (``official: true``), if the registry has one."""
    return next((d for d in all_datasets().values() if d.task == task_id and d.official), None)
