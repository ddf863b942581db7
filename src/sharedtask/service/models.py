"""The service's tables: teams and their tokens, images, submissions, per-task settings.

Everything a team sends (team names chosen by the organizer aside) is stored as
data and escaped wherever it is shown. Times are UTC.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy import JSON, BigInteger, Boolean, DateTime, ForeignKey, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship


def utcnow() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)


def aware(value: dt.datetime) -> str:
    """A stored (naive UTC) time as ISO 8601 with its zone: ``2027-03-01T00:00:00+00:00``."""
    return value.replace(tzinfo=dt.timezone.utc).isoformat()


class Base(DeclarativeBase):
    pass


class Team(Base):
    """A participating team; the organizer is a row with ``organizer=True``."""

    __tablename__ = "teams"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(100), unique=True)
    organizer: Mapped[bool] = mapped_column(Boolean, default=False)
    created: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)


class Token(Base):
    """A bearer token, stored as its sha256 only: a leaked database leaks no token."""

    __tablename__ = "tokens"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    digest: Mapped[str] = mapped_column(String(64), unique=True)
    team_id: Mapped[int] = mapped_column(ForeignKey("teams.id"))
    created: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)
    revoked: Mapped[bool] = mapped_column(Boolean, default=False)


class Image(Base):
    """A submitted image, stored once by the sha256 of its archive (or its registry name)."""

    __tablename__ = "images"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    archive_sha256: Mapped[str | None] = mapped_column(String(64), unique=True, nullable=True)
    reference: Mapped[str | None] = mapped_column(String(300), unique=True, nullable=True)
    docker_id: Mapped[str] = mapped_column(String(100))
    size: Mapped[int] = mapped_column(BigInteger, default=0)
    created: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)


class Submission(Base):
    """One image of one team for one task, and everything known about its run so far.

    ``status``: queued → running → done | failed. ``attempts`` counts the claims of a
    worker; a result is stored only by the claim that is still current, so no run is
    scored twice.
    """

    __tablename__ = "submissions"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    team_id: Mapped[int] = mapped_column(ForeignKey("teams.id"), index=True)
    task_id: Mapped[str] = mapped_column(String(100), index=True)
    image_id: Mapped[int] = mapped_column(ForeignKey("images.id"))
    image_name: Mapped[str] = mapped_column(String(300))
    tag: Mapped[str] = mapped_column(String(100))
    command: Mapped[str | None] = mapped_column(Text, nullable=True)
    status: Mapped[str] = mapped_column(String(20), default="queued", index=True)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    created: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow, index=True)
    started: Mapped[dt.datetime | None] = mapped_column(DateTime, nullable=True)
    finished: Mapped[dt.datetime | None] = mapped_column(DateTime, nullable=True)
    run_status: Mapped[str | None] = mapped_column(String(30), nullable=True)
    valid: Mapped[bool | None] = mapped_column(Boolean, nullable=True)
    run_dir: Mapped[str | None] = mapped_column(Text, nullable=True)
    validation: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    record: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    scores: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    per_topic: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    notes: Mapped[list[str] | None] = mapped_column(JSON, nullable=True)
    hidden_reason: Mapped[str | None] = mapped_column(Text, nullable=True)
    #: the compute worker that runs (ran) it: ``serve --broker``'s worker name, "server" for the local pool
    worker: Mapped[str | None] = mapped_column(String(200), nullable=True)
    #: ``serve --broker``: the job sent to the workers (its JSON), kept so that a restarted server
    #: waits for the same job instead of sending another; cleared by a re-run
    job: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    #: the phase it was submitted to (None: a task without phases, or a database from before phases)
    phase_id: Mapped[int | None] = mapped_column(ForeignKey("phases.id"), nullable=True, index=True)
    #: the team marked it as one of its final runs of its phase (:mod:`sharedtask.service.selection`)
    selected: Mapped[bool] = mapped_column(Boolean, default=False)
    #: loaded with the row (a LEFT JOIN on a small table), so a submission read in a session that
    #: has ended still names its phase
    phase: Mapped["Phase | None"] = relationship(lazy="joined")
    #: a re-ranker: the published first stage it re-ranks (:mod:`sharedtask.service.stages`), mounted as
    #: ``$inputRun``; ``input_run`` is that stage's name, shown as "team/run ← name"
    stage_id: Mapped[int | None] = mapped_column(ForeignKey("stages.id"), nullable=True)
    input_run: Mapped[str | None] = mapped_column(String(64), nullable=True)

    @property
    def phase_name(self) -> str | None:
        return self.phase.name if self.phase is not None else None


class TaskSettings(Base):
    """What the organizer decided for a task: dates, a daily limit, publication."""

    __tablename__ = "task_settings"
    __table_args__ = (UniqueConstraint("task_id"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    task_id: Mapped[str] = mapped_column(String(100))
    opens: Mapped[dt.datetime | None] = mapped_column(DateTime, nullable=True)
    closes: Mapped[dt.datetime | None] = mapped_column(DateTime, nullable=True)
    daily_limit: Mapped[int | None] = mapped_column(Integer, nullable=True)
    published: Mapped[bool] = mapped_column(Boolean, default=False)


class Phase(Base):
    """A stage of a task (a development phase on public data, a blind test phase on hidden data):
    its own dataset, dates and limits, and what teams see of it (:mod:`sharedtask.service.phases`)."""

    __tablename__ = "phases"
    __table_args__ = (UniqueConstraint("task_id", "name"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    task_id: Mapped[str] = mapped_column(String(100), index=True)
    name: Mapped[str] = mapped_column(String(64))
    #: a dataset of tira.yml (``datasets:``) the phase's submissions run on
    dataset: Mapped[str] = mapped_column(String(100))
    opens: Mapped[dt.datetime | None] = mapped_column(DateTime, nullable=True)
    closes: Mapped[dt.datetime | None] = mapped_column(DateTime, nullable=True)
    daily_limit: Mapped[int | None] = mapped_column(Integer, nullable=True)
    total_limit: Mapped[int | None] = mapped_column(Integer, nullable=True)
    #: teams see their scores while the phase runs (False: only once it has closed)
    scores_visible: Mapped[bool] = mapped_column(Boolean, default=True)
    #: the phase's leaderboard is public (once its scores may be seen)
    leaderboard_public: Mapped[bool] = mapped_column(Boolean, default=False)
    #: how many runs a team may mark as final (None: no selection, the best run counts)
    max_selected: Mapped[int | None] = mapped_column(Integer, nullable=True)
    created: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)


class SignIn(Base):
    """A browser's sign-in: the cookie holds a random id (stored as its sha256), never the token.

    It expires (``expires``), the team can end it (sign out), and it ends with the token it was
    made from: revoking a member's token signs that member out everywhere.
    """

    __tablename__ = "sign_ins"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    digest: Mapped[str] = mapped_column(String(64), unique=True)
    token_id: Mapped[int] = mapped_column(ForeignKey("tokens.id"), index=True)
    created: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)
    expires: Mapped[dt.datetime] = mapped_column(DateTime)
    revoked: Mapped[bool] = mapped_column(Boolean, default=False)


class Stage(Base):
    """A first stage the organizer published for re-rankers: a valid run made into a stage folder
    (``run.txt`` + ``rerank.jsonl.gz``, :func:`sharedtask.rerank.prepare_stage`) once, for the
    dataset it was run on (a phase's, else the server's ``--dataset``). It never changes: a team's
    runs refer to it by name; another run is another name."""

    __tablename__ = "stages"
    __table_args__ = (UniqueConstraint("task_id", "name", "dataset"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    task_id: Mapped[str] = mapped_column(String(100), index=True)
    name: Mapped[str] = mapped_column(String(64))
    #: the dataset of tira.yml its run was made on; a submission reads it only on that dataset
    dataset: Mapped[str] = mapped_column(String(100))
    #: the submission whose run it is (None: a run file the organizer uploaded)
    #: (no foreign key: submissions point at stages, and one direction keeps the tables' order simple)
    submission_id: Mapped[int | None] = mapped_column(Integer, nullable=True)
    #: the sha256 of the run file it was made from: publishing the same run again is the same stage
    run_sha256: Mapped[str] = mapped_column(String(64))
    #: the stage folder under the data folder (``stages/<id>``), mounted read-only as ``$inputRun``
    path: Mapped[str] = mapped_column(Text)
    #: the sha256 of its ``rerank.jsonl.gz``, checked before every run that mounts it
    sha256: Mapped[str] = mapped_column(String(64))
    depth: Mapped[int] = mapped_column(Integer)
    topics: Mapped[int] = mapped_column(Integer)
    candidates: Mapped[int] = mapped_column(Integer)
    created: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)


# ----------------------------------------------------------------------------- assessment (issue 37)
# A third role beside teams and the organizer: assessors judge pooled items of a campaign
# (:mod:`sharedtask.service.assessment`). Their tokens live in tables of their own, so a team's
# token is never an assessor's and an assessor's reaches no team or organizer route.


class Assessor(Base):
    """A person who judges pools (``serve --new-assessor NAME``)."""

    __tablename__ = "assessors"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(100), unique=True)
    created: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)


class AssessorToken(Base):
    """An assessor's bearer token, stored as its sha256 (as :class:`Token`)."""

    __tablename__ = "assessor_tokens"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    digest: Mapped[str] = mapped_column(String(64), unique=True)
    assessor_id: Mapped[int] = mapped_column(ForeignKey("assessors.id"), index=True)
    created: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)
    revoked: Mapped[bool] = mapped_column(Boolean, default=False)


