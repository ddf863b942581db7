"""Run kinds and pools: a team marks each run primary or alternate; the organizer pools the runs.

One primary per team and task (ARQMath's rule) is kept by a unique constraint on
``primary_runs(team_id, task_id)``: of two requests that mark two runs primary at once, the
database lets exactly one insert its row; the other is refused (409), on SQLite and PostgreSQL.
Every run not marked primary is an alternate.
"""

from __future__ import annotations

import secrets
import shutil
from pathlib import Path
from typing import Any, Sequence

from fastapi import HTTPException
from sqlalchemy import delete, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from sharedtask.service.models import PoolRow, PrimaryRun, Submission, Team

KINDS = ("primary", "alternate")


def set_kind(session: Session, who: Team, submission_id: int, kind: str) -> dict[str, Any]:
    """Mark one of ``who``'s runs primary or alternate (the organizer may mark any run)."""
    if kind not in KINDS:
        raise HTTPException(422, f"kind must be primary or alternate, not {kind[:40]!r}")
    sub = session.get(Submission, submission_id)
    if sub is None or (not who.organizer and sub.team_id != who.id):
        raise HTTPException(404, f"no submission {submission_id}")
    if kind == "alternate":
        session.execute(delete(PrimaryRun).where(PrimaryRun.submission_id == sub.id))
        session.commit()
        return {"id": sub.id, "task": sub.task_id, "kind": "alternate"}
    current = session.scalar(select(PrimaryRun).where(PrimaryRun.team_id == sub.team_id,
                                                      PrimaryRun.task_id == sub.task_id))
    if current is not None and current.submission_id != sub.id:
        raise _taken(sub, current.submission_id)
    if current is None:
        session.add(PrimaryRun(team_id=sub.team_id, task_id=sub.task_id, submission_id=sub.id))
        try:
            session.commit()
        except IntegrityError:  # another request marked another run primary meanwhile: it won
            session.rollback()
            other = session.scalar(select(PrimaryRun.submission_id).where(PrimaryRun.team_id == sub.team_id,
                                                                          PrimaryRun.task_id == sub.task_id))
            if other != sub.id:
                raise _taken(sub, other) from None
    return {"id": sub.id, "task": sub.task_id, "kind": "primary"}


def _taken(sub: Submission, other: int | None) -> HTTPException:
    return HTTPException(409, f"the team already has a primary run of {sub.task_id} (submission {other}); "
                              "mark that one alternate first")


def primaries(session: Session, task_id: str | None = None) -> set[int]:
    query = select(PrimaryRun.submission_id)
    if task_id is not None:
        query = query.where(PrimaryRun.task_id == task_id)
    return set(session.scalars(query))


def kind_of(primary_ids: set[int], submission_id: int) -> str:
    return "primary" if submission_id in primary_ids else "alternate"


def sharing_tasks(service: Any, task: Any) -> list[Any]:
    """The server's tasks judged in ``task``'s pools (their spec's ``pooling.shared_with``):
    ARQMath-3 Task 3's answers are judged in Task 1's pool (docs/assessment.md)."""
    from sharedtask.service.state import task_of

    others = [task_of(service, tid) for tid in service.known_tasks if tid != task.id]
    return [t for t in others if t.pooling is not None and t.pooling.shared_with == task.id]


def pool_runs(session: Session, task: Any, dataset: str = "sample", sharing: Sequence[Any] = ()) -> list[Any]:
    """The runs to pool: every finished, valid, visible submission of the task with its kind,
    and of each task in ``sharing`` (judged in this task's pools), named ``<task>-<run>``."""
    from sharedtask.edition.pooling import PoolRun
    from sharedtask.formats.runfile import find_run_file
    from sharedtask.service import phases
    from sharedtask.service.entries import run_name
    from sharedtask.service.state import team_names

    names = team_names(session)
    out = []
    for each in [task, *sharing]:
        marked = primaries(session, each.id)
        subs = session.scalars(select(Submission).where(
            Submission.task_id == each.id, Submission.status == "done", Submission.valid.is_(True),
            Submission.hidden_reason.is_(None)).order_by(Submission.id))
        # the runs made on the server's dataset (a phase on other data is judged in a campaign of its own server)
        out += [PoolRun(find_run_file(Path(s.run_dir), each.output.file), kind_of(marked, s.id),
                        run_name(names[s.team_id], s) if each is task else f"{each.id}-{run_name(names[s.team_id], s)}",
                        task=None if each is task else each.id)
                for s in subs if s.run_dir and phases.dataset_name(session, s, dataset) == dataset]
    return out


def build(service: Any, task: Any, depths: dict[str, int] | None, seed: int | None) -> dict[str, Any]:
    """Pool the task's submitted runs (:func:`sharedtask.edition.pooling.build_pool`) into
    ``DATA_DIR/pools/<id>/``. The runs are read and the pool written outside any transaction."""
    from sharedtask.edition.pooling import build_pool

    with service.sessions() as session:
        runs = pool_runs(session, task, service.config.dataset, sharing_tasks(service, task))
    if not runs:
        raise HTTPException(409, f"no finished valid run of {task.id} to pool yet")
    formulas = None
    if task.pooling is not None and task.pooling.unit == "visual-id":  # Task 2: formula id -> visual id
        from sharedtask.manifest import load_manifest

        formulas = load_manifest(service.config.manifest).dataset(task, service.config.dataset).input_dir / "formulas"
    pool = build_pool(task, runs, depths=depths, seed=seed, formulas=formulas)
    pools = Path(service.config.data_dir) / "pools"
    folder = pools / f"new-{secrets.token_hex(6)}"
    try:
        pool.write(folder)
        with service.write_sessions()() as session:
            counts = pool.counts()
            row = PoolRow(task_id=task.id, path="", items=sum(counts.values()), topics=len(counts))
            session.add(row)
            session.flush()
            final = pools / str(row.id)
            folder.rename(final)
            row.path = str(final)
            session.commit()
    finally:
        if folder.exists():
            shutil.rmtree(folder, ignore_errors=True)
    return pool_json(row, runs)


def pool_json(row: PoolRow, runs: list[Any] | None = None) -> dict[str, Any]:
    from sharedtask.service.models import aware

    body: dict[str, Any] = {"id": row.id, "task": row.task_id, "items": row.items, "topics": row.topics,
                            "created": aware(row.created)}
    if runs is not None:
        body["runs"] = [{"run": r.name, "kind": r.kind} for r in runs]
    return body
