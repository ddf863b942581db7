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
    from sharedtask.formats.runfile import find_run_file

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


class RecordRefused(SharedTaskError):
    """A run record that asks for more than its task's policy grants (a crafted or edited record)."""


TRUST_HINT = "pass --trust-record to honour the record as it is"


def _refuse(field: str, value: Any, why: str) -> RecordRefused:
    shown = repr(value) if len(repr(value)) <= 120 else repr(value)[:120] + "…"
    return RecordRefused(f"the run record asks for {field} {shown}, {why}: reproduce re-runs under the task's "
                         f"policy", hint=TRUST_HINT)


def _is_root(user: Any) -> bool:
    return isinstance(user, str) and user.split(":")[0].strip() in ("0", "root")


def _limits(recorded: Any, task: Task) -> dict[str, Any]:
    """The recorded limits when each is a number at most the task's; else a refusal naming it."""
    from sharedtask.sandbox.policy import Limits

    if not isinstance(recorded, dict):
        raise _refuse("policy.limits", recorded, "not an object of limits")
    spec = Limits.from_spec(task.sandbox)
    out: dict[str, Any] = {}
    for field in ("memory", "cpus", "timeout", "pids", "max_output", "disk"):
        value = recorded.get(field)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
            raise _refuse(f"policy.limits.{field}", value, "not a positive number")
        if value > getattr(spec, field):
            raise _refuse(f"policy.limits.{field}", value, f"above the task's {getattr(spec, field):g}")
        out[field] = int(value) if field in ("memory", "pids", "max_output", "disk") else float(value)
    return out


def _dataset_folder(recorded: Any, task: Task) -> Path:
    """The recorded input folder when it is the task's sample or a dataset of the data store."""
    from sharedtask.data.store import store_root

    path = Path(recorded) if isinstance(recorded, str) and recorded else None
    if path is None:
        raise _refuse("dataset.input_dir", recorded, "not a folder")
    resolved = path.resolve()
    store = (store_root() / "datasets").resolve()
    if resolved == (task.sample_dir / "input").resolve() or (resolved.is_relative_to(store)
                                                             and resolved.name == "input"):
        return resolved
    raise RecordRefused(f"the run record's dataset.input_dir {str(path)[:200]!r} is neither the task's sample "
                        "nor a dataset of the data store: reproduce mounts only those",
                        hint="pass --dataset DIR to name the dataset yourself, or --trust-record")


def run_options(record: dict[str, Any], task: Task, *, trust: bool = False, input_dir: Path | None = None,
                input_run: Path | None = None) -> dict[str, Any]:
    """The keyword arguments of :func:`sharedtask.sandbox.run` for a re-run of ``record``.

    Mounts, network and user come from the task's policy, not from the record: the
    dataset is the task's sample, a data-store dataset or the folder the caller names,
    there is no input run unless the caller names one or it is a re-ranker's recorded stage
    folder, unchanged (:func:`recorded_stage`), no network, and the caller's own user. A
    record that asks for more (an input run, a network, root, another runtime, limits above
    the task's) is refused with one line naming the field, unless ``trust``.
    """
    from sharedtask.sandbox.policy import RUNTIMES

    policy = record.get("policy") if isinstance(record.get("policy"), dict) else {}
    dataset = record.get("dataset") if isinstance(record.get("dataset"), dict) else {}
    network = policy.get("network")
    user = policy.get("user")
    runtime = policy.get("runtime") or task.sandbox.runtime
    recorded_run = dataset.get("input_run")
    dataset_id = dataset.get("id")
    rerank = record.get("rerank") if isinstance(record.get("rerank"), dict) else None
    options: dict[str, Any] = {
        "dataset_id": dataset_id[:200] if isinstance(dataset_id, str) else None,
        "read_only_root": bool(policy.get("read_only_root", False)),
        # a re-ranker recorded before the re-rank dataset (no rerank.dataset) read the task's
        # dataset at $inputDataset: its image is re-run as it ran (docs/pipelines.md)
        "rerank_dataset": not (rerank is not None and "dataset" not in rerank),
    }
    if trust:
        options.update(_trusted_limits(policy.get("limits")), runtime=runtime,
                       network=None if network in (None, "none") else network,
                       user=None if user in (None, "image default") else user,
                       input_run=input_run or (Path(recorded_run) if recorded_run else None),
                       input_dir=input_dir or Path(str(dataset.get("input_dir") or "/nonexistent")))
        return options
    if network not in (None, "none"):
        raise _refuse("policy.network", network, "not 'none'")
    if _is_root(user):
        raise _refuse("policy.user", user, "root")
    if runtime not in RUNTIMES or runtime not in (task.sandbox.runtime, "runsc"):
        raise _refuse("policy.runtime", runtime, f"not the task's runtime ({task.sandbox.runtime}) or runsc")
    if recorded_run and input_run is None:
        input_run = recorded_stage(record, task, recorded_run)
    options.update(_limits(policy.get("limits") or {}, task), runtime=runtime, network=None, user="me",
                   input_run=input_run,
                   input_dir=input_dir if input_dir is not None else _dataset_folder(dataset.get("input_dir"), task))
    return options