class AssessorSignIn(Base):
    """An assessor's browser sign-in (cookie ``sharedtask_assessor``), as :class:`SignIn` for teams."""

    __tablename__ = "assessor_sign_ins"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    digest: Mapped[str] = mapped_column(String(64), unique=True)
    token_id: Mapped[int] = mapped_column(ForeignKey("assessor_tokens.id"), index=True)
    expires: Mapped[dt.datetime] = mapped_column(DateTime)
    revoked: Mapped[bool] = mapped_column(Boolean, default=False)


class PrimaryRun(Base):
    """A team's primary run of a task; every other run of it is an alternate.

    One row per team and task (the unique constraint): two requests marking two runs primary
    at once cannot both win, on SQLite and PostgreSQL alike (ARQMath: one primary per team and task).
    """

    __tablename__ = "primary_runs"
    __table_args__ = (UniqueConstraint("team_id", "task_id"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    team_id: Mapped[int] = mapped_column(ForeignKey("teams.id"))
    task_id: Mapped[str] = mapped_column(String(100))
    submission_id: Mapped[int] = mapped_column(ForeignKey("submissions.id"), unique=True)


class PoolRow(Base):
    """A pool the organizer built from submitted runs: its folder (``pool.tsv``, ``pool.json``,
    :mod:`sharedtask.edition.pooling`) under the data folder."""

    __tablename__ = "pools"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    task_id: Mapped[str] = mapped_column(String(100), index=True)
    path: Mapped[str] = mapped_column(Text)
    items: Mapped[int] = mapped_column(Integer)
    topics: Mapped[int] = mapped_column(Integer)
    created: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)


class Campaign(Base):
    """A judging campaign on a pool: ``open`` until the organizer closes it, then its qrels are the
    task's truth (``qrels_path``); ``published``: teams may see its qrels and agreement."""

    __tablename__ = "campaigns"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    task_id: Mapped[str] = mapped_column(String(100), index=True)
    pool_id: Mapped[int] = mapped_column(ForeignKey("pools.id"))
    status: Mapped[str] = mapped_column(String(20), default="open")
    #: the share of each topic's items judged by a second assessor, and the seed that picks them
    double_share: Mapped[float] = mapped_column(default=0.0)
    seed: Mapped[int] = mapped_column(Integer, default=0)
    created: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)
    closed: Mapped[dt.datetime | None] = mapped_column(DateTime, nullable=True)
    qrels_path: Mapped[str | None] = mapped_column(Text, nullable=True)
    qrels_sha256: Mapped[str | None] = mapped_column(String(64), nullable=True)
    published: Mapped[bool] = mapped_column(Boolean, default=False)


