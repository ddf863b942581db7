"""The JSON API (``/api/...``), described by the OpenAPI document the app serves.

No ``from __future__ import annotations``: FastAPI reads the parameter annotations
(``Member``, ``Db``, the request models) at run time.
"""

from pathlib import Path
from typing import Any, Callable

from fastapi import APIRouter, HTTPException, Query, Request
from fastapi.responses import FileResponse, JSONResponse, Response
from pydantic import BaseModel, Field, ValidationError
from sqlalchemy import select
from starlette.concurrency import run_in_threadpool

from sharedtask.service import phases, submissions
from sharedtask.service.state import ServiceState, all_settings, task_of, team_names
from sharedtask.service.limits import bounded_body, stream_to
from sharedtask.service.models import Submission, Team, aware, utcnow
from sharedtask.service.teams.tokens import create_team
from sharedtask.service.uploads import Spool, UploadError, spool_path
from sharedtask.service.web.common import (Db, Member, Organizer, SettingsIn, State, authenticate, hot, kept, may_see_board,
                                           member, visible)
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


# ----------------------------------------------------------------------------- submissions


#: JSON bodies (a named image, settings, a team) are small
JSON_LIMIT = 64 * 1024


async def _spool_upload(request: Request, service: State, limit: int) -> tuple[Path, str]:
    """The request body in ``DATA_DIR/uploads/`` (:func:`limits.stream_to`), with its sha256;
    nothing stays behind on any failure."""
    spool = Spool(spool_path(service.config.data_dir / "uploads", ".tar"), limit)
    await stream_to(request, spool)
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


def _declared_size(request: Request) -> int | None:
    declared = request.headers.get("content-length")
    return int(declared) if declared is not None and declared.isdigit() else None


def _upload_limit(service: ServiceState, task: Any) -> int:
    return min(service.config.max_upload, parse_size(task.sandbox.max_image))


@router.get("/tasks/{task_id}/submissions/preflight", tags=["submissions"],
            summary="Would a submission be accepted now? Token, dates, quota, tag and size, before any upload")
async def preflight(task_id: str, request: Request, service: State, tag: str | None = None,
                    size: int | None = None, phase: str | None = None,
                    input_run: str | None = None) -> dict[str, Any]:
    task = task_of(service, task_id)
    who = await run_in_threadpool(authenticate, service, request)
    return await run_in_threadpool(submissions.preflight, service, who, task_id, tag, size,
                                   _upload_limit(service, task), phase, input_run)


@router.post("/tasks/{task_id}/submissions", status_code=201, tags=["submissions"],
             summary="Submit an image: a `docker save` archive as the body (application/x-tar), or JSON naming "
                     "an image in a registry")
async def submit(task_id: str, request: Request, service: State, command: str | None = None,
                 tag: str | None = None, phase: str | None = None, input_run: str | None = None) -> JSONResponse:
    """Every database step runs in the thread pool in a short transaction of its own; none is
    open while the body streams or the image loads. Refusals come before the body is read."""
    task = task_of(service, task_id)
    limit = _upload_limit(service, task)
    is_json = request.headers.get("content-type", "").startswith("application/json")
    if is_json:
        who = await run_in_threadpool(authenticate, service, request)
        raw_body = await bounded_body(request, JSON_LIMIT)
        try:
            named = NamedImageIn.model_validate_json(raw_body)
        except ValidationError as exc:
            raise HTTPException(422, f"not a named image: {exc.errors()[0].get('msg', 'invalid JSON')}",
                                headers=None) from None
        tag, command = named.tag or tag, named.command or command
        await run_in_threadpool(submissions.preflight, service, who, task_id, tag, None, limit, phase, input_run)
        image = await run_in_threadpool(submissions.image_of_reference, service, named.image, limit)
        sha = None
    else:
        who = await run_in_threadpool(_may_upload, service, request, task_id, tag, _declared_size(request), limit,
                                      phase, input_run)
        raw, sha = await _spool_upload(request, service, limit)
        # the image and the admission in one trip to the thread pool (each trip waits its turn)
        sub = await run_in_threadpool(_admit_archive, service, who, task_id, raw, sha, limit, command, tag, phase,
                                      input_run)
        return _created(service, who, sub, sha)
    sub = await run_in_threadpool(submissions.admit, service, who, task_id, image.id, image.docker_id, command, tag,
                                  phase, input_run)
    return _created(service, who, sub, sha)


