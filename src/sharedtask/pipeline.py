"""The whole flow over many runs: build → sandboxed run → validate → evaluate → leaderboard → report.

This is what ``sharedtask demo`` does for the baselines on the bundled samples,
and what an organizer does for baselines plus submissions on any dataset: every
piece of software that serves a task is run in the sandbox, its output validated
and scored, and all of them are ranked together. Failures of one run never stop
the others: they become rows with their status at the bottom of the leaderboard.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable

from sharedtask.errors import SharedTaskError
from sharedtask.executor.base import JobResult
from sharedtask.executor.job import DONE, FAILED, DatasetRef, Job
from sharedtask.findings.codes import finding
from sharedtask.findings import Finding, Severity
from sharedtask.images.build import ensure_software_image
from sharedtask.manifest import Dataset, Manifest, Software
from sharedtask.report import RunEntry, TaskSection
from sharedtask.sandbox.outputs import REJECTED
from sharedtask.spec import Task

Say = Callable[[str], None]


@dataclass
class TaskOutcome:
    task: Task
    dataset: Dataset
    entries: list[RunEntry]
    leaderboard: Any | None  # sharedtask.evaluate.Leaderboard
    results: dict[str, Any] = field(default_factory=dict)  # run name -> EvaluationResult


def findings_from_validation(validation: dict[str, Any]) -> list[Finding]:
    """Rebuild Finding objects from the validator's JSON in a run record."""
    report = validation.get("report") or {}
    out = []
    for raw in report.get("findings", []):
        fields = {k: raw.get(k) for k in ("code", "message", "path", "line", "column", "hint")}
        out.append(Finding(severity=Severity(raw["severity"]), **fields))
    if validation.get("code"):  # refused before or instead of validation (no run file, a link, ...)
        out.append(finding(validation["code"], validation.get("reason", "")))
    return out


def validity(validation: dict[str, Any]) -> bool | None:
    """The report's ``valid`` from a run record's validation: None when the validator did not judge."""
    verdict = validation.get("status")
    return True if verdict == "valid" else False if verdict in REJECTED else None


def with_parents(softwares: list[Software], manifest: Manifest) -> list[Software]:
    """``softwares`` plus the manifest entries whose images they build on, parents first."""
    by_image = {sw.image: sw for sw in (*manifest.baselines, *manifest.submissions) if sw.build is not None}
    ordered: list[Software] = []

    def visit(sw: Software, seen: tuple[str, ...]) -> None:
        for value in sw.build_args.values():
            parent = by_image.get(value)
            if parent is not None and parent.image not in seen:
                visit(parent, (*seen, parent.image))
        if all(o.image != sw.image for o in ordered):
            ordered.append(sw)

    for sw in softwares:
        visit(sw, (sw.image,))
    return ordered


def build_images(softwares: list[Software], say: Say, *, force: bool = False) -> dict[str, str | None]:
    """Build each distinct image once, in the given order; returns image -> error (None when fine)."""
    errors: dict[str, str | None] = {}
    for sw in softwares:
        if sw.image in errors:
            continue
        if sw.build is None:
            errors[sw.image] = None
            continue
        say(f"building {sw.image}")
        try:
            _, built = ensure_software_image(sw, force=force,
                                             on_log=lambda line, img=sw.image: say(f"building {img}: {line[:90]}"))
            errors[sw.image] = None
        except SharedTaskError as exc:
            errors[sw.image] = str(exc).splitlines()[0]
    return errors


class _Observer:
    """Feeds the sandbox's live log lines into one status line."""

    def __init__(self, say: Say, name: str) -> None:
        self.say, self.name = say, name

    def started(self, request: Any, container_id: str) -> None:
        self.say(f"{self.name}: container {container_id[:12]} started")

    def log(self, stream: str, line: str) -> None:
        if line.strip():
            self.say(f"{self.name}: {line.strip()[:100]}")

    def tick(self, snapshot: Any) -> None:
        pass

    def finished(self, result: Any) -> None:
        pass


@dataclass
class Planned:
    """One run of the batch: a software on a task's dataset, as a job (or why there is none)."""

    task: Task
    software: Software
    dataset: Dataset
    run_dir: Path
    job: Job | None
    error: str | None = None  # nothing can run: the build failed, the image is missing
    first_stage: str | None = None  # a re-ranker: the software whose run it re-ranks
    stage_dir: Path | None = None  # ... and the folder with that run and its candidates ($inputRun)


#: Called on every change of a run's state: (run, queued|running|done|failed|refused, worker or None).
OnState = Callable[[Planned, str, "str | None"], None]


