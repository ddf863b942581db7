"""Judging campaigns: open one on a pool, assign topics, save judgments, progress, close.

Opening a campaign makes every judgment row it will ever have (grade NULL): each topic's items
for the assessor it is assigned to, and for a seeded share of each topic's items a row for a
second assessor too. Saving is then one UPDATE of one existing row, so a judgment can be neither
duplicated (the row is unique) nor lost to a race between two inserts; saving again changes it.

Closing takes the campaign row's lock (PostgreSQL: ``FOR UPDATE``; SQLite: a writer's
transaction holds the database's write lock from BEGIN) and saves take it shared, so no save
lands after the close has read the judgments. The qrels are assembled after that commit, with
no transaction open (:func:`close`).
"""

from __future__ import annotations

import json
import random
import secrets
import shutil
from functools import lru_cache
from pathlib import Path
from typing import Any

from fastapi import HTTPException
from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from sharedtask.service.models import Assessor, Campaign, Judgment, PoolRow, aware, utcnow


def _is_postgres(session: Session) -> bool:
    return session.get_bind().dialect.name == "postgresql"


def campaign_dir(service: Any, campaign_id: int) -> Path:
    return Path(service.config.data_dir) / "campaigns" / str(campaign_id)


def plan(order: dict[str, list[str]], assigned: dict[str, str], share: float, seed: int
         ) -> list[tuple[str, str, str, int, bool]]:
    """The judgment rows of a campaign: (topic, item, assessor, position, double).

    For each topic the seeded ``random.Random(f"{seed}/{topic}")`` picks ``round(share * n)`` of
    its n items for a second judgment and the second assessor among the campaign's others; the
    same seed gives the same plan, whatever the order of the assignments.
    """
    people = sorted(set(assigned.values()))
    rows: list[tuple[str, str, str, int, bool]] = []
    for topic in sorted(assigned):
        items = order[topic]
        rng = random.Random(f"{seed}/{topic}")
        doubles = set(rng.sample(items, round(share * len(items)))) if share > 0 else set()
        second = rng.choice([p for p in people if p != assigned[topic]]) if doubles else None
        for position, item in enumerate(items):
            rows.append((topic, item, assigned[topic], position, item in doubles))
            if item in doubles:
                assert second is not None
                rows.append((topic, item, second, position, True))
    return rows


def open_campaign(service: Any, task: Any, pool_id: int, assigned: dict[str, str], share: float,
                  seed: int) -> dict[str, Any]:
    """A new campaign; the documents are extracted before, and without, any transaction."""
    from sharedtask.edition.pooling import read_pool
    from sharedtask.manifest import load_manifest
    from sharedtask.service.assessment import documents
    from sharedtask.service.assessment.scale import scales_of

    scales_of(task)  # a task without a scale cannot be judged: one line before anything is made
    if not 0 <= share <= 1:
        raise HTTPException(422, f"double_share must be between 0 and 1, not {share}")
    with service.sessions() as session:
        pool_row = session.get(PoolRow, pool_id)
        if pool_row is None or pool_row.task_id != task.id:
            raise HTTPException(404, f"no pool {pool_id} of {task.id}")
        people = {a.name: a.id for a in session.scalars(select(Assessor).where(Assessor.name.in_(set(assigned.values()))))}
    unknown = sorted(set(assigned.values()) - set(people))
    if unknown:
        raise HTTPException(422, f"no assessor {unknown[0][:64]!r} (serve --new-assessor NAME makes one)")
    if not assigned:
        raise HTTPException(422, "assign at least one topic to an assessor")
    if share > 0 and len(set(assigned.values())) < 2:
        raise HTTPException(422, "a share judged twice needs at least two assessors")
    pool = read_pool(Path(pool_row.path))
    order: dict[str, list[str]] = {}
    for topic in assigned:
        items = list(pool.display_order(topic))
        if not items:
            raise HTTPException(422, f"topic {topic[:64]!r} has no item in pool {pool_id}")
        order[topic] = items
    dataset = load_manifest(service.config.manifest).dataset(task, service.config.dataset)
    topics = documents.topics_html(task, dataset.input_dir)
    missing = sorted(set(assigned) - set(topics))
    if missing:
        raise HTTPException(422, f"topic {missing[0][:64]!r} is not a topic of {task.id}")
    wanted = {item for items in order.values() for item in items}
    items = documents.items_html(task, dataset.input_dir, wanted)
    for topic in assigned:  # items the pool carries as text (Task 3's written answers): shown from it
        for entry in pool.items(topic):
            if entry.text is not None and entry.item not in items:
                items[entry.item] = documents.answer_text_html(entry.text)
    base = Path(service.config.data_dir) / "campaigns"
    folder = base / f"new-{secrets.token_hex(6)}"
    documents.write_documents(folder / "documents.json", {t: topics[t] for t in assigned}, items)
    try:
        with service.write_sessions()() as session:
            campaign = Campaign(task_id=task.id, pool_id=pool_id, status="open", double_share=share, seed=seed,
                                published=False)
            session.add(campaign)
            session.flush()
            session.add_all(Judgment(campaign_id=campaign.id, topic=t, item=i, assessor_id=people[a], position=p,
                                     double=d, saves=0) for t, i, a, p, d in plan(order, assigned, share, seed))
            final = campaign_dir(service, campaign.id)
            if final.exists():  # left by a campaign whose commit failed (SQLite may reuse its id)
                shutil.rmtree(final)
            folder.rename(final)
            try:
                session.commit()
            except Exception:
                shutil.rmtree(final, ignore_errors=True)
                raise
    finally:
        if folder.exists():
            shutil.rmtree(folder, ignore_errors=True)
    with service.sessions() as session:
        return campaign_json(session, session.get(Campaign, campaign.id))