def _may_upload(service: ServiceState, request: Request, task_id: str, tag: str | None, size: int | None,
                limit: int, phase: str | None, input_run: str | None) -> Any:
    """The token's team, if the pre-flight lets it send its archive now (401, 403, 409, 413, 422, 429 otherwise)."""
    who = authenticate(service, request)
    submissions.preflight(service, who, task_id, tag, size, limit, phase, input_run)
    return who


def _admit_archive(service: ServiceState, who: Any, task_id: str, raw: Path, sha: str, limit: int,
                   command: str | None, tag: str | None, phase: str | None, input_run: str | None) -> Submission:
    try:
        image = submissions.image_of_archive(service, raw, sha, limit)
    finally:
        raw.unlink(missing_ok=True)
    return submissions.admit(service, who, task_id, image.id, image.docker_id, command, tag, phase, input_run)


def _created(service: ServiceState, who: Any, sub: Submission, sha: str | None) -> JSONResponse:
    body = submissions.submission_json(sub, who.name, blind=submissions.blind_for(service, who))
    if sha is not None:
        body["archive_sha256"] = sha
    return JSONResponse(body, status_code=201)


@router.get("/submissions", tags=["submissions"], summary="Your submissions (the organizer: all)",
            response_model=list[dict[str, Any]])
async def list_submissions(request: Request, service: State, task: str | None = None) -> Response:
    # The hot GETs (this, the leaderboard, the task list) are async handlers that make one trip
    # to the thread pool for the token, the queries and the JSON. As sync handlers with sync
    # dependencies they made five or six trips per request, and under a crowd each trip waits
    # for the GIL behind the others (benchmarks/service.py).
    return await hot(_submissions_of, service, request, task)


def _answer(service: ServiceState, request: Request, key: tuple[Any, ...], build: Callable[[], Any]) -> Response:
    """``build()`` as JSON, or the same bytes kept since the last commit (:func:`common.kept`)."""
    body = kept(service, request, key, lambda: bytes(JSONResponse(build()).body))
    return Response(body, media_type="application/json")


def _submissions_of(service: ServiceState, request: Request, task: str | None) -> Response:
    if task is not None and task not in service.known_tasks:  # raw input is never a key (issue 39): not kept
        return Response(JSONResponse(_submissions_json(service, request, task)).body, media_type="application/json")
    return _answer(service, request, ("submissions", task), lambda: _submissions_json(service, request, task))


def _submissions_json(service: ServiceState, request: Request, task: str | None) -> list[dict[str, Any]]:
    with service.sessions() as session:
        who = member(request, session)
        # ORM rows: a phase's masking copies them, and a submission's phase is a relation
        query = select(Submission).order_by(Submission.id)
        if not who.organizer:
            query = query.where(Submission.team_id == who.id)
        if task:
            query = query.where(Submission.task_id == task)
        names = team_names(session) if who.organizer else {who.id: who.name}
        blind = submissions.blind_for(service, who)
        shown = phases.for_team(session, session.scalars(query), who, utcnow())  # scores a phase keeps back
        return [submissions.submission_json(s, names[s.team_id], blind=blind) for s in shown]


@router.get("/submissions/{submission_id}", tags=["submissions"])
def get_submission(submission_id: int, who: Member, session: Db, service: State) -> dict[str, Any]:
    (sub,) = phases.for_team(session, [visible(session, who, submission_id)], who, utcnow())
    return submissions.submission_json(sub, team_names(session)[sub.team_id], blind=submissions.blind_for(service, who))


@router.post("/submissions/{submission_id}/rerun", tags=["organizer"], summary="Run a submission again")
def rerun(submission_id: int, org: Organizer, session: Db, service: State) -> dict[str, Any]:
    return submissions.rerun(service, session, visible(session, org, submission_id))


@router.post("/submissions/{submission_id}/hide", tags=["organizer"],
             summary="Hide a faulty run from the leaderboard, with a reason shown to the team")
def hide(submission_id: int, body: HideIn, org: Organizer, session: Db) -> dict[str, Any]:
    return submissions.hide(session, visible(session, org, submission_id), body.reason)


@router.post("/submissions/{submission_id}/unhide", tags=["organizer"])
def unhide(submission_id: int, org: Organizer, session: Db) -> dict[str, Any]:
    return submissions.hide(session, visible(session, org, submission_id), None)


# ----------------------------------------------------------------------------- teams and tasks