def plan(task: Task, manifest: Manifest, out_dir: Path, *, dataset_name: str = "sample",
         build_errors: dict[str, str | None] | None = None, image_source: Callable[[str], str | None] | None = None,
         options: dict[str, Any] | None = None) -> list[Planned]:
    """The jobs of one task: each software that serves it on the named dataset, named by content
    (image id, sha256 of every input file), with its run folder ``OUT/<task>/<software>``."""
    from sharedtask.images.client import docker_client
    from sharedtask.images.shipping import image_id
    from sharedtask.sandbox.api import dataset_id_of

    dataset = manifest.dataset(task, dataset_name)
    client = docker_client()
    planned = []
    ref: DatasetRef | None = None
    for sw in manifest.for_task(task.id):
        run_dir = out_dir / task.id / sw.name
        first = manifest.first_stage(sw, task)
        if sw.is_reranker and first is None:
            continue  # no first stage of it serves this task: nothing to re-rank
        error = (build_errors or {}).get(sw.image)
        if error:
            planned.append(Planned(task, sw, dataset, run_dir, None, f"image build failed: {error}",
                                   first_stage=first.name if first else None))
            continue
        try:
            ident = image_id(client, sw.image)
            if ref is None:
                ref = dataset_ref(task, dataset)
        except SharedTaskError as exc:
            planned.append(Planned(task, sw, dataset, run_dir, None, f"sandbox: {exc}",
                                   first_stage=first.name if first else None))
            continue
        job = Job(task=task.id, software=sw.name, image=sw.image, image_id=ident, command=sw.command_for(task.id),
                  dataset=ref, image_source=image_source(sw.image) if image_source else None,
                  options={"dataset_id": dataset_id_of(dataset.input_dir), **(options or {})})
        planned.append(Planned(task, sw, dataset, run_dir, job, first_stage=first.name if first else None))
    return planned


def stage_reranks(runs: list[Planned], results: dict[int, JobResult | None], say: Say) -> None:
    """Give each re-ranker of ``runs`` its first stage: that run's output and its candidates,
    made once per (task, first stage) however many re-rankers read it, in
    ``OUT/<task>/<first stage>/stage`` (docs/pipelines.md). A re-ranker whose first stage
    gave no valid run gets an error instead of a job."""
    from sharedtask.rerank import prepare_stage

    made: dict[tuple[str, str], tuple[Path, str] | str] = {}
    by_name = {(run.task.id, run.software.name): (i, run) for i, run in enumerate(runs) if run.first_stage is None}
    for run in runs:
        if run.first_stage is None or run.job is None:
            continue
        key = (run.task.id, run.first_stage)
        if key not in made:
            i, first = by_name.get(key, (-1, None))
            result = results.get(i) if first is not None else None
            if first is None or result is None or result.state != DONE or validity(result.validation) is not True:
                made[key] = f"first stage {run.first_stage} gave no valid run"
            else:
                stage_dir = first.run_dir / "stage"
                say(f"{run.first_stage}: handing its top {run.task.rerank.depth if run.task.rerank else '?'} "
                    f"per topic to the re-rankers")
                try:
                    summary = prepare_stage(run.task, first.dataset.input_dir, Path(result.validation["run_file"]),
                                            stage_dir)
                    made[key] = (stage_dir, summary.sha256)
                except SharedTaskError as exc:
                    made[key] = f"first stage {run.first_stage}: {exc}"
        stage = made[key]
        if isinstance(stage, str):
            run.job, run.error = None, stage
            continue
        first_job = runs[by_name[key][0]].job
        run.stage_dir = stage[0]
        run.job = replace(run.job, stage={"software": run.first_stage, "job": first_job.id if first_job else "",
                                          "sha256": stage[1]})


def dataset_ref(task: Task, dataset: Dataset) -> DatasetRef:
    """A dataset by content, as a job names it: its id and the sha256 of every input file."""
    from sharedtask.executor.datasets import dataset_id, file_digests

    if not dataset.input_dir.is_dir():
        raise SharedTaskError(f"input dataset directory {dataset.input_dir} does not exist")
    return DatasetRef(dataset_id(task.id, dataset.name, dataset.input_dir, task.sample_dir / "input"),
                      file_digests(dataset.input_dir))


