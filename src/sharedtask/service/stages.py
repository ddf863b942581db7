"""Published first stages: the organizer makes a valid run into a stage folder once; re-rankers pick it by name.

A stage is TIREx's re-ranking dataset (docs/pipelines.md): the first stage's ``run.txt``
and its candidates with their text (``rerank.jsonl.gz``), made by
:func:`sharedtask.rerank.prepare_stage` from a valid run and the dataset it was run on.
It is made once per (task, name, dataset) and never changes, because the runs of the
teams that picked it are scored against it; another run is another name (409).

What a team learns of a stage: its name, the dataset's name, depth and counts, never
its folder, its source or its text (the candidates' texts can be hidden test data; only
the team's container reads them, as it reads the dataset).
"""

from __future__ import annotations

import logging
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fastapi import HTTPException
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from sharedtask.data.checksum import sha256
from sharedtask.service import phases
from sharedtask.service.models import Phase, Stage, Submission, aware
from sharedtask.service.teams.tokens import TEAM_NAME

log = logging.getLogger("sharedtask.service")


@dataclass(frozen=True)
class Source:
    """The run a stage is made from: a finished valid submission's run file, or the organizer's upload."""

    run_file: Path
    dataset: str
    submission_id: int | None = None


def checked_name(name: str) -> str:
    if not TEAM_NAME.fullmatch(name):
        raise HTTPException(422, f"invalid stage name {name[:80]!r}: use 1-64 letters, digits, '.', '_' or '-'")
    return name


def dataset_of_phase(session: Session, task_id: str, phase: str | None, default: str) -> str:
    """The dataset a stage is made on: the named phase's, else the server's ``--dataset``."""
    if phase is None:
        return default
    return phases.named(session, task_id, phase).dataset


def source_of_submission(session: Session, task: Any, submission_id: int, default: str) -> Source:
    """A finished, valid submission of ``task`` as a stage's run (422 naming what is wrong otherwise)."""
    from sharedtask.sandbox.outputs import check_run_file

    sub = session.get(Submission, submission_id)
    if sub is None or sub.task_id != task.id:
        raise HTTPException(422, f"submission {submission_id} is not a submission of {task.id}",
                            headers=None)
    if sub.status != "done" or sub.valid is not True or not sub.run_dir:
        raise HTTPException(422, f"submission {submission_id} is {sub.status}, valid: {sub.valid}: only a finished, "
                                 "valid run can be a first stage; pick another, or re-run it")
    if sub.stage_id is not None:
        raise HTTPException(422, f"submission {submission_id} re-ranks the stage {sub.input_run}: pipelines are one "
                                 "stage deep, publish a first stage's run")
    check = check_run_file(Path(sub.run_dir) / "output", task.output.file, task.output.run_bytes_bound)
    if not check.ok or check.path is None:
        raise HTTPException(422, f"submission {submission_id} has no run file on the server any more ({check.reason})")
    return Source(check.path, phases.dataset_name(session, sub, default), sub.id)


def find(session: Session, task_id: str, name: str, dataset: str) -> Stage | None:
    return session.scalar(select(Stage).where(Stage.task_id == task_id, Stage.name == name,
                                              Stage.dataset == dataset))