def recorded_stage(record: dict[str, Any], task: Task, recorded_run: Any) -> Path:
    """A re-ranker's first stage, found by its record: the stage folder it read, when that folder is
    still a stage folder holding the very candidates the record names (their sha256).

    Why so strict: the record is not trusted, and a folder it names is mounted into a
    container. Only a folder holding nothing but the stage's two regular files
    (``run.txt`` and ``rerank.jsonl.gz``, as :func:`sharedtask.rerank.prepare_stage`
    writes it) whose candidates have the recorded sha256 is taken; anything else is
    refused, saying which stage is needed and how to give it (``--input-run``).
    """
    import os
    import stat

    from sharedtask.data.checksum import sha256
    from sharedtask.rerank import RERANK_FILE

    rerank = record.get("rerank") if isinstance(record.get("rerank"), dict) else None
    digest = rerank.get("sha256") if rerank else None
    folder = Path(str(recorded_run)[:4096])
    if task.rerank is None or not isinstance(digest, str) or len(digest) != 64 or not folder.is_absolute():
        raise RecordRefused(f"the run record asks for dataset.input_run {str(recorded_run)[:200]!r}: reproduce "
                            "mounts no input run it was not given",
                            hint="pass --input-run DIR to name it yourself, or --trust-record")
    made_from = rerank.get("first_stage_run") if rerank else None
    needed = (f"the first stage this run re-ranks (rerank.jsonl.gz sha256 {digest[:16]}…, depth {rerank.get('depth')}"
              + (f", made from {str(made_from)[:200]}" if isinstance(made_from, str) else "") + ")")
    hint = ("pass --input-run DIR: that stage's folder, or the first stage's run (the stage is made from it; "
            "the same run and dataset give the same sha256)")
    allowed = {task.output.file, RERANK_FILE}
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:
        raise RecordRefused(f"{needed} is not at {str(folder)[:200]} any more", hint=hint) from None
    try:
        names = os.listdir(fd)
        kinds = {name: os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode for name in names}
    finally:
        os.close(fd)
    if RERANK_FILE not in kinds or set(kinds) - allowed or not all(stat.S_ISREG(m) for m in kinds.values()):
        raise RecordRefused(f"{str(folder)[:200]}, the input run the record names, is not a stage folder (only "
                            f"{' and '.join(sorted(allowed))}, regular files): reproduce does not mount it",
                            hint=hint + "; or --trust-record to mount it as recorded")
    if sha256(folder / RERANK_FILE) != digest:
        raise RecordRefused(f"{needed}: the stage at {str(folder)[:200]} has changed since the run", hint=hint)
    return folder


def _trusted_limits(recorded: Any) -> dict[str, Any]:
    if not isinstance(recorded, dict):
        return {}
    return {k: recorded[k] for k in ("memory", "cpus", "timeout", "pids", "max_output", "disk")
            if recorded.get(k) is not None}


