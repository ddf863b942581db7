"""The whole flow over many runs: build → sandboxed run → validate → evaluate → leaderboard → report.

This is what ``sharedtask demo`` does for the baselines on the bundled samples,
and what an organizer does for baselines plus submissions on any dataset: every
piece of software that serves a task is run in the sandbox, its output validated
and scored, and all of them are ranked together. Failures of one run never stop
the others: they become rows with their status at the bottom of the leaderboard.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from sharedtask.errors import SharedTaskError
from sharedtask.finding_codes import finding
from sharedtask.findings import Finding, Severity
from sharedtask.images import ensure_software_image
from sharedtask.manifest import Dataset, Manifest, Software
from sharedtask.report import RunEntry, TaskSection
from sharedtask.sandbox.outputs import REJECTED, remove_tree
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


def run_one(task: Task, sw: Software, dataset: Dataset, out_dir: Path, say: Say, build_error: str | None,
            on_validated: Callable[[RunEntry], None] | None = None) -> tuple[RunEntry, Any]:
    """One software on one dataset: sandbox, validation, evaluation. Never raises for the run's own faults.

    ``on_validated`` sees the entry once the sandbox and the validator are done, before
    the evaluation (the submission service shows findings while scoring goes on).
    """
    from sharedtask.evaluate import evaluate
    from sharedtask.sandbox import run as sandbox_run

    command = sw.command_for(task.id)
    entry = RunEntry(name=sw.name, image=sw.image, command=command, status="error", valid=None,
                     findings=[], scores={}, per_topic={}, record={})
    if build_error:
        entry.notes.append(f"image build failed: {build_error}")
        return entry, None
    run_dir = out_dir / task.id / sw.name
    remove_tree(run_dir)  # a previous run's output: any depth, links not followed
    run_dir.mkdir(parents=True)
    try:
        outcome = sandbox_run(task, sw.image, command=command, input_dir=dataset.input_dir,
                              output_dir=run_dir / "output", record_dir=run_dir,
                              observer=_Observer(say, sw.name))
    except SharedTaskError as exc:
        entry.notes.append(f"sandbox: {exc}")
        return entry, None
    entry.status = outcome.result.status
    entry.record = outcome.record
    entry.findings = findings_from_validation(outcome.validation)
    entry.valid = validity(outcome.validation)
    if on_validated is not None:
        on_validated(entry)
    if not outcome.result.ok or entry.valid is False or dataset.truth_dir is None:
        return entry, None
    run_file = Path(outcome.validation["run_file"])
    say(f"{sw.name}: evaluating")
    try:
        result = evaluate(run_file, task, truth_dir=dataset.truth_dir, input_dir=dataset.input_dir,
                          per_topic=True, run_name=sw.name)
    except SharedTaskError as exc:
        entry.notes.append(f"evaluation: {exc}")
        return entry, None
    entry.scores = dict(result.scores)
    entry.per_topic = {k: dict(v) for k, v in result.per_topic.items()}
    entry.notes.extend(result.notes)
    return entry, result


def run_task(task: Task, manifest: Manifest, out_dir: Path, say: Say, *, dataset_name: str = "sample",
             build_errors: dict[str, str | None] | None = None, advance: Callable[[], None] | None = None) -> TaskOutcome:
    from sharedtask.evaluate import leaderboard

    dataset = manifest.dataset(task, dataset_name)
    softwares = manifest.for_task(task.id)
    if build_errors is None:
        build_errors = build_images(with_parents(softwares, manifest), say)
    entries: list[RunEntry] = []
    results: dict[str, Any] = {}
    for sw in softwares:
        say(f"{task.id}: running {sw.name}")
        entry, result = run_one(task, sw, dataset, out_dir, say, build_errors.get(sw.image))
        entries.append(entry)
        if result is not None:
            results[sw.name] = result
        if advance:
            advance()
    board = leaderboard(results, task, test="ttest") if len(results) >= 1 else None
    outcome = TaskOutcome(task, dataset, entries, board, results)
    _write_task_files(outcome, out_dir)
    return outcome


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
