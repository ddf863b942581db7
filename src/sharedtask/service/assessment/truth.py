"""A closed campaign's qrels become the task's truth, and every finished run is scored against them.

The qrels are assembled by :func:`sharedtask.edition.qrels.assemble` (the spec's resolve rule for
items judged twice) and registered by :func:`sharedtask.edition.qrels.register_qrels` as the
dataset ``<task>/campaign-<id>-<server>`` (sha256 and provenance: pool, campaign, assessors,
dates). The runs are then scored with :func:`sharedtask.evaluate.evaluate` on that truth, with no
transaction open; their new scores are stored in one short write, with the campaign closed.
"""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path
from typing import Any, Callable

from sqlalchemy import select

from sharedtask.service.models import Campaign, Submission

log = logging.getLogger("sharedtask.service")


def dataset_name(service: Any, campaign_id: int) -> str:
    """Unique per server (its data folder) and campaign: two servers sharing a data store never clash."""
    server = hashlib.sha256(str(Path(service.config.data_dir).resolve()).encode()).hexdigest()[:8]
    return f"campaign-{campaign_id}-{server}"


def register(service: Any, task: Any, campaign_id: int, judged: list[Any], pool_path: Path,
             describe: Callable[[Any, Campaign], dict[str, Any]]) -> dict[str, Any]:
    """Assemble and register the qrels, score the runs, close the campaign; ``describe`` (the
    campaign's JSON, from ``campaigns``, which calls this) gives the answer's body.

    A pool that judged another task's items too (``pooling.shared_with``: ARQMath-3 Task 3 in
    Task 1's pool) gives that task qrels of its own, registered under the same dataset name, and
    its runs are scored against them; each item goes to the task of the run that brought it in,
    as ``sharedtask qrels`` splits a judged pool folder."""
    from sharedtask.data.checksum import sha256
    from sharedtask.edition.pooling import read_pool
    from sharedtask.service.assessment.runs import sharing_tasks

    pool = read_pool(pool_path)
    by_task: dict[str, list[Any]] = {}
    for j in judged:
        by_task.setdefault(pool.item_task(j.topic, j.item), []).append(j)
    name = dataset_name(service, campaign_id)
    shared = []
    for other in sharing_tasks(service, task):
        if other.id in by_task:
            dataset_id, qrels, _ = _register_one(service, other, by_task[other.id], name, pool_path, campaign_id)
            scored = rescore(service, other, truth_dir_of(dataset_id))
            with service.write_sessions()() as session:
                _store(session, scored)
                session.commit()
            shared.append({"task": other.id, "dataset": dataset_id, "scored_runs": len(scored),
                           "qrels": qrels.summary()})
    dataset_id, qrels, relevance = _register_one(service, task, by_task.get(task.id, []), name, pool_path, campaign_id)
    scored = rescore(service, task, relevance.parent)
    with service.write_sessions()() as session:
        c = session.get(Campaign, campaign_id)
        assert c is not None
        c.status, c.qrels_path, c.qrels_sha256 = "closed", str(relevance), sha256(relevance)
        _store(session, scored)
        session.commit()
        body = describe(session, c)
    return {**body, "dataset": dataset_id, "scored_runs": len(scored), "qrels": qrels.summary(), "shared": shared}


def truth_dir_of(dataset_id: str) -> Path:
    from sharedtask.data.store import store_root

    return store_root() / "datasets" / dataset_id / "truth"


def _register_one(service: Any, task: Any, judged: list[Any], name: str, pool_path: Path,
                  campaign_id: int) -> tuple[str, Any, Path]:
    """(dataset id, qrels, relevance file) of one task's share of a campaign's judgments."""
    from sharedtask.edition.qrels import assemble, register_qrels

    qrels = assemble(task, judged)
    dataset_id = register_qrels(task, qrels, name=name, pool=pool_path, campaign=f"service campaign {campaign_id}")
    return dataset_id, qrels, truth_dir_of(dataset_id) / task.truth.file("relevance").path


def _store(session: Any, scored: list[tuple[int, dict[str, Any], dict[str, Any]]]) -> None:
    for sub_id, scores, per_topic in scored:
        sub = session.get(Submission, sub_id)
        if sub is not None:
            sub.scores, sub.per_topic = scores, per_topic


def rescore_closed(service: Any, task: Any, campaign: Campaign) -> int:
    """Score the task's finished runs again against a closed campaign's qrels (runs that finished
    after the close were scored by the executor against the dataset's own truth), and those of
    the tasks judged in its pool that got qrels from it."""
    from sharedtask.service.assessment.runs import sharing_tasks

    scored = rescore(service, task, Path(campaign.qrels_path).parent)
    for other in sharing_tasks(service, task):
        truth_dir = truth_dir_of(f"{other.id}/{dataset_name(service, campaign.id)}")
        if truth_dir.is_dir():
            scored += rescore(service, other, truth_dir)
    with service.write_sessions()() as session:
        _store(session, scored)
        session.commit()
    return len(scored)


def rescore(service: Any, task: Any, truth_dir: Path) -> list[tuple[int, dict[str, Any], dict[str, Any]]]:
    """(submission id, scores, per-topic scores) of every finished valid run of the task."""
    from sharedtask.evaluate import evaluate
    from sharedtask.manifest import load_manifest
    from sharedtask.formats.runfile import find_run_file

    input_dir = load_manifest(service.config.manifest).dataset(task, service.config.dataset).input_dir
    from sharedtask.service import phases

    with service.sessions() as session:  # the runs made on the data the qrels judge: the server's dataset
        runs = [(s.id, s.run_dir) for s in session.scalars(
            select(Submission).where(Submission.task_id == task.id, Submission.status == "done",
                                     Submission.valid.is_(True), Submission.run_dir.is_not(None)))
                if phases.dataset_name(session, s, service.config.dataset) == service.config.dataset]
    out = []
    for sub_id, run_dir in runs:
        try:
            result = evaluate(find_run_file(Path(run_dir), task.output.file), task, truth_dir=truth_dir,
                              input_dir=input_dir, per_topic=True)
        except Exception as exc:  # noqa: BLE001 - one run that cannot be scored keeps its old scores
            log.warning("submission %s not scored against the new qrels: %s", sub_id, exc)
            continue
        out.append((sub_id, dict(result.scores), {k: dict(v) for k, v in result.per_topic.items()}))
    log.info("scored %d runs of %s against %s", len(out), task.id, truth_dir)
    return out
