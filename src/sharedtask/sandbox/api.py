"""The sandbox as one call: task defaults → run → validate → run record.

    from sharedtask.sandbox import run
    outcome = run("touche-2020-task1", "my/image:1", command="python /app/run.py $inputDataset $outputDir")
    outcome.ok, outcome.result.status, outcome.record_path
"""

from __future__ import annotations

import datetime as dt
import importlib
import re
import threading
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from typing import Any

from sharedtask.errors import SharedTaskError
from sharedtask.sandbox.cpu import profile as cpu_profile
from sharedtask.sandbox.interrupts import MESSAGE, step
from sharedtask.sandbox.options import job_names
from sharedtask.sandbox.options import resolve as resolve_options
from sharedtask.sandbox.outputs import REJECTED, check_run_file
from sharedtask.sandbox.policy import Limits, Policy, parse_runtime, parse_user
from sharedtask.sandbox.record import build_ir_metadata, build_record, write_record
from sharedtask.sandbox.runner import (INTERRUPTED, RunObserver, RunRequest, RunResult, check_output_dir, docker_client,
                                       run_container)

DEFAULT_RUNS_DIR = Path("sharedtask-runs")


@dataclass
class SandboxRun:
    """A finished run with its validation verdict and record."""

    request: RunRequest
    result: RunResult
    validation: dict[str, Any]
    record: dict[str, Any]
    record_path: Path

    @property
    def ok(self) -> bool:
        """The container succeeded and left a run file that is not known to be invalid."""
        return self.result.ok and self.validation.get("status") not in REJECTED


def image_slug(image: str) -> str:
    """A file-name-safe form of an image reference: ``ghcr.io/a/b:1`` → ``ghcr.io-a-b-1``."""
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", image).strip("-.")
    return slug[:80] or "image"


def new_run_dir(task_id: str, image: str, base: Path = DEFAULT_RUNS_DIR) -> Path:
    """``<base>/<task>/<image-slug>-<UTC timestamp>[-n]``, created, never reused."""
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%d-%H%M%S")
    parent = base / task_id
    parent.mkdir(parents=True, exist_ok=True)
    for n in range(1, 1000):
        candidate = parent / (f"{image_slug(image)}-{stamp}" + (f"-{n}" if n > 1 else ""))
        try:
            candidate.mkdir()
            return candidate
        except FileExistsError:
            continue
    raise SharedTaskError(f"cannot create a new run directory under {parent}")


def dataset_id_of(input_dir: Path) -> str:
    """TIRA_DATASET_ID for a folder: samples are ``<sample>/input``, so take the parent's name."""
    resolved = input_dir.resolve()
    return resolved.parent.name if resolved.name == "input" else resolved.name


def _prefetch_validator() -> threading.Thread:
    """Import the validator while the container runs, not after it.

    Importing it (and its numeric dependencies) costs a noticeable part of a
    second; a container run is mostly waiting, so the import is free there.
    """

    def load() -> None:
        try:
            importlib.import_module("sharedtask.validate")
        except Exception:  # noqa: BLE001 - validate_output reports it
            pass

    thread = threading.Thread(target=load, name="sandbox-prefetch-validator", daemon=True)
    thread.start()
    return thread


def validate_output(output_dir: Path, task: Any, input_dir: Path | None,
                    max_output: int | None = None, input_run: Path | None = None) -> dict[str, Any]:
    """The validator's verdict on the run file, or why there is none.

    The run file is first examined without following links or reading a byte
    (:func:`sharedtask.sandbox.outputs.check_run_file`): a link, a device or an
    oversized file is refused with a finding code and never opened. The validator
    then reads it within the task's byte and line bounds.
    """
    bound = task.output.run_bytes_bound if max_output is None else min(max_output, task.output.run_bytes_bound)
    check = check_run_file(output_dir, task.output.file, bound)
    if not check.ok:
        status = "no run file" if check.code == "RUN-MISSING" else "refused"
        return {"status": status, "code": check.code, "reason": check.reason}
    try:
        from sharedtask.validate import validate  # type: ignore[attr-defined]
    except Exception as exc:  # noqa: BLE001 - ImportError or a half-built module
        return {"status": "not available", "reason": f"validator not importable ({exc.__class__.__name__})"}
    run_file = check.path
    assert run_file is not None
    try:
        verdict = validate(run_file, task, topics=None, input_dir=input_dir, input_run=input_run)
    except SharedTaskError as exc:
        return {"status": "error", "code": "RUN-UNREADABLE", "run_file": str(run_file), "reason": str(exc)}
    report: Any = verdict.to_json() if hasattr(verdict, "to_json") else None
    return {"status": "valid" if verdict.valid else "invalid", "run_file": str(run_file), "report": report}


