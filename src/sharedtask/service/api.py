"""The JSON API (``/api/...``), described by the OpenAPI document the app serves.

No ``from __future__ import annotations``: FastAPI reads the parameter annotations
(``Member``, ``Db``, the request models) at run time.
"""

import datetime as dt
import io
import json
import secrets
import tarfile
import tempfile
from pathlib import Path
from typing import Any

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import FileResponse, JSONResponse
from pydantic import BaseModel, Field
from sqlalchemy import select
from starlette.background import BackgroundTask
from starlette.concurrency import run_in_threadpool
from starlette.requests import ClientDisconnect

from sharedtask.service import actions
from sharedtask.service.access import (Db, Member, Organizer, State, may_see_board, all_settings, task_of,
                                       team_names, visible)
from sharedtask.service.models import Image, Submission, Team
from sharedtask.service.tokens import create_team
from sharedtask.service.uploads import Spool, UploadError, clean_archive, load_archive, named_image
from sharedtask.units import parse_size

router = APIRouter(prefix="/api")


class TeamIn(BaseModel):
    name: str = Field(description="1-64 letters, digits, '.', '_' or '-'")


class NamedImageIn(BaseModel):
    image: str = Field(description="an image reference the server pulls from a registry")
    command: str | None = None
    tag: str | None = None


class HideIn(BaseModel):
    reason: str = Field(min_length=1, max_length=500)


class SettingsIn(BaseModel):
    opens: dt.datetime | None = None
    closes: dt.datetime | None = None
    daily_limit: int | None = Field(default=None, ge=1)


# ----------------------------------------------------------------------------- submissions