@lru_cache(maxsize=64)
def _documents(path: str, mtime: float) -> dict[str, Any]:
    return json.loads(Path(path).read_text(encoding="utf-8"))


def documents_of(service: Any, campaign_id: int) -> dict[str, Any]:
    """The campaign's topics and items as safe HTML, read once and kept (they never change)."""
    path = campaign_dir(service, campaign_id) / "documents.json"
    return _documents(str(path), path.stat().st_mtime)


def campaign_json(session: Session, c: Campaign) -> dict[str, Any]:
    return {"id": c.id, "task": c.task_id, "pool": c.pool_id, "status": c.status, "double_share": c.double_share,
            "seed": c.seed, "created": aware(c.created), "closed": aware(c.closed) if c.closed else None,
            "published": c.published, "qrels_sha256": c.qrels_sha256, "progress": progress(session, c.id)}


def get_campaign(session: Session, campaign_id: int) -> Campaign:
    found = session.get(Campaign, campaign_id)
    if found is None:
        raise HTTPException(404, f"no campaign {campaign_id}")
    return found


# ----------------------------------------------------------------------------- judging


def save(service: Any, who: Any, campaign_id: int, topic: str, item: str, grade: int,
         quality: int | None) -> dict[str, Any]:
    """Save (or change) one judgment: one UPDATE of the assessor's row, while the campaign is open.

    ``who`` is the assessor, or a function that finds them in the save's own session (None: not
    signed in, 401): the hot path then makes one transaction per save, not two.
    """
    from sharedtask.service.state import task_of
    from sharedtask.service.assessment.scale import scales_of

    with service.write_sessions()() as session:
        assessor = who(session) if callable(who) else who
        if assessor is None:
            raise HTTPException(401, "an assessor's token is needed (Authorization: Bearer TOKEN)",
                                headers={"WWW-Authenticate": "Bearer"})
        lock = select(Campaign.status, Campaign.task_id).where(Campaign.id == campaign_id)
        if _is_postgres(session):
            lock = lock.with_for_update(read=True)  # FOR SHARE: saves go together, a close waits for them
        found = session.execute(lock).first()
        if found is None:
            raise HTTPException(404, f"no campaign {campaign_id}")
        if found.status != "open":
            raise HTTPException(409, f"campaign {campaign_id} is closed: its judgments can no longer change")
        scales_of(task_of(service, found.task_id)).check(grade, quality)
        done = session.execute(
            update(Judgment).where(Judgment.campaign_id == campaign_id, Judgment.topic == topic, Judgment.item == item,
                                   Judgment.assessor_id == assessor.id)
            .values(grade=grade, quality=quality, judged=utcnow(), saves=Judgment.saves + 1))
        if done.rowcount != 1:
            raise HTTPException(404, f"item {item[:80]!r} of topic {topic[:64]!r} is not assigned to you")
        session.commit()
    return {"campaign": campaign_id, "topic": topic, "item": item, "grade": grade, "quality": quality}


def assigned_to(session: Session, assessor_id: int) -> list[dict[str, Any]]:
    """The assessor's topics in open campaigns, with how many of their items each has judged."""
    rows = session.execute(
        select(Judgment.campaign_id, Judgment.topic, func.count(Judgment.id), func.count(Judgment.grade))
        .join(Campaign, Campaign.id == Judgment.campaign_id)
        .where(Judgment.assessor_id == assessor_id, Campaign.status == "open")
        .group_by(Judgment.campaign_id, Judgment.topic).order_by(Judgment.campaign_id, Judgment.topic))
    return [{"campaign": c, "topic": t, "items": n, "judged": j} for c, t, n, j in rows]


