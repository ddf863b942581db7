"""What the API and the pages both do: admission, the line of queued runs, re-run, hide, settings,
publication, leaderboards.

One function per action, so a page form and an API call cannot drift apart.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

from fastapi import HTTPException
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from sharedtask.service import entries, phases
from sharedtask.service.state import ServiceState, naive_utc, settings_of, task_of, team_names
from sharedtask.service.db import is_sqlite
from sharedtask.service.models import Image, Submission, TaskSettings, Team, aware, utcnow
from sharedtask.service.selection import BOARD_COLUMNS
from sharedtask.service.teams.tokens import TEAM_NAME

TAG = TEAM_NAME


def submission_json(sub: Submission, team: str, *, blind: bool = False) -> dict[str, Any]:
    """The API's view of a submission; ``blind``: a team's view under ``serve --blind``, built
    from the allow-list alone (:func:`sharedtask.service.visibility.blind_view`)."""
    from sharedtask.service import visibility

    if blind:
        return visibility.blind_view(sub, team)
    record = sub.record
    return {
        "id": sub.id, "team": team, "task": sub.task_id, "tag": sub.tag, "image": sub.image_name,
        "command": sub.command, "status": sub.status, "attempts": sub.attempts, "run_status": sub.run_status,
        "valid": sub.valid, "scores": sub.scores, "notes": sub.notes or [], "hidden": sub.hidden_reason,
        "created": aware(sub.created) if sub.created else None,
        "finished": aware(sub.finished) if sub.finished else None,
        "validation": (record or {}).get("validation"), "record": record, "worker": sub.worker,
        "phase": sub.phase_name, "selected": bool(sub.selected), "input_run": sub.input_run,
    }


def task_json(service: ServiceState, task_id: str, s: TaskSettings | None) -> dict[str, Any]:
    return {"task": task_id, "published": bool(s and s.published),
            "opens": aware(s.opens) if s and s.opens else None,
            "closes": aware(s.closes) if s and s.closes else None,
            "daily_limit": (s.daily_limit if s else None) or service.config.daily_limit}


def _window(s: TaskSettings, task_id: str, now: dt.datetime) -> None:
    """403 before the task opens or after it closes."""
    if s.opens and now < s.opens:
        raise HTTPException(403, f"task {task_id} opens for submissions at {aware(s.opens)}")
    if s.closes and now >= s.closes:
        raise HTTPException(403, f"task {task_id} closed for submissions at {aware(s.closes)}")


def _used_today(session: Session, who: Team, task_id: str, now: dt.datetime) -> int:
    day = now.replace(hour=0, minute=0, second=0, microsecond=0)
    return int(session.scalar(select(func.count(Submission.id)).where(
        Submission.team_id == who.id, Submission.task_id == task_id, Submission.created >= day)) or 0)


def left_today(service: ServiceState, session: Session, who: Team) -> list[tuple[str, int, int]]:
    """(task, submissions made today, the daily limit) for each task with a daily limit: what the
    team page shows as "submissions left today" (the organizer has no limit)."""
    if who.organizer:
        return []
    rows = {s.task_id: s for s in session.scalars(
        select(TaskSettings).where(TaskSettings.task_id.in_(service.known_tasks)))}
    now = utcnow()
    out = []
    for task_id in service.known_tasks:
        s = rows.get(task_id)
        daily = (s.daily_limit if s else None) or service.config.daily_limit
        if daily:
            out.append((task_id, _used_today(session, who, task_id, now), daily))
    return out


def _quota_refusal(who: Team, task_id: str, limit: int, now: dt.datetime) -> HTTPException:
    reset = now.replace(hour=0, minute=0, second=0, microsecond=0) + dt.timedelta(days=1)
    return HTTPException(429, f"{who.name} has made its {limit} submission(s) to {task_id} today; the limit "
                              f"resets at {aware(reset)}",
                         headers={"Retry-After": str(max(1, int((reset - now).total_seconds())))})


def _checked_tag(tag: str | None) -> str | None:
    if tag is not None and not TAG.fullmatch(tag):
        raise HTTPException(422, f"invalid tag {tag[:80]!r}: use 1-64 letters, digits, '.', '_' or '-'")
    return tag


def _tag_taken(session: Session, who: Team, task_id: str, tag: str) -> bool:
    return session.scalar(select(Submission.id).where(Submission.team_id == who.id, Submission.task_id == task_id,
                                                      Submission.tag == tag).limit(1)) is not None


def _stage(service: ServiceState, session: Session, task_id: str, input_run: str | None, phase: Any) -> Any:
    """The published first stage a re-ranker picked (None without ``input_run``), or the refusal."""
    from sharedtask.service import stages

    if input_run is None:
        return None
    return stages.chosen(session, task_of(service, task_id), input_run, phase, service.config.dataset,
                         workers_lack_stages=service.config.workers_lack_stages)


def preflight(service: ServiceState, who: Team, task_id: str, tag: str | None, size: int | None,
              limit: int, phase: str | None = None, input_run: str | None = None) -> dict[str, Any]:
    """Everything a submission would be refused for, asked before any byte of the image moves.

    Runs in a worker thread with its own short read-only session. The answer is advice: the
    quota is checked again, exactly, when the submission is stored (:func:`admit`).
    """
    _checked_tag(tag)
    if size is not None and size > limit:
        raise HTTPException(413, f"the image archive ({size} bytes) is larger than the limit of {limit} bytes",
                            headers={"X-Max-Upload": str(limit)})
    now = utcnow()
    with service.sessions() as session:
        s = settings_of(session, task_id)
        _window(s, task_id, now)
        daily = s.daily_limit or service.config.daily_limit
        used = _used_today(session, who, task_id, now)
        if daily and not who.organizer and used >= daily:
            raise _quota_refusal(who, task_id, daily, now)
        if tag is not None and _tag_taken(session, who, task_id, tag):
            raise HTTPException(409, f"{who.name} has a run tagged {tag!r} for {task_id} already: choose another tag")
        chosen = phases.admission(session, who, task_id, phase, now)
        phase_info = phases.phase_json(chosen, now) if chosen else None
        stage = _stage(service, session, task_id, input_run, chosen)
        session.commit()  # ends the read transaction; the rows stay loaded
    return {"task": task_id, "team": who.name, "max_upload": limit,
            "daily_limit": daily, "used_today": used,
            "remaining_today": None if not daily or who.organizer else daily - used,
            "closes": aware(s.closes) if s.closes else None, "phase": phase_info,
            "input_run": stage.name if stage is not None else None}


def admit(service: ServiceState, who: Team, task_id: str, image_id: int, image_name: str, command: str | None,
          tag: str | None, phase: str | None = None, input_run: str | None = None) -> Submission:
    """Store the submission, or refuse it, in one transaction serialised per team.

    The window, the daily limit and the tag are checked again here, inside the transaction
    that inserts: on SQLite it holds the database's write lock from its BEGIN; on PostgreSQL
    it first locks the team's row (``SELECT ... FOR UPDATE``), so a team's parallel
    submissions pass one at a time and exactly ``limit`` of them are stored per day.
    """
    now = utcnow()
    with service.write_sessions()() as session:
        if not is_sqlite(session):
            session.execute(select(Team.id).where(Team.id == who.id).with_for_update())
        s = settings_of(session, task_id)
        _window(s, task_id, now)
        daily = s.daily_limit or service.config.daily_limit
        if daily and not who.organizer and _used_today(session, who, task_id, now) >= daily:
            raise _quota_refusal(who, task_id, daily, now)
        chosen = phases.admission(session, who, task_id, phase, now)  # its window and limits, under the same lock
        stage = _stage(service, session, task_id, input_run, chosen)
        if tag is None:
            n = int(session.scalar(select(func.count(Submission.id)).where(Submission.team_id == who.id)) or 0) + 1
            while _tag_taken(session, who, task_id, f"run{n}"):
                n += 1
            tag = f"run{n}"
        elif _tag_taken(session, who, task_id, tag):
            raise HTTPException(409, f"{who.name} has a run tagged {tag!r} for {task_id} already: choose another tag")
        sub = Submission(team_id=who.id, task_id=task_id, image_id=image_id, image_name=image_name, tag=tag,
                         command=command, status="queued", attempts=0, notes=[], created=now,
                         phase=chosen, stage_id=stage.id if stage is not None else None,
                         input_run=stage.name if stage is not None else None)
        session.add(sub)
        session.commit()
    service.runs.enqueue(sub.id)
    return sub


def _insert_image(session: Session, values: dict[str, Any], key: str) -> Image:
    """The image row with ``values[key]``, inserted once whoever asks at the same time."""
    dialect = session.get_bind().dialect.name
    if dialect in ("sqlite", "postgresql"):
        if dialect == "postgresql":
            from sqlalchemy.dialects.postgresql import insert
        else:
            from sqlalchemy.dialects.sqlite import insert
        session.execute(insert(Image).values(**values).on_conflict_do_nothing(index_elements=[key]))
    elif session.scalar(select(Image).where(getattr(Image, key) == values[key])) is None:
        session.add(Image(**values))
    session.commit()
    found = session.scalar(select(Image).where(getattr(Image, key) == values[key]))
    assert found is not None
    return found


#: the longest a submission waits for another one's load of the same image (seconds): a load
#: that hangs must not hold every later upload of that image for ever
LOAD_WAIT = 3600


def image_of_archive(service: ServiceState, raw: Path, sha: str, limit: int) -> Image:
    """The image of an uploaded archive: found by digest, or checked, loaded and stored once.

    Never inside a transaction: the lookup and the insert are short transactions of their
    own, and the check and ``docker load`` (minutes for a large image) run between them. One
    lock per digest, held in the database (:mod:`sharedtask.service.locks`: every server process
    shares it), makes ten teams sending the same new image wait for one load.
    """
    from sharedtask.service.uploads import clean_archive, load_archive

    with service.sessions() as session:  # a known image needs no lock (the common case)
        found = session.scalar(select(Image).where(Image.archive_sha256 == sha))
    if found is not None:
        return found
    from sharedtask.service.locks import LockBusy

    try:
        with service.lock_for(("image", sha), within=LOAD_WAIT):
            with service.sessions() as session:  # loaded meanwhile by the lock's last holder?
                found = session.scalar(select(Image).where(Image.archive_sha256 == sha))
            if found is not None:
                return found
            clean = raw.with_suffix(".clean.tar")
            try:
                clean_archive(raw, clean)
                loaded = load_archive(clean, limit, sha)
            finally:
                clean.unlink(missing_ok=True)
            with service.write_sessions()() as session:
                return _insert_image(session, {"archive_sha256": sha, "docker_id": loaded.docker_id,
                                               "size": loaded.size}, "archive_sha256")
    except LockBusy:
        raise HTTPException(503, f"the image {sha[:12]} has been loading for another submission for over "
                                 f"{LOAD_WAIT // 60} minutes; send it again later",
                            headers={"Retry-After": "600"}) from None


def image_of_reference(service: ServiceState, reference: str, limit: int) -> Image:
    """The image a team named in a registry, pulled (outside any transaction) and stored once."""
    from sharedtask.service.uploads import named_image

    loaded = named_image(reference, limit, allow_local=service.config.allow_local_images,
                         registries=service.config.registries)
    with service.write_sessions()() as session:
        found = session.scalar(select(Image).where(Image.docker_id == loaded.docker_id,
                                                   Image.archive_sha256.is_(None)).limit(1))
        if found is not None:
            return found
        image = Image(docker_id=loaded.docker_id, size=loaded.size)
        session.add(image)
        session.commit()
        return image


def blind_for(service: ServiceState, who: Team) -> bool:
    return service.config.blind and not who.organizer


def rerun(service: ServiceState, session: Session, sub: Submission) -> dict[str, Any]:
    if sub.status in entries.PENDING:
        raise HTTPException(409, f"submission {sub.id} is {sub.status} already")
    sub.status, sub.scores, sub.per_topic, sub.valid, sub.run_status = "queued", None, None, None, None
    sub.job, sub.worker = None, None  # a new job for the workers, not the one they answered already
    sub.notes = [*(sub.notes or []), f"re-run by the organizer at {utcnow().replace(microsecond=0).isoformat()}"]
    session.commit()
    service.runs.enqueue(sub.id)
    return submission_json(sub, team_names(session)[sub.team_id])


def hide(session: Session, sub: Submission, reason: str | None) -> dict[str, Any]:
    sub.hidden_reason = reason
    session.commit()
    return submission_json(sub, team_names(session)[sub.team_id])


def put_settings(service: ServiceState, session: Session, task_id: str, opens: dt.datetime | None,
                 closes: dt.datetime | None, daily_limit: int | None) -> dict[str, Any]:
    opens, closes = naive_utc(opens), naive_utc(closes)
    if opens is not None and closes is not None and opens >= closes:
        raise HTTPException(422, f"the task would close ({aware(closes)}) before it opens ({aware(opens)}): "
                                 "give an opening time before the closing time")
    s = settings_of(session, task_id)
    s.opens, s.closes, s.daily_limit = opens, closes, daily_limit
    session.commit()
    return task_json(service, task_id, s)


def set_published(service: ServiceState, session: Session, task_id: str, value: bool) -> dict[str, Any]:
    s = settings_of(session, task_id)
    s.published = value
    session.commit()
    return task_json(service, task_id, s)


def board_entries(service: ServiceState, session: Session, task_id: str, *, organizer_view: bool,
                  runs: list[Submission] | None = None) -> list[Any]:
    """Report rows of a task's finished submissions (or of ``runs``): :func:`board_pairs`' entries."""
    return [entry for _, entry in board_pairs(service, session, task_id, organizer_view=organizer_view, runs=runs)]


def board_pairs(service: ServiceState, session: Session, task_id: str, *, organizer_view: bool,
                runs: list[Submission] | None = None) -> list[tuple[Submission, Any]]:
    """(submission, report row) of a task's finished submissions (or of ``runs``, a phase's board:
    :func:`sharedtask.service.selection.board_runs`); hidden runs, logs and server paths only in
    the organizer's view; under ``--blind`` everyone else sees the allow-list only. Runs of a
    phase are on the task's board for the organizer only: the public sees them on their
    phase's board, under the phase's rules."""
    from pathlib import Path

    from sharedtask.service import visibility

    names = team_names(session)
    subs = runs if runs is not None else [
        s for s in session.scalars(select(Submission).where(Submission.task_id == task_id,
                                                             Submission.status.in_(("done", "failed")))
                                   .order_by(Submission.id))
        if organizer_view or s.phase_id is None]
    seen_by = (visibility.ORGANIZER if organizer_view else visibility.BLIND if service.config.blind
               else visibility.PUBLIC)
    data_dir = Path(service.config.data_dir)
    roots = (str(data_dir), str(data_dir.resolve()))
    return [(s, entries.entry_of(s, names[s.team_id], seen_by=seen_by, roots=roots))
            for s in subs if organizer_view or not s.hidden_reason]


def light_entry(row: Any, team: str, *, blind: bool) -> Any:
    """A leaderboard row (name, verdict, scores) from a row's light columns, no record: the
    organizer's and the public's scores as stored, under ``--blind`` the allow-list's
    (:func:`sharedtask.service.visibility.blind_view`: declared, finite measures; the coarse status)."""
    from sharedtask.report.model import RunEntry
    from sharedtask.service import visibility

    if blind:
        scores = {k: v for k, v in visibility.declared_scores(row.task_id, row.scores).items() if v is not None}
        status = visibility.coarse_status(row.run_status) or ("error" if row.status == "failed" else row.status)
        valid = row.valid if isinstance(row.valid, bool) else None
    else:
        scores, status, valid = dict(row.scores or {}), entries.status_of(row), row.valid
    return RunEntry(name=entries.run_name(team, row), image=row.image_name, command=row.command, status=status,
                    valid=valid, findings=[], scores=scores, per_topic={}, record={}, submitted=row.created)




def board_rows(service: ServiceState, session: Session, task_id: str, *, organizer_view: bool) -> list[Any]:
    """The rows of the JSON leaderboard (rank, run, verdict, scores): :func:`board_row_pairs`' entries."""
    return [entry for _, entry in board_row_pairs(service, session, task_id, organizer_view=organizer_view)]