def entry_for(run: Planned, result: JobResult | None, say: Say,
              on_validated: Callable[[RunEntry], None] | None = None) -> tuple[RunEntry, Any]:
    """The report's row for a finished run, evaluated when it succeeded with a valid run file.

    ``on_validated`` sees the entry once the sandbox and the validator are done, before
    the evaluation (the submission service shows findings while scoring goes on).
    """
    from sharedtask.evaluate import evaluate

    task, sw, dataset = run.task, run.software, run.dataset
    entry = RunEntry(name=sw.name, image=sw.image, command=sw.command_for(task.id), status="error", valid=None,
                     findings=[], scores={}, per_topic={}, record={}, first_stage=run.first_stage)
    if result is None or result.status in ("error", "refused"):
        reason = run.error if result is None else (result.message if result.status == "refused"
                                                   else f"sandbox: {result.message}")
        entry.notes.append(reason or "not run")
        return entry, None
    entry.status = result.status
    entry.record = result.record
    entry.findings = findings_from_validation(result.validation)
    entry.valid = validity(result.validation)
    if on_validated is not None:
        on_validated(entry)
    if result.status != "success" or entry.valid is False or dataset.truth_dir is None:
        return entry, None
    run_file = Path(result.validation["run_file"])
    say(f"{sw.name}: evaluating")
    try:
        scored = evaluate(run_file, task, truth_dir=dataset.truth_dir, input_dir=dataset.input_dir,
                          per_topic=True, run_name=sw.name)
    except SharedTaskError as exc:
        entry.notes.append(f"evaluation: {exc}")
        return entry, None
    entry.scores = dict(scored.scores)
    entry.per_topic = {k: dict(v) for k, v in scored.per_topic.items()}
    entry.notes.extend(scored.notes)
    return entry, scored


def execute(runs: list[Planned], executor: Any, say: Say, *, on_state: OnState | None = None,
            resume: bool = False) -> dict[int, JobResult | None]:
    """Submit every job, follow their states, and return each run's result (by position).

    A result is taken once per job id: two runs with the same job share it, and a job
    reported twice by a backend is still counted once.
    """
    handles: dict[str, Any] = {}
    for run in runs:
        if run.job is None and on_state is not None:
            on_state(run, FAILED, None)  # nothing to run (failed build, missing image): said at once
        if run.job is not None and run.job.id not in handles:
            # a stage that travels (stage_source) is the worker's to fetch; else it is mounted from here
            extra = {"input_run": run.stage_dir} if run.stage_dir is not None and run.job.stage_source is None else {}
            handles[run.job.id] = executor.submit(run.job, run.run_dir, input_dir=run.dataset.input_dir,
                                                  observer=_Observer(say, run.software.name), resume=resume, **extra)
    results: dict[str, JobResult] = {}
    last: dict[str, tuple[str, str | None]] = {}
    by_job = {run.job.id: run for run in reversed(runs) if run.job is not None}
    pending = list(handles)
    while pending:
        for job_id in list(pending):
            handle = handles[job_id]
            if getattr(handle, "lazy", False) and pending[0] == job_id:
                handle.result()  # a pool of one: runs here, now
            state = handle.state()
            if on_state is not None and last.get(job_id) != state:
                on_state(by_job[job_id], *state)
            last[job_id] = state
            if handle.done():
                try:
                    results[job_id] = handle.result()
                except SharedTaskError as exc:  # one run's fault (its outputs, its worker): not the batch's
                    results[job_id] = JobResult(job_id, FAILED, "error", str(exc), "?", run_dir=handle.run_dir)
                pending.remove(job_id)
        if pending and not getattr(handles[pending[0]], "lazy", False):
            time.sleep(0.2)
    return {i: (results[run.job.id] if run.job is not None else None) for i, run in enumerate(runs)}


