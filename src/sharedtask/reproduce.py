"""Re-run recorded software and compare the new run with the old one.

Two entry points, both ending in :func:`sharedtask.evaluate.compare.compare`:

* :func:`reproduce_record`: one run from its ``run-record.json`` (the exact image id,
  command, dataset folder and limits the sandbox recorded), re-run through
  :func:`sharedtask.sandbox.run`;
* :func:`reproduce_baselines`: every baseline of the manifest on each of its tasks'
  samples, compared with the reference runs stored in the repository
  (``baselines/reference-runs/<task>/<baseline>.txt``); ``update=True`` stores the new
  runs as the references instead (after a deliberate change of a baseline).
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from sharedtask.errors import SharedTaskError
from sharedtask.evaluate.compare import Comparison, compare
from sharedtask.evaluate.reproduction import RBO_P, Thresholds
from sharedtask.manifest import Manifest, Software
from sharedtask.resources import resource
from sharedtask.spec import Task, load_task

Say = Callable[[str], None]
REFERENCE_DIR = Path("baselines") / "reference-runs"


@dataclass
class Reproduction:
    """One re-run: what ran again, the sandbox's outcome, and the comparison (None if it failed)."""

    name: str
    task: Task
    original: Path
    reproduced_dir: Path
    sandbox: Any  # sharedtask.sandbox.SandboxRun, or None when the run could not start
    comparison: Comparison | None
    error: str | None = None
    updated: bool = False
    #: how the original's CPU differed from this one's, when the runs are not identical
    cpu_note: str | None = None

    @property
    def verdict(self) -> str:
        if self.updated:
            return "updated"
        return self.comparison.verdict if self.comparison else "failed"


def _read_record(path: Path) -> dict[str, Any]:
    path = Path(path)
    if path.is_dir():
        path = path / "run-record.json"
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SharedTaskError(f"run record {path} does not exist",
                              hint="give the run-record.json (or its folder) that `sharedtask run` wrote") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise SharedTaskError(f"{path}: not a run record ({exc})") from None
    if not isinstance(record, dict):
        raise SharedTaskError(f"{path}: not a sharedtask run record (a JSON object is expected)")
    missing = [k for k, kind in (("task", str), ("image", dict), ("dataset", dict), ("policy", dict))
               if not isinstance(record.get(k), kind)]
    if missing:
        raise SharedTaskError(f"{path}: not a sharedtask run record (missing {', '.join(missing)})",
                              hint="give the run-record.json that `sharedtask run` wrote")
    record["_path"] = str(path)
    return record


def _original_run(record: dict[str, Any], task: Task) -> Path:
    from sharedtask.runfile import find_run_file

    recorded = (record.get("validation") or {}).get("run_file")
    if recorded and Path(recorded).is_file():
        return Path(recorded)
    out = (record.get("output") or {}).get("dir")
    if not out:
        raise SharedTaskError(f"{record['_path']}: the record names no output folder")
    return find_run_file(Path(out), task.output.file)


def _image(record: dict[str, Any]) -> str:
    """The recorded image id when it is still here (the exact software), else its name."""
    from sharedtask.sandbox.runner import docker_client

    image = record["image"]
    for candidate in (image.get("id"), image.get("name")):
        if not candidate:
            continue
        try:
            docker_client().images.get(candidate)
            return candidate
        except Exception:  # noqa: BLE001 - docker.errors.ImageNotFound and API errors alike
            continue
    raise SharedTaskError(f"neither the recorded image id {image.get('id')} nor {image.get('name')} is here",
                          hint="build or pull the image first (`sharedtask baseline build`)")


def reproduce_record(
    record_path: Path,
    *,
    output_dir: Path | None = None,
    qrels: Path | None = None,
    truth_dir: Path | None = None,
    thresholds: Thresholds | None = None,
    p: float = RBO_P,
    observer: Any = None,
    cpu: str | None = None,
) -> Reproduction:
    """Re-run the run of ``record_path`` with the same image, command, dataset and limits; compare.

    Truth: ``qrels``/``truth_dir``, else the task sample's truth when the run was on the sample.
    ``cpu``: the CPU profile of the re-run (default: the recorded one). When the runs are not
    identical, :attr:`Reproduction.cpu_note` says how the two CPUs differed.
    """
    from sharedtask.sandbox.cpu import difference
    from sharedtask.sandbox import run as sandbox_run

    record = _read_record(Path(record_path))
    task = load_task(record["task"])
    original = _original_run(record, task)
    input_dir = Path(record["dataset"].get("input_dir") or "")
    if not input_dir.is_dir():
        raise SharedTaskError(f"the recorded dataset folder {input_dir} is not here",
                              hint="reproduce on the machine that holds the dataset")
    if qrels is None and truth_dir is None and input_dir.resolve() == (task.sample_dir / "input").resolve():
        truth_dir = task.sample_dir / "truth"
    limits = (record.get("policy") or {}).get("limits") or {}
    network = (record.get("policy") or {}).get("network")
    image = _image(record)
    outcome = sandbox_run(
        task, image, command=record.get("command"), input_dir=input_dir,
        input_run=(record["dataset"].get("input_run") or None), output_dir=output_dir,
        memory=limits.get("memory"), cpus=limits.get("cpus"), timeout=limits.get("timeout"),
        pids=limits.get("pids"), max_output=limits.get("max_output"), disk=limits.get("disk"),
        runtime=(record.get("policy") or {}).get("runtime"),
        network=None if network in (None, "none") else network,
        cpu=cpu or (record.get("policy") or {}).get("cpu_profile"),
        dataset_id=record["dataset"].get("id"), observer=observer,
    )
    rep_dir = outcome.request.output_dir
    if not outcome.ok:
        return Reproduction(record.get("task"), task, original, rep_dir, outcome, None,
                            error=f"the re-run {outcome.result.status}: {outcome.result.message}")
    result = compare(original, rep_dir, task, qrels=qrels, truth_dir=truth_dir, input_dir=input_dir,
                     thresholds=thresholds, p=p)
    note = None if result.identical else difference(record.get("cpu"), outcome.record.get("cpu"))
    return Reproduction(Path(record["_path"]).parent.name, task, original, rep_dir, outcome, result, cpu_note=note)