def board_row_pairs(service: ServiceState, session: Session, task_id: str, *,
                    organizer_view: bool) -> list[tuple[Any, Any]]:
    """(row, report row) of the JSON leaderboard: :func:`board_pairs` without records.

    Why: the JSON board shows no record, finding or note, yet redacting every run's record
    for the public was most of the server's CPU under a crowd (benchmarks/service.py); here
    only the columns the rank and the verdict depend on are read. Under ``--blind`` the
    public rows are :func:`board_pairs`' own (their scores come from the allow-list). As
    there, a phase's runs are on the task's board for the organizer only.
    """
    from sharedtask.report.model import RunEntry

    if service.config.blind and not organizer_view:
        return board_pairs(service, session, task_id, organizer_view=False)
    names = team_names(session)
    rows = session.execute(select(*BOARD_COLUMNS).where(Submission.task_id == task_id,
                                                         Submission.status.in_(("done", "failed")))
                           .order_by(Submission.id))
    return [(r, RunEntry(name=entries.run_name(names[r.team_id], r), image=r.image_name, command=r.command,
                         status=entries.status_of(r), valid=r.valid, findings=[], scores=dict(r.scores or {}),
                         per_topic={}, record={}, first_stage=r.input_run, submitted=r.created))
            for r in rows if organizer_view or (not r.hidden_reason and r.phase_id is None)]


def queue_line(session: Any) -> list[int]:
    """Every queued submission's id, oldest first: the order the executor takes them."""
    return list(session.scalars(select(Submission.id).where(Submission.status == "queued").order_by(Submission.id)))


def ahead_of(session: Any) -> dict[int, int]:
    """For each queued submission, how many queued ones are ahead of it (0: it runs next)."""
    return {sid: place for place, sid in enumerate(queue_line(session))}
