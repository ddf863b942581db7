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
    campaign's JSON, from ``campaigns``, which calls this) gives the answer's body."""
    from sharedtask.data.checksum import sha256
    from sharedtask.data.store import store_root
    from sharedtask.edition.qrels import assemble, register_qrels

    qrels = assemble(task, judged)
    dataset_id = register_qrels(task, qrels, name=dataset_name(service, campaign_id), pool=pool_path,
                                campaign=f"service campaign {campaign_id}")
    truth_dir = store_root() / "datasets" / dataset_id / "truth"
    relevance = truth_dir / task.truth.file("relevance").path
    scored = rescore(service, task, truth_dir)
    with service.write_sessions()() as session:
        c = session.get(Campaign, campaign_id)
        assert c is not None
        c.status, c.qrels_path, c.qrels_sha256 = "closed", str(relevance), sha256(relevance)
        _store(session, scored)
        session.commit()
        body = describe(session, c)
    return {**body, "dataset": dataset_id, "scored_runs": len(scored), "qrels": qrels.summary()}


def _store(session: Any, scored: list[tuple[int, dict[str, Any], dict[str, Any]]]) -> None:
    for sub_id, scores, per_topic in scored:
        sub = session.get(Submission, sub_id)
        if sub is not None:
            sub.scores, sub.per_topic = scores, per_topic


def rescore_closed(service: Any, task: Any, campaign: Campaign) -> int:
    """Score the task's finished runs again against a closed campaign's qrels (runs that finished
    after the close were scored by the executor against the dataset's own truth)."""
    truth_dir = Path(campaign.qrels_path).parent
    scored = rescore(service, task, truth_dir)
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