def _own_original(record: dict[str, Any], task: Task) -> Path:
    """The run file next to the record (``<record folder>/output``), found without following a link."""
    from sharedtask.sandbox.outputs import check_run_file

    folder = Path(record["_path"]).parent / "output"
    check = check_run_file(folder, task.output.file, task.output.run_bytes_bound)
    if not check.ok or check.path is None:
        raise SharedTaskError(f"no original run next to the record: {check.reason}",
                              hint="keep run-record.json beside its output/ folder, or pass --trust-record")
    return check.path


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
    trust_record: bool = False,
    input_dir: Path | None = None,
    input_run: Path | None = None,
) -> Reproduction:
    """Re-run the run of ``record_path`` with the same image, command and dataset under the task's policy.

    Mounts, network and user are re-derived (:func:`run_options`); ``trust_record``
    honours the record as it is. Truth: ``qrels``/``truth_dir``, else the task sample's
    truth when the run was on the sample. ``cpu``: the CPU profile of the re-run (default:
    the recorded one). When the runs are not identical, :attr:`Reproduction.cpu_note`
    says how the two CPUs differed.
    """
    from sharedtask.sandbox.cpu import difference
    from sharedtask.sandbox import run as sandbox_run

    record = _read_record(Path(record_path))
    if not isinstance(record["task"], str) or len(record["task"]) > 200:
        raise SharedTaskError(f"{record['_path']}: not a sharedtask run record (task)")
    task = load_task(record["task"])
    options = run_options(record, task, trust=trust_record, input_dir=input_dir, input_run=input_run)
    original = _original_run(record, task) if trust_record else _own_original(record, task)
    input_dir = options.pop("input_dir")
    if not input_dir.is_dir():
        raise SharedTaskError(f"the dataset folder {input_dir} is not here",
                              hint="reproduce on the machine that holds the dataset, or pass --dataset DIR")
    if qrels is None and truth_dir is None and input_dir.resolve() == (task.sample_dir / "input").resolve():
        truth_dir = task.sample_dir / "truth"
    image = _image(record)
    command = record.get("command")
    if command is not None and not isinstance(command, str):
        raise SharedTaskError(f"{record['_path']}: the recorded command is not a string")
    outcome = sandbox_run(task, image, command=command, input_dir=input_dir, output_dir=output_dir,
                          cpu=cpu or (record.get("policy") or {}).get("cpu_profile"), observer=observer, **options)
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
    from sharedtask.formats.runfile import find_run_file
    from sharedtask.sandbox import run as sandbox_run
    from sharedtask.spec import task_ids

    root = references or default_reference_root()
    tasks = tasks if tasks is not None else [load_task(t) for t in task_ids()]
    # a re-ranker after every first stage of its task: it re-ranks the first stage's re-run
    pairs = [(t, sw) for t in tasks for sw in sorted(manifest.baselines, key=lambda s: s.is_reranker)
             if sw.serves(t.id) and (not sw.is_reranker or manifest.first_stage(sw, t) is not None)]
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
        elif sw.is_reranker and not _first_stage_ran(out, task, manifest.first_stage(sw, task)):
            rep.error = f"its first stage {manifest.first_stage(sw, task).name} did not run"
        else:
            first = manifest.first_stage(sw, task) if sw.is_reranker else None
            rep.sandbox = sandbox_run(task, sw.image, command=sw.command_for(task.id),
                                      input_dir=task.sample_dir / "input", output_dir=run_dir / "output",
                                      record_dir=run_dir, cpu=cpu,
                                      input_run=out_dir / task.id / first.name / "output" if first else None)
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


def _first_stage(done: list[Reproduction], task: Task, first: Software | None) -> Reproduction | None:
    return next((r for r in done if first is not None and r.name == first.name and r.task.id == task.id), None)


def _first_stage_ran(done: list[Reproduction], task: Task, first: Software | None) -> bool:
    """The whole chain is re-run: a re-ranker reads its first stage's re-run, which must have succeeded."""
    rep = _first_stage(done, task, first)
    return rep is not None and rep.sandbox is not None and rep.sandbox.ok


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