class Judgment(Base):
    """One item of one topic for one assessor: made (grade NULL) when topics are assigned, filled
    by the assessor. The rows exist before anyone judges, so a save is one UPDATE of one row: two
    saves of the same judgment cannot make two rows, and a save never races an insert."""

    __tablename__ = "judgments"
    __table_args__ = (UniqueConstraint("campaign_id", "topic", "item", "assessor_id"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    campaign_id: Mapped[int] = mapped_column(ForeignKey("campaigns.id"), index=True)
    topic: Mapped[str] = mapped_column(String(100))
    item: Mapped[str] = mapped_column(String(200))
    assessor_id: Mapped[int] = mapped_column(ForeignKey("assessors.id"), index=True)
    #: its place in the topic's display order (the pool's seeded order, so no system can be told)
    position: Mapped[int] = mapped_column(Integer)
    #: judged by a second assessor too (the campaign's double share)
    double: Mapped[bool] = mapped_column(Boolean, default=False)
    grade: Mapped[int | None] = mapped_column(Integer, nullable=True)
    quality: Mapped[int | None] = mapped_column(Integer, nullable=True)
    judged: Mapped[dt.datetime | None] = mapped_column(DateTime, nullable=True)
    #: how many times it was saved (a changed judgment counts again; never a second row)
    saves: Mapped[int] = mapped_column(Integer, default=0)


class Lease(Base):
    """A lock held in the database (:mod:`sharedtask.service.locks`): its holder and until when.

    Why a row and not a lock of the engine: SQLite has no lock a connection can hold without an
    open transaction, and no transaction may stay open across an image load or a run. The row
    outlives a SIGKILLed holder; its ``expires`` (renewed while held) and its ``owner``'s process
    id let the next one take it.
    """

    __tablename__ = "leases"
    name: Mapped[str] = mapped_column(String(100), primary_key=True)
    #: ``host:pid:random``: a holder on this host whose process is gone is known at once
    owner: Mapped[str] = mapped_column(String(200))
    #: seconds since the epoch (``time.time()``) after which anyone may take it
    expires: Mapped[float] = mapped_column()