@cache
def _host_cpus() -> int | None:
    """The Docker host's CPU count (the daemon checks --cpus against it, not the client's)."""
    try:
        return int(docker_client().info().get("NCPU") or 0) or None
    except SharedTaskError:
        raise
    except Exception:  # noqa: BLE001 - unknown: the daemon's own refusal then stands
        return None


@cache
def _docker_version() -> str | None:
    try:
        return str(docker_client().version().get("Version"))
    except Exception:  # noqa: BLE001 - provenance is best effort
        return None


def run(
    task: Any,
    image: str,
    *,
    command: str | None = None,
    input_dir: Path | str | None = None,
    input_run: Path | str | None = None,
    output_dir: Path | str | None = None,
    record_dir: Path | str | None = None,
    runs_dir: Path | str = DEFAULT_RUNS_DIR,
    validate: bool = True,
    observer: RunObserver | None = None,
    rerank_dataset: bool = True,
    stop: threading.Event | None = None,
    **options: Any,
) -> SandboxRun:
    """Run ``image`` on a task's dataset in the sandbox and write the run record.

    ``task`` is a task id or a loaded :class:`sharedtask.spec.Task`; its
    ``sandbox`` limits are the defaults that the keyword arguments override.
    ``options`` are the sandbox options of :data:`sharedtask.sandbox.options.OPTIONS`
    (``timeout``, ``memory``, ``cpus``, ``pids``, ``max_output``, ``disk``, ``cpu``,
    ``runtime``, ``network``, ``user``, ``read_only_root``, ``dataset_id``), declared there once
    for this call, ``sharedtask run``'s flags and the job schema. ``network=None`` means no network; pass ``"bridge"`` (``--allow-network``) or
    the name of a docker network. ``runtime`` is ``runc`` or ``runsc`` (gVisor);
    ``disk`` bounds what the container writes outside its mounts (its own layer and the
    volumes its image declares). ``user="me"`` runs as the invoking uid:gid so
    output files are yours; ``user="image"`` keeps the image's USER like TIRA
    (output then usually belongs to root). ``cpu`` names a CPU profile
    (:mod:`sharedtask.sandbox.cpu`: ``native``, ``haswell``, ``nehalem``; default
    ``$SHAREDTASK_CPU_PROFILE`` or ``native``) that hides newer vector units from numpy,
    OpenBLAS and the JVM in the container. A re-ranker's ``$inputDataset`` is the re-rank
    dataset made from its stage (``rerank_dataset=False``: the task's dataset, as runs
    recorded before it saw). Without ``input_dir`` the task's
    sample dataset is used; without ``output_dir`` a fresh
    ``sharedtask-runs/<task>/<image>-<time>/output``. The record goes to
    ``record_dir`` (default: the parent of the output directory). ``stop``, set from another
    thread, interrupts the run as Ctrl-C does in this one (:mod:`sharedtask.sandbox.interrupts`):
    before its container exists nothing is kept and :class:`Interrupted` is raised; after, the
    run ends with status ``interrupted`` and its record.
    """
    if isinstance(task, str):
        from sharedtask.spec import load_task

        task = load_task(task)
    opts = resolve_options(options)
    limits = Limits.from_spec(task.sandbox).with_overrides(**{name: opts[name] for name in job_names("limit")})
    policy = Policy(limits=limits, network=opts["network"], user=parse_user(opts["user"]),
                    read_only_root=opts["read_only_root"], runtime=parse_runtime(opts["runtime"] or task.sandbox.runtime),
                    cpu=cpu_profile(opts["cpu"]).name)

    if input_dir is None:
        input_path = task.sample_dir / "input"
        if not input_path.is_dir():
            raise SharedTaskError(
                f"task {task.id} has no sample dataset at {input_path} yet",
                hint="pass --input DATASET_DIR",
            )
    else:
        input_path = Path(input_dir)
        if input_path.exists() and not input_path.is_dir():
            raise SharedTaskError(f"input dataset {input_path} is a file, not a folder",
                                  hint="give the dataset's folder, the one mounted as $inputDataset")
        if not input_path.is_dir():
            raise SharedTaskError(f"input dataset directory {input_path} does not exist")
    run_path = Path(input_run) if input_run is not None else None
    if run_path is not None and not run_path.exists():
        raise SharedTaskError(f"input run {run_path} does not exist", hint="pass the output folder of a previous stage")
    if output_dir is not None:  # the user's mistake is the line they read, before Docker's
        check_output_dir(Path(output_dir))
    limits.check_docker_accepts(_host_cpus())  # after the usage checks, before any folder is made
    if policy.runtime == "runc":  # after the usage checks: their messages come before Docker's
        from sharedtask.sandbox.seccomp import profile as seccomp_profile

        policy = replace(policy, seccomp=seccomp_profile(docker_client(), image))
    created: Path | None = None
    if output_dir is None:
        created = new_run_dir(task.id, image, Path(runs_dir))
        out_path = created / "output"
    else:
        out_path = Path(output_dir)
    rec_dir = Path(record_dir) if record_dir is not None else out_path.resolve().parent
    # the folders this call makes, deepest first: removed again (when empty) if nothing ran
    made = [created / "output", created] if created is not None else \
        [folder for folder in dict.fromkeys((out_path, rec_dir)) if not folder.exists()]
    stage, mounted = None, None
    if run_path is not None and task.rerank is not None:
        from sharedtask.rerank import stage_for

        stage = stage_for(task, input_path, run_path, rec_dir / "input-run")
        if stage is not None:
            run_path = stage.path.parent
        if stage is not None and rerank_dataset:
            from sharedtask.rerank.dataset import make_rerank_dataset

            mounted = make_rerank_dataset(stage.path, rec_dir / "rerank-dataset")  # not the corpus: TIREx's layout

    request = RunRequest(
        image=image,
        input_dir=input_path,
        output_dir=out_path,
        log_dir=rec_dir,
        policy=policy,
        command=command,
        input_run=run_path,
        dataset_id=opts["dataset_id"] or dataset_id_of(input_path),
        labels={"sharedtask.task": task.id},
        dataset_mount=mounted,
    )
    prefetch = _prefetch_validator() if validate else None
    try:
        result = run_container(request, observer, stop)
    except (SharedTaskError, KeyboardInterrupt):  # nothing ran: no folder of this call's is left behind
        if mounted is not None:
            from sharedtask.sandbox.outputs import remove_tree

            remove_tree(mounted)  # the re-rank dataset this call made
        for leftover in made:
            try:
                leftover.rmdir()
            except OSError:
                pass
        raise
    if prefetch is not None:
        prefetch.join()
    validation: dict[str, Any] = {"status": "skipped"}
    if validate and result.status != INTERRUPTED:
        try:
            step("validation", stop)
            validation = validate_output(out_path.resolve(), task, input_path.resolve(), limits.max_output,
                                         run_path.resolve() if stage is not None else None)
        except KeyboardInterrupt:  # the container is gone: the run is recorded as interrupted
            validation = {"status": "interrupted", "reason": "stopped before the run file was validated"}
            result = replace(result, status=INTERRUPTED, message=f"{MESSAGE}, while its output was validated")
    from sharedtask.data.store import provenance

    dataset_files = provenance(input_path)
    record = build_record(request, result, task_id=task.id, validation=validation, dataset_files=dataset_files)
    metadata = build_ir_metadata(request, result, task_id=task.id, policy=policy,
                                 docker_version=_docker_version(), dataset_files=dataset_files)
    if stage is not None:
        record["rerank"] = {**stage.to_json(), **({"dataset": str(mounted)} if mounted else {})}
    record_path = write_record(rec_dir, record, metadata)
    return SandboxRun(request, result, validation, record, record_path)