async def _spool_upload(request: Request, service: State, limit: int) -> tuple[Path, str]:
    """The request body in ``DATA_DIR/uploads/``, with its sha256; nothing stays behind on any failure."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise UploadError(413, f"the image archive ({declared} bytes) is larger than the limit of {limit} bytes",
                          hint="make the image smaller")
    uploads = service.config.data_dir / "uploads"
    uploads.mkdir(parents=True, exist_ok=True)
    spool = Spool(uploads / f"{secrets.token_hex(8)}.tar", limit)
    try:
        async for chunk in request.stream():
            spool.write(chunk)
    except ClientDisconnect:
        spool.discard()
        raise HTTPException(400, "the upload was interrupted; nothing was stored") from None
    except BaseException:
        spool.discard()
        raise
    sha = spool.close()
    expected = request.headers.get("x-image-sha256")
    problem = None
    if expected and expected.lower() != sha:
        problem = (f"the archive's sha256 is {sha}, not {expected} as announced: the upload was damaged or cut; "
                   "nothing was stored")
    elif spool.size == 0:
        problem = "the upload is empty (send the output of `docker save IMAGE`)"
    if problem:
        spool.path.unlink(missing_ok=True)
        raise UploadError(400, problem)
    return spool.path, sha


@router.post("/tasks/{task_id}/submissions", status_code=201, tags=["submissions"],
             summary="Submit an image: a `docker save` archive as the body (application/x-tar), or JSON naming "
                     "an image in a registry")
async def submit(task_id: str, request: Request, who: Member, session: Db, service: State,
                 command: str | None = None, tag: str | None = None) -> JSONResponse:
    task = task_of(service, task_id)
    limit = min(service.config.max_upload, parse_size(task.sandbox.max_image))
    actions.check_open(service, session, who, task_id)
    if request.headers.get("content-type", "").startswith("application/json"):
        named = NamedImageIn.model_validate_json(await request.body())
        run_tag = actions.tag_of(named.tag or tag, session, who)
        loaded = await run_in_threadpool(named_image, named.image, limit,
                                         allow_local=service.config.allow_local_images)
        image = session.scalar(select(Image).where(Image.docker_id == loaded.docker_id))
        if image is None:
            image = Image(docker_id=loaded.docker_id, size=loaded.size)
            session.add(image)
            session.flush()
        sub = actions.queue(service, session, who, task_id, image, named.command or command, run_tag)
        return JSONResponse(actions.submission_json(sub, who.name, blind=actions.blind_for(service, who)),
                            status_code=201)
    run_tag = actions.tag_of(tag, session, who)
    raw, sha = await _spool_upload(request, service, limit)
    clean = raw.with_suffix(".clean.tar")
    try:
        image = session.scalar(select(Image).where(Image.archive_sha256 == sha))
        if image is None:  # stored once by digest: a known archive is neither checked nor loaded again
            await run_in_threadpool(clean_archive, raw, clean)
            loaded = await run_in_threadpool(load_archive, clean, limit, sha)
            image = Image(archive_sha256=sha, docker_id=loaded.docker_id, size=loaded.size)
            session.add(image)
            session.flush()
    finally:
        raw.unlink(missing_ok=True)
        clean.unlink(missing_ok=True)
    sub = actions.queue(service, session, who, task_id, image, command, run_tag)
    blind = actions.blind_for(service, who)
    return JSONResponse({**actions.submission_json(sub, who.name, blind=blind), "archive_sha256": sha},
                        status_code=201)


@router.get("/submissions", tags=["submissions"], summary="Your submissions (the organizer: all)")
def list_submissions(who: Member, session: Db, service: State, task: str | None = None) -> list[dict[str, Any]]:
    query = select(Submission).order_by(Submission.id)
    if not who.organizer:
        query = query.where(Submission.team_id == who.id)
    if task:
        query = query.where(Submission.task_id == task)
    names = team_names(session)
    blind = actions.blind_for(service, who)
    return [actions.submission_json(s, names[s.team_id], blind=blind) for s in session.scalars(query)]


@router.get("/submissions/{submission_id}", tags=["submissions"])
def get_submission(submission_id: int, who: Member, session: Db, service: State) -> dict[str, Any]:
    sub = visible(session, who, submission_id)
    return actions.submission_json(sub, team_names(session)[sub.team_id], blind=actions.blind_for(service, who))


@router.post("/submissions/{submission_id}/rerun", tags=["organizer"], summary="Run a submission again")
def rerun(submission_id: int, org: Organizer, session: Db, service: State) -> dict[str, Any]:
    return actions.rerun(service, session, visible(session, org, submission_id))


@router.post("/submissions/{submission_id}/hide", tags=["organizer"],
             summary="Hide a faulty run from the leaderboard, with a reason shown to the team")
def hide(submission_id: int, body: HideIn, org: Organizer, session: Db) -> dict[str, Any]:
    return actions.hide(session, visible(session, org, submission_id), body.reason)


@router.post("/submissions/{submission_id}/unhide", tags=["organizer"])
def unhide(submission_id: int, org: Organizer, session: Db) -> dict[str, Any]:
    return actions.hide(session, visible(session, org, submission_id), None)


# ----------------------------------------------------------------------------- teams and tasks


@router.post("/teams", status_code=201, tags=["organizer"], summary="Create a team and its token")
def new_team(body: TeamIn, _org: Organizer, session: Db) -> dict[str, str]:
    created, token = create_team(session, body.name)
    session.commit()
    return {"team": created.name, "token": token}


@router.get("/teams", tags=["organizer"])
def list_teams(_org: Organizer, session: Db) -> list[dict[str, Any]]:
    return [{"team": t.name, "created": t.created.isoformat()}
            for t in session.scalars(select(Team).where(Team.organizer.is_(False)).order_by(Team.id))]


@router.get("/tasks", tags=["tasks"], summary="The tasks this server accepts submissions for")
def list_tasks(session: Db, service: State) -> list[dict[str, Any]]:
    settings = all_settings(session)
    return [actions.task_json(service, tid, settings.get(tid)) for tid in service.known_tasks]


@router.put("/tasks/{task_id}/settings", tags=["organizer"], summary="Open/close dates (UTC) and a daily limit")
def put_settings(task_id: str, body: SettingsIn, _org: Organizer, session: Db, service: State) -> dict[str, Any]:
    task_of(service, task_id)
    return actions.put_settings(service, session, task_id, body.opens, body.closes, body.daily_limit)


@router.post("/tasks/{task_id}/publish", tags=["organizer"], summary="Make the leaderboard public")
def publish(task_id: str, _org: Organizer, session: Db, service: State) -> dict[str, Any]:
    task_of(service, task_id)
    return actions.set_published(service, session, task_id, True)


@router.post("/tasks/{task_id}/unpublish", tags=["organizer"])
def unpublish(task_id: str, _org: Organizer, session: Db, service: State) -> dict[str, Any]:
    task_of(service, task_id)
    return actions.set_published(service, session, task_id, False)


@router.get("/tasks/{task_id}/leaderboard", tags=["tasks"], summary="Ranked runs (public once published)")
def leaderboard_json(task_id: str, request: Request, session: Db, service: State) -> dict[str, Any]:
    from sharedtask.report.model import TaskSection, leaderboard

    task = task_of(service, task_id)
    organizer_view = may_see_board(request, session, task_id)
    entries = actions.board_entries(service, session, task_id, organizer_view=organizer_view)
    rows = [{"rank": rank, "run": entry.name, "status": entry.verdict, "scores": entry.scores}
            for rank, entry in leaderboard(TaskSection(task, entries))]
    return {"task": task_id, "primary": task.primary_measure.key, "runs": rows}


@router.get("/tasks/{task_id}/archive", tags=["organizer"],
            summary="Every finished run with its record and ir_metadata, for the overview paper (.tar.gz)")
def archive(task_id: str, _org: Organizer, session: Db, service: State) -> FileResponse:
    from sharedtask.service.archive import task_archive

    return task_archive(task_id, session, service)