def topic_rows(session: Session, assessor_id: int, campaign_id: int, topic: str) -> list[Any]:
    """The assessor's rows of one topic in display order (item, position, grade, quality: the
    columns a page needs, not ORM objects, as a board reads its light columns); 404 when none is
    theirs (an assessor sees only the topics assigned to them; a closed campaign is no one's)."""
    status = session.scalar(select(Campaign.status).where(Campaign.id == campaign_id))
    rows = list(session.execute(select(Judgment.item, Judgment.position, Judgment.grade, Judgment.quality)
                                .where(Judgment.campaign_id == campaign_id, Judgment.topic == topic,
                                       Judgment.assessor_id == assessor_id)
                                .order_by(Judgment.position)))
    if status != "open" or not rows:
        raise HTTPException(404, f"topic {topic[:64]!r} of campaign {campaign_id} is not assigned to you")
    return rows


# ----------------------------------------------------------------------------- the organizer's view


def progress(session: Session, campaign_id: int) -> list[dict[str, Any]]:
    """Per topic and assessor: items assigned, judged."""
    names = {i: n for i, n in session.execute(select(Assessor.id, Assessor.name))}
    rows = session.execute(select(Judgment.topic, Judgment.assessor_id, func.count(Judgment.id),
                                  func.count(Judgment.grade))
                           .where(Judgment.campaign_id == campaign_id)
                           .group_by(Judgment.topic, Judgment.assessor_id).order_by(Judgment.topic, Judgment.assessor_id))
    return [{"topic": t, "assessor": names[a], "items": n, "judged": j} for t, a, n, j in rows]


def judgments(session: Session, campaign_id: int) -> list[Any]:
    """Every judged row as :class:`sharedtask.edition.qrels.Judgment` (assessor by name)."""
    from sharedtask.edition.qrels import Judgment as EditionJudgment

    names = {i: n for i, n in session.execute(select(Assessor.id, Assessor.name))}
    rows = session.scalars(select(Judgment).where(Judgment.campaign_id == campaign_id, Judgment.grade.is_not(None))
                           .order_by(Judgment.topic, Judgment.position, Judgment.assessor_id))
    return [EditionJudgment(r.topic, r.item, names[r.assessor_id], r.grade, quality=r.quality,
                            when=aware(r.judged) if r.judged else None) for r in rows]


def close(service: Any, task: Any, campaign_id: int) -> dict[str, Any]:
    """Close the campaign, assemble its qrels, register them as the task's truth in the service and
    score every finished run against them. Closing twice is refused (409)."""
    from sharedtask.service.assessment import truth

    with service.lock_for(("campaign", campaign_id)):  # two closes at once: one assembles, the other waits
        return _close(service, task, campaign_id, truth)


def _close(service: Any, task: Any, campaign_id: int, truth: Any) -> dict[str, Any]:
    with service.write_sessions()() as session:
        lock = select(Campaign).where(Campaign.id == campaign_id)
        if _is_postgres(session):
            lock = lock.with_for_update()
        c = session.scalar(lock)
        if c is None or c.task_id != task.id:
            raise HTTPException(404, f"no campaign {campaign_id} of {task.id}")
        if c.status == "closed":
            raise HTTPException(409, f"campaign {campaign_id} is closed already")
        # "closing": a close that failed after its first commit (a bad run file, a full disk) is tried again
        c.status, c.closed = "closing", utcnow()
        session.commit()
    with service.sessions() as session:  # no save can land now: the status is no longer open
        judged = judgments(session, campaign_id)
        pool_path = session.get(PoolRow, c.pool_id).path
    return truth.register(service, task, campaign_id, judged, Path(pool_path), campaign_json)


def agreement_of(session: Session, task: Any, campaign_id: int) -> dict[str, Any] | None:
    """Agreement (:func:`sharedtask.edition.agreement.agreement`) on the items judged twice, by the
    task's binarization (``pooling.relevant_from``); None until two assessors judged one item."""
    from sharedtask.edition.agreement import agreement

    names = {i: n for i, n in session.execute(select(Assessor.id, Assessor.name))}
    grades: dict[str, dict[tuple[str, str], int]] = {}
    for r in session.execute(select(Judgment.topic, Judgment.item, Judgment.assessor_id, Judgment.grade)
                             .where(Judgment.campaign_id == campaign_id, Judgment.double.is_(True),
                                    Judgment.grade.is_not(None))):
        grades.setdefault(names[r.assessor_id], {})[(r.topic, r.item)] = r.grade
    if len(grades) < 2:
        return None
    from sharedtask.service.assessment.scale import scales_of

    threshold = task.pooling.relevant_from if task.pooling is not None else task.truth.relevant_threshold
    found = agreement(grades, threshold, labels=[g.grade for g in scales_of(task).relevance]).as_json()
    return found if found["judged_by_both"] else None