def run_tasks(tasks: list[Task], manifest: Manifest, out_dir: Path, say: Say, *, dataset_name: str = "sample",
              build_errors: dict[str, str | None] | None = None, executor: Any = None,
              on_state: OnState | None = None, resume: bool = False,
              image_source: Callable[[str], str | None] | None = None,
              on_task: Callable[[TaskOutcome], None] | None = None,
              stage_source: Callable[[Path], str] | None = None) -> list[TaskOutcome]:
    """Every task's runs through one executor at once (so workers stay busy across tasks), then
    each task's evaluation, leaderboard and files, in order. ``stage_source``: how compute
    workers get a re-ranker's first stage (executor/stages.py); without it re-rankers run here."""
    from sharedtask.evaluate import leaderboard
    from sharedtask.executor import LocalExecutor

    if build_errors is None:
        softwares = [sw for t in tasks for sw in manifest.for_task(t.id)]
        build_errors = build_images(with_parents(softwares, manifest), say)
    own = executor is None
    executor = executor or LocalExecutor(1)
    runs = [run for t in tasks for run in plan(t, manifest, out_dir, dataset_name=dataset_name,
                                              build_errors=build_errors, image_source=image_source)]
    # Two waves: every first stage (and every run that is no re-ranker) on the executor, then the
    # re-rankers on their first stage's candidates: made here, and shipped to the workers when
    # there is a way to (stage_source), else run here, where the candidates are.
    first_wave = [i for i, run in enumerate(runs) if run.first_stage is None]
    second_wave = [i for i, run in enumerate(runs) if run.first_stage is not None]
    local = None
    try:
        done = execute([runs[i] for i in first_wave], executor, say, on_state=on_state, resume=resume)
        results = {first_wave[k]: r for k, r in done.items()}
        if second_wave:
            stage_reranks(runs, results, say)
            if stage_source is not None and not isinstance(executor, LocalExecutor):
                for i in second_wave:
                    run = runs[i]
                    if run.job is not None and run.stage_dir is not None:
                        run.job = replace(run.job, stage_source=stage_source(run.stage_dir))
                second = executor
            else:
                second = local = executor if isinstance(executor, LocalExecutor) else LocalExecutor(1)
            done = execute([runs[i] for i in second_wave], second, say, on_state=on_state, resume=resume)
            results.update({second_wave[k]: r for k, r in done.items()})
    except KeyboardInterrupt:
        if own:
            executor.close(interrupted=True)
        if local is not None and local is not executor:
            local.close(interrupted=True)
        raise
    if own:
        executor.close()
    if local is not None and local is not executor:
        local.close()
    outcomes = []
    for task in tasks:
        entries: list[RunEntry] = []
        scored: dict[str, Any] = {}
        for i, run in enumerate(runs):
            if run.task.id != task.id:
                continue
            entry, result = entry_for(run, results[i], say)
            entries.append(entry)
            if result is not None:
                scored[run.software.name] = result
        board = leaderboard(scored, task, test="ttest") if scored else None
        if board is not None:
            board.pipelines = {run.software.name: run.first_stage for run in runs
                               if run.task.id == task.id and run.first_stage and run.software.name in scored}
        outcome = TaskOutcome(task, manifest.dataset(task, dataset_name), entries, board, scored)
        _write_task_files(outcome, out_dir)
        if on_task is not None:
            on_task(outcome)
        outcomes.append(outcome)
    return outcomes


def run_task(task: Task, manifest: Manifest, out_dir: Path, say: Say, *, dataset_name: str = "sample",
             build_errors: dict[str, str | None] | None = None, executor: Any = None) -> TaskOutcome:
    """One task's runs (see :func:`run_tasks`)."""
    return run_tasks([task], manifest, out_dir, say, dataset_name=dataset_name, build_errors=build_errors,
                     executor=executor)[0]


def not_scored(outcome: TaskOutcome) -> list[dict[str, Any]]:
    """The runs without scores (failed build or run, refused or invalid output), each with its reason."""
    rows = []
    for entry in outcome.entries:
        if entry.name in outcome.results:
            continue
        if entry.status != "success":
            reason = entry.notes[0] if entry.status == "error" and entry.notes else entry.record.get("message", "")
        else:
            first = next((f for f in entry.findings if f.severity is Severity.ERROR), None)
            reason = f"{first.code}: {first.message}" if first else (entry.notes[0] if entry.notes else "not scored")
        rows.append({"run": entry.name, "image": entry.image, "status": entry.status,
                     "valid": entry.valid, "reason": reason})
    return rows


def _write_task_files(outcome: TaskOutcome, out_dir: Path) -> None:
    """leaderboard.json (ranked rows plus every run that got no score, with why) and leaderboard.csv."""
    folder = out_dir / outcome.task.id
    folder.mkdir(parents=True, exist_ok=True)
    board = outcome.leaderboard.to_json() if outcome.leaderboard is not None else {"task": outcome.task.id, "runs": []}
    board["not_scored"] = not_scored(outcome)
    (folder / "leaderboard.json").write_text(json.dumps(board, indent=2), encoding="utf-8")
    if outcome.leaderboard is not None:
        (folder / "leaderboard.csv").write_text(outcome.leaderboard.to_csv(), encoding="utf-8")


def sections(outcomes: list[TaskOutcome]) -> list[TaskSection]:
    return [TaskSection(task=o.task, runs=o.entries, board=o.leaderboard) for o in outcomes]