def publish(service: Any, task: Any, name: str, source: Source) -> tuple[Stage, bool]:
    """The stage ``name`` of ``task`` on the source's dataset, made now unless it exists; (stage, made).

    Runs in a worker thread. No transaction is open while the run is validated and the
    stage folder written (a corpus is read once: seconds to minutes); the service's lock per
    (task, name, dataset), held in the database, makes parallel requests of every server process
    wait for one making.
    """
    from sharedtask.rerank import prepare_stage
    from sharedtask.service.phases import manifest_of
    from sharedtask.validate import validate

    if task.rerank is None:
        raise HTTPException(422, f"task {task.id} declares no re-ranking stage (its spec has no `rerank:`), so its "
                                 "submissions read no first stage")
    run_sha = sha256(source.run_file)
    with service.lock_for(("stage", task.id, name, source.dataset)):
        with service.sessions() as session:
            found = find(session, task.id, name, source.dataset)
        if found is not None:
            if found.run_sha256 != run_sha:
                raise HTTPException(409, f"the stage {name} of {task.id} on {source.dataset} exists and holds another "
                                         "run; a published stage never changes (teams' runs re-rank it): choose "
                                         "another name")
            return found, False
        dataset = manifest_of(service).dataset(task, source.dataset)
        verdict = validate(source.run_file, task, input_dir=dataset.input_dir)
        if not verdict.valid:
            codes = ", ".join(sorted(verdict.codes())) or "invalid"
            raise HTTPException(422, f"the run is not a valid run of {task.id} on {source.dataset} ({codes}): a "
                                     "first stage must pass `sharedtask validate`; fix the run and publish again")
        root = Path(service.config.data_dir) / "stages" / task.id / source.dataset
        folder = root / name
        scratch = root / f".{name}.making"
        for leftover in (scratch, folder):  # a server killed while making it, before the row was stored
            if leftover.exists():
                shutil.rmtree(leftover)
        summary = prepare_stage(task, dataset.input_dir, source.run_file, scratch)
        os.replace(scratch, folder)
        log.info("stage %s of %s on %s made: %d candidates of %d topics, rerank.jsonl.gz sha256 %s",
                 name, task.id, source.dataset, summary.candidates, summary.topics, summary.sha256)
        stage = Stage(task_id=task.id, name=name, dataset=source.dataset, submission_id=source.submission_id,
                      run_sha256=run_sha, path=str(folder), sha256=summary.sha256, depth=summary.depth,
                      topics=summary.topics, candidates=summary.candidates)
        with service.write_sessions()() as session:
            session.add(stage)
            try:
                session.commit()
            except IntegrityError:  # another server process made it meanwhile: the stored one counts
                session.rollback()
                raise HTTPException(409, f"the stage {name} of {task.id} on {source.dataset} was published "
                                         "meanwhile; ask GET /api/tasks/{task}/stages") from None
            session.refresh(stage)
            session.expunge(stage)
        return stage, True


def stage_json(stage: Stage, *, organizer: bool) -> dict[str, Any]:
    """What anyone who sees the task learns of a stage; the organizer also its folder and source."""
    out: dict[str, Any] = {"name": stage.name, "task": stage.task_id, "dataset": stage.dataset,
                           "depth": stage.depth, "topics": stage.topics, "candidates": stage.candidates,
                           "sha256": stage.sha256, "created": aware(stage.created) if stage.created else None}
    if organizer:
        out.update(path=stage.path, submission=stage.submission_id, run_sha256=stage.run_sha256)
    return out


def stages_of(session: Session, task_id: str) -> list[Stage]:
    return list(session.scalars(select(Stage).where(Stage.task_id == task_id).order_by(Stage.name, Stage.dataset)))


def chosen(session: Session, task: Any, name: str | None, phase: Phase | None, default: str,
           *, workers_lack_stages: bool = False) -> Stage | None:
    """The stage a new submission re-ranks (None: it re-ranks none), or the refusal saying how to fix it.

    Asked by the pre-flight (before any byte of the image moves) and again when the
    submission is stored.
    """
    if name is None:
        return None
    if task.rerank is None:
        raise HTTPException(422, f"task {task.id} declares no re-ranking stage: submit without --input-run")
    if workers_lack_stages:
        raise HTTPException(422, "this server runs submissions on compute workers and ships them no published "
                                 "stages: submit without --input-run, or ask the organizer to start the server "
                                 "with --images-dir, which ships stages to the workers as it ships images")
    dataset = phase.dataset if phase is not None else default
    found = find(session, task.id, name, dataset)
    if found is None:
        names = sorted({s.name for s in stages_of(session, task.id) if s.dataset == dataset})
        offered = ", ".join(names) if names else "none yet"
        raise HTTPException(422, f"no published first stage {name[:64]!r} for {task.id} on this "
                                 f"{'phase' if phase is not None else 'server'}'s dataset; published: {offered} "
                                 f"(GET /api/tasks/{task.id}/stages)")
    return found


def mounted(stage_path: str, expected_sha256: str) -> Path:
    """The stage folder to mount, once its candidates are the ones published (a changed file is refused)."""
    from sharedtask.errors import SharedTaskError
    from sharedtask.rerank import RERANK_FILE

    folder = Path(stage_path)
    candidates = folder / RERANK_FILE
    if not candidates.is_file() or sha256(candidates) != expected_sha256:
        raise SharedTaskError("the published first stage this run re-ranks is missing or changed on the server "
                              "since it was published", hint="the organizer publishes it again under another name")
    return folder