@router.post("/teams", status_code=201, tags=["organizer"], summary="Create a team and its token")
def new_team(body: TeamIn, _org: Organizer, session: Db) -> dict[str, str]:
    created, token = create_team(session, body.name)
    session.commit()
    return {"team": created.name, "token": token}


@router.get("/teams", tags=["organizer"])
def list_teams(_org: Organizer, session: Db) -> list[dict[str, Any]]:
    return [{"team": t.name, "created": aware(t.created)}
            for t in session.scalars(select(Team).where(Team.organizer.is_(False)).order_by(Team.id))]


@router.get("/tasks", tags=["tasks"], summary="The tasks this server accepts submissions for",
            response_model=list[dict[str, Any]])
async def list_tasks(request: Request, service: State) -> Response:
    return await hot(_answer, service, request, ("tasks",), lambda: _tasks_json(service))


def _tasks_json(service: ServiceState) -> list[dict[str, Any]]:
    with service.sessions() as session:
        settings = all_settings(session)
        return [submissions.task_json(service, tid, settings.get(tid)) for tid in service.known_tasks]


@router.put("/tasks/{task_id}/settings", tags=["organizer"], summary="Open/close dates (UTC) and a daily limit")
def put_settings(task_id: str, body: SettingsIn, _org: Organizer, session: Db, service: State) -> dict[str, Any]:
    task_of(service, task_id)
    return submissions.put_settings(service, session, task_id, body.opens, body.closes, body.daily_limit)


@router.post("/tasks/{task_id}/publish", tags=["organizer"], summary="Make the leaderboard public")
def publish(task_id: str, _org: Organizer, session: Db, service: State) -> dict[str, Any]:
    task_of(service, task_id)
    return submissions.set_published(service, session, task_id, True)


@router.post("/tasks/{task_id}/unpublish", tags=["organizer"])
def unpublish(task_id: str, _org: Organizer, session: Db, service: State) -> dict[str, Any]:
    task_of(service, task_id)
    return submissions.set_published(service, session, task_id, False)


@router.get("/tasks/{task_id}/leaderboard", tags=["tasks"], summary="Ranked runs (public once published)",
            response_model=dict[str, Any])
async def leaderboard_json(task_id: str, request: Request, service: State, per_team: bool = Query(
        False, description="one row per team (its selected runs, else its best run), with team, "
                           "submission time and how many runs the team has on the board")) -> Response:
    task = task_of(service, task_id)
    return await hot(_answer, service, request, ("leaderboard", task_id, per_team),
                                   lambda: _leaderboard_of(service, request, task_id, task, per_team))


def _leaderboard_of(service: ServiceState, request: Request, task_id: str, task: Any,
                    per_team: bool = False) -> dict[str, Any]:
    from sharedtask.report.model import TaskSection, leaderboard
    from sharedtask.service import boards

    with service.sessions() as session:
        organizer_view = may_see_board(request, session, task_id)
        pairs = submissions.board_row_pairs(service, session, task_id, organizer_view=organizer_view)
        names = team_names(session) if per_team else {}
    extra: dict[int, dict[str, Any]] = {}  # per team: the fields a per-team row adds (the default rows stay as they were)
    if per_team:
        rows = boards.per_team(task, pairs)
        extra = {id(r.entry): {"team": names[r.team_id], "submitted": aware(r.run.created) if r.run.created else None,
                               "selected": bool(r.run.selected), "team_runs": r.runs} for r in rows}
        entries = [r.entry for r in rows]
    else:
        entries = [entry for _, entry in pairs]
    rows_json = [{"rank": rank, "run": entry.name, "status": entry.verdict, "scores": entry.scores,
                  # a re-ranker: the first stage it re-ranks, as demo's leaderboard.json names it
                  **({"input_run": entry.first_stage} if entry.first_stage else {}), **extra.get(id(entry), {})}
                 for rank, entry in leaderboard(TaskSection(task, entries))]
    return {"task": task_id, "primary": task.primary_measure.key, "runs": rows_json,
            **({"per_team": True} if per_team else {})}


@router.get("/tasks/{task_id}/archive", tags=["organizer"],
            summary="Every finished run with its record and ir_metadata, for the overview paper (.tar.gz)")
def archive(task_id: str, _org: Organizer, session: Db, service: State) -> FileResponse:
    from sharedtask.service.archive import task_archive

    return task_archive(task_id, session, service)