def reference_path(root: Path, task: Task, software: Software) -> Path:
    """Where the reference run of ``software`` on ``task``'s sample is stored."""
    return root / task.id / f"{software.name}.txt"


def default_reference_root() -> Path:
    return resource("baselines") / "reference-runs"


#: the CPU each reference run was made on (sharedtask.sandbox.cpu.describe), by "task/baseline"
REFERENCE_CPUS = "cpu.json"


def _reference_cpus(root: Path) -> dict[str, Any]:
    try:
        data = json.loads((root / REFERENCE_CPUS).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _store_reference_cpus(root: Path, cpus: dict[str, Any]) -> None:
    """Merge ``cpus`` into the references' ``cpu.json`` (an update may cover some tasks only)."""
    merged = {**_reference_cpus(root), **cpus}
    root.mkdir(parents=True, exist_ok=True)
    (root / REFERENCE_CPUS).write_text(json.dumps(dict(sorted(merged.items())), indent=2) + "\n", encoding="utf-8")


def reproduce_baselines(
    manifest: Manifest,
    out_dir: Path,
    say: Say,
    *,
    tasks: list[Task] | None = None,
    references: Path | None = None,
    update: bool = False,
    thresholds: Thresholds | None = None,
    advance: Callable[[], None] | None = None,
    cpu: str | None = None,
) -> list[Reproduction]:
    """Run every baseline on the sample of each task it serves; compare with (or store) the reference.

    ``cpu`` names the CPU profile of the re-runs (:mod:`sharedtask.sandbox.cpu`); every
    baseline is expected to give the same bytes under every profile."""
    from sharedtask.sandbox.cpu import difference
    from sharedtask.pipeline import build_images, with_parents
    from sharedtask.runfile import find_run_file
    from sharedtask.sandbox import run as sandbox_run
    from sharedtask.spec import task_ids

    root = references or default_reference_root()
    tasks = tasks if tasks is not None else [load_task(t) for t in task_ids()]
    pairs = [(t, sw) for t in tasks for sw in manifest.baselines if sw.serves(t.id)]
    errors = build_images(with_parents([sw for _, sw in pairs], manifest), say)
    reference_cpus = _reference_cpus(root)
    made_on: dict[str, Any] = {}
    out: list[Reproduction] = []
    for task, sw in pairs:
        reference = reference_path(root, task, sw)
        run_dir = out_dir / task.id / sw.name
        if run_dir.exists():
            shutil.rmtree(run_dir)
        run_dir.mkdir(parents=True)
        say(f"{task.id}: re-running {sw.name}")
        rep = Reproduction(sw.name, task, reference, run_dir / "output", None, None)
        out.append(rep)
        if errors.get(sw.image):
            rep.error = f"image build failed: {errors[sw.image]}"
        elif not update and not reference.is_file():
            rep.error = f"no reference run at {reference} (store one with --update)"
        else:
            rep.sandbox = sandbox_run(task, sw.image, command=sw.command_for(task.id),
                                      input_dir=task.sample_dir / "input", output_dir=run_dir / "output",
                                      record_dir=run_dir, cpu=cpu)
            key = f"{task.id}/{sw.name}"
            if not rep.sandbox.ok:
                rep.error = f"the run {rep.sandbox.result.status}: {rep.sandbox.result.message}"
            elif update:
                reference.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(find_run_file(run_dir / "output", task.output.file), reference)
                made_on[key] = {k: v for k, v in rep.sandbox.record["cpu"].items() if k != "environment"}
                rep.updated = True
            else:
                rep.comparison = compare(reference, run_dir / "output", task, truth_dir=task.sample_dir / "truth",
                                         input_dir=task.sample_dir / "input", thresholds=thresholds)
                if not rep.comparison.identical:
                    rep.cpu_note = difference(reference_cpus.get(key), rep.sandbox.record.get("cpu"))
        if advance:
            advance()
    if made_on:
        _store_reference_cpus(root, made_on)
    return out


def report_sections(reproductions: list[Reproduction]) -> list[Any]:
    """Report sections (one per task) whose runs carry their comparison with the reference."""
    from sharedtask.pipeline import findings_from_validation, validity
    from sharedtask.report import RunEntry, TaskSection

    by_task: dict[str, Any] = {}
    for rep in reproductions:
        record = dict(rep.sandbox.record) if rep.sandbox is not None else {}
        validation = rep.sandbox.validation if rep.sandbox is not None else {}
        comparison = rep.comparison
        entry = RunEntry(
            name=rep.name, image=record.get("image", {}).get("name", ""), command=record.get("command"),
            status=rep.sandbox.result.status if rep.sandbox is not None else "error",
            valid=validity(validation),
            findings=findings_from_validation(validation) if validation else [],
            scores={m.info.key: m.reproduced for m in comparison.measures} if comparison else {},
            per_topic={}, record=record, notes=[rep.error] if rep.error else [],
            reproduction=comparison.to_json() if comparison else None)
        by_task.setdefault(rep.task.id, TaskSection(rep.task, [])).runs.append(entry)
    return list(by_task.values())
