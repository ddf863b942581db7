"""The HTTP application: the JSON API (documented at ``/openapi.json``) and the pages.

Who may see what: a request without a valid token gets 401; a team asking for
another team's submission gets 404, exactly as for one that does not exist (no
existence leak); an organizer-only action by a team gets 403. Leaderboards are
public once the organizer publishes them.

No ``from __future__ import annotations`` here: FastAPI reads the dependency
annotations (``Member``, ``Db``) at run time, and they are local to :func:`create_app`.
"""


import datetime as dt
import io
import json
import secrets
import tarfile
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Iterator
from urllib.parse import parse_qs

from fastapi import Depends, FastAPI, HTTPException, Request
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse, RedirectResponse
from pydantic import BaseModel, Field
from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker
from starlette.concurrency import run_in_threadpool
from starlette.requests import ClientDisconnect

from sharedtask.errors import SharedTaskError
from sharedtask.service import pages
from sharedtask.service.executor import Executor, resume
from sharedtask.service.models import Image, Submission, TaskSettings, Team, utcnow
from sharedtask.service.tokens import TEAM_NAME, create_team, team_of
from sharedtask.service.uploads import Spool, UploadError, clean_archive, load_archive, named_image
from sharedtask.units import parse_size

COOKIE = "sharedtask_token"
TAG = TEAM_NAME


@dataclass
class ServiceConfig:
    """What ``sharedtask serve`` decided: where files go and the organizer's defaults."""

    data_dir: Path
    max_upload: int = 10 * 1024**3
    daily_limit: int | None = None
    allow_local_images: bool = False
    task_ids: list[str] = field(default_factory=list)


# ----------------------------------------------------------------------------- request models


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


# ----------------------------------------------------------------------------- helpers


def _naive_utc(value: dt.datetime | None) -> dt.datetime | None:
    if value is None or value.tzinfo is None:
        return value
    return value.astimezone(dt.timezone.utc).replace(tzinfo=None)


def submission_json(sub: Submission, team: str) -> dict[str, Any]:
    return {
        "id": sub.id, "team": team, "task": sub.task_id, "tag": sub.tag, "image": sub.image_name,
        "command": sub.command, "status": sub.status, "attempts": sub.attempts, "run_status": sub.run_status,
        "valid": sub.valid, "scores": sub.scores, "notes": sub.notes or [], "hidden": sub.hidden_reason,
        "created": sub.created.isoformat() if sub.created else None,
        "finished": sub.finished.isoformat() if sub.finished else None,
        "validation": (sub.record or {}).get("validation"), "record": sub.record,
    }


def create_app(sessions: sessionmaker[Session], executor: Executor, config: ServiceConfig) -> FastAPI:
    """The app over a migrated database; queued and interrupted submissions are resumed on start-up."""
    from contextlib import asynccontextmanager

    from sharedtask.spec import load_task, task_ids

    known_tasks = config.task_ids or task_ids()

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> Any:
        resume(sessions, executor)
        yield
        executor.shutdown()

    app = FastAPI(title="sharedtask submission service", lifespan=lifespan, docs_url=None, redoc_url=None,
                  description="Teams submit images; the server runs them sandboxed on the hidden data, validates "
                              "and scores them; organizers publish leaderboards.")

    @app.exception_handler(UploadError)
    async def _upload_error(_request: Request, exc: UploadError) -> JSONResponse:
        return JSONResponse({"detail": str(exc)}, status_code=exc.status)

    @app.exception_handler(SharedTaskError)
    async def _user_error(_request: Request, exc: SharedTaskError) -> JSONResponse:
        return JSONResponse({"detail": str(exc)}, status_code=400)

    def db() -> Iterator[Session]:
        with sessions() as session:
            yield session

    Db = Annotated[Session, Depends(db)]

    def token_of(request: Request) -> str | None:
        header = request.headers.get("authorization", "")
        if header.lower().startswith("bearer "):
            return header[7:].strip()
        return request.cookies.get(COOKIE)

    def who(request: Request, session: Db) -> Team | None:
        return team_of(session, token_of(request))

    def team(request: Request, session: Db) -> Team:
        found = who(request, session)
        if found is None:
            raise HTTPException(401, "a valid token is needed (Authorization: Bearer TOKEN)",
                                headers={"WWW-Authenticate": "Bearer"})
        return found

    def organizer(member: Annotated[Team, Depends(team)]) -> Team:
        if not member.organizer:
            raise HTTPException(403, "only the organizer may do this")
        return member

    Member = Annotated[Team, Depends(team)]
    Organizer = Annotated[Team, Depends(organizer)]

    def task_of(task_id: str) -> Any:
        if task_id not in known_tasks:
            raise HTTPException(404, f"no task {task_id!r} on this server")
        return load_task(task_id)

    def settings_of(session: Session, task_id: str) -> TaskSettings:
        found = session.scalar(select(TaskSettings).where(TaskSettings.task_id == task_id))
        if found is None:
            found = TaskSettings(task_id=task_id, published=False)
            session.add(found)
            session.flush()
        return found

    def all_settings(session: Session) -> dict[str, TaskSettings]:
        return {s.task_id: s for s in session.scalars(select(TaskSettings))}

    def visible(session: Session, member: Team, submission_id: int) -> Submission:
        sub = session.get(Submission, submission_id)
        if sub is None or (not member.organizer and sub.team_id != member.id):
            raise HTTPException(404, f"no submission {submission_id}")
        return sub

    def team_names(session: Session) -> dict[int, str]:
        return {t.id: t.name for t in session.scalars(select(Team))}

    def primary_measures() -> dict[str, str]:
        return {tid: load_task(tid).primary_measure.key for tid in known_tasks}

    # ------------------------------------------------------------------ submissions

    def check_open(session: Session, member: Team, task_id: str) -> None:
        s = settings_of(session, task_id)
        now = utcnow()
        if s.opens and now < s.opens:
            raise HTTPException(403, f"task {task_id} opens for submissions at {s.opens.isoformat()} UTC")
        if s.closes and now >= s.closes:
            raise HTTPException(403, f"task {task_id} closed for submissions at {s.closes.isoformat()} UTC")
        limit = s.daily_limit or config.daily_limit
        if limit and not member.organizer:
            day = now.replace(hour=0, minute=0, second=0, microsecond=0)
            count = session.scalar(select(func.count(Submission.id)).where(
                Submission.team_id == member.id, Submission.task_id == task_id, Submission.created >= day))
            if count >= limit:
                raise HTTPException(429, f"{member.name} has made its {limit} submission(s) to {task_id} today "
                                         "(the limit resets at 00:00 UTC)")

    def tag_of(tag: str | None, session: Session, member: Team) -> str:
        if tag is None:
            n = session.scalar(select(func.count(Submission.id)).where(Submission.team_id == member.id))
            return f"run{n + 1}"
        if not TAG.match(tag):
            raise HTTPException(422, f"invalid tag {tag[:80]!r}: use 1-64 letters, digits, '.', '_' or '-'")
        return tag

    def queue(session: Session, member: Team, task_id: str, image: Image, name: str, command: str | None,
              tag: str) -> Submission:
        sub = Submission(team_id=member.id, task_id=task_id, image_id=image.id, image_name=name, tag=tag,
                         command=command, status="queued", attempts=0, notes=[])
        session.add(sub)
        session.commit()
        executor.enqueue(sub.id)
        return sub

    @app.post("/api/tasks/{task_id}/submissions", status_code=201, tags=["submissions"],
              summary="Submit an image: a `docker save` archive as the body (application/x-tar), or JSON naming "
                      "an image in a registry")
    async def submit(task_id: str, request: Request, member: Member, session: Db,
                     command: str | None = None, tag: str | None = None) -> JSONResponse:
        task = task_of(task_id)
        limit = min(config.max_upload, parse_size(task.sandbox.max_image))
        check_open(session, member, task_id)
        if request.headers.get("content-type", "").startswith("application/json"):
            named = NamedImageIn.model_validate_json(await request.body())
            run_tag = tag_of(named.tag or tag, session, member)
            loaded = await run_in_threadpool(named_image, named.image, limit, allow_local=config.allow_local_images)
            image = session.scalar(select(Image).where(Image.docker_id == loaded.docker_id,
                                                       Image.reference == named.image))
            if image is None:
                image = Image(reference=None, docker_id=loaded.docker_id, size=loaded.size)
                session.add(image)
                session.flush()
            sub = queue(session, member, task_id, image, loaded.docker_id, named.command or command, run_tag)
            return JSONResponse(submission_json(sub, member.name), status_code=201)
        run_tag = tag_of(tag, session, member)
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            raise UploadError(413, f"the image archive ({declared} bytes) is larger than the limit of {limit} bytes",
                              hint="make the image smaller")
        uploads = config.data_dir / "uploads"
        uploads.mkdir(parents=True, exist_ok=True)
        raw = uploads / f"{secrets.token_hex(8)}.tar"
        spool = Spool(raw, limit)
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
        clean = raw.with_suffix(".clean.tar")
        try:
            expected = request.headers.get("x-image-sha256")
            if expected and expected.lower() != sha:
                raise UploadError(400, f"the archive's sha256 is {sha}, not {expected} as announced: "
                                       "the upload was damaged or cut; nothing was stored")
            if spool.size == 0:
                raise UploadError(400, "the upload is empty", hint="send the output of `docker save IMAGE`")
            image = session.scalar(select(Image).where(Image.archive_sha256 == sha))
            if image is None:
                await run_in_threadpool(clean_archive, raw, clean)
                loaded = await run_in_threadpool(load_archive, clean, limit, sha)
                image = Image(archive_sha256=sha, docker_id=loaded.docker_id, size=loaded.size)
                session.add(image)
                session.flush()
        finally:
            raw.unlink(missing_ok=True)
            clean.unlink(missing_ok=True)
        sub = queue(session, member, task_id, image, image.docker_id, command, run_tag)
        body = submission_json(sub, member.name)
        body["archive_sha256"] = sha
        return JSONResponse(body, status_code=201)

    @app.get("/api/submissions", tags=["submissions"], summary="Your submissions (the organizer: all)")
    def list_submissions(member: Member, session: Db, task: str | None = None) -> list[dict[str, Any]]:
        query = select(Submission).order_by(Submission.id)
        if not member.organizer:
            query = query.where(Submission.team_id == member.id)
        if task:
            query = query.where(Submission.task_id == task)
        names = team_names(session)
        return [submission_json(s, names[s.team_id]) for s in session.scalars(query)]

    @app.get("/api/submissions/{submission_id}", tags=["submissions"])
    def get_submission(submission_id: int, member: Member, session: Db) -> dict[str, Any]:
        sub = visible(session, member, submission_id)
        return submission_json(sub, team_names(session)[sub.team_id])

    @app.post("/api/submissions/{submission_id}/rerun", tags=["organizer"], summary="Run a submission again")
    def rerun(submission_id: int, _org: Organizer, session: Db) -> dict[str, Any]:
        sub = visible(session, _org, submission_id)
        if sub.status in pages.PENDING:
            raise HTTPException(409, f"submission {submission_id} is {sub.status} already")
        sub.status, sub.scores, sub.per_topic, sub.valid, sub.run_status = "queued", None, None, None, None
        sub.notes = [*(sub.notes or []), f"re-run by the organizer at {utcnow().replace(microsecond=0).isoformat()}"]
        session.commit()
        executor.enqueue(sub.id)
        return submission_json(sub, team_names(session)[sub.team_id])

    @app.post("/api/submissions/{submission_id}/hide", tags=["organizer"],
              summary="Hide a faulty run from the leaderboard, with a reason shown to the team")
    def hide(submission_id: int, body: HideIn, _org: Organizer, session: Db) -> dict[str, Any]:
        sub = visible(session, _org, submission_id)
        sub.hidden_reason = body.reason
        session.commit()
        return submission_json(sub, team_names(session)[sub.team_id])

    @app.post("/api/submissions/{submission_id}/unhide", tags=["organizer"])
    def unhide(submission_id: int, _org: Organizer, session: Db) -> dict[str, Any]:
        sub = visible(session, _org, submission_id)
        sub.hidden_reason = None
        session.commit()
        return submission_json(sub, team_names(session)[sub.team_id])

    # ------------------------------------------------------------------ teams and tasks

    @app.post("/api/teams", status_code=201, tags=["organizer"], summary="Create a team and its token")
    def new_team(body: TeamIn, _org: Organizer, session: Db) -> dict[str, str]:
        created, token = create_team(session, body.name)
        session.commit()
        return {"team": created.name, "token": token}

    @app.get("/api/teams", tags=["organizer"])
    def list_teams(_org: Organizer, session: Db) -> list[dict[str, Any]]:
        return [{"team": t.name, "created": t.created.isoformat()}
                for t in session.scalars(select(Team).where(Team.organizer.is_(False)).order_by(Team.id))]

    def task_json(task_id: str, s: TaskSettings | None) -> dict[str, Any]:
        return {"task": task_id, "published": bool(s and s.published),
                "opens": s.opens.isoformat() if s and s.opens else None,
                "closes": s.closes.isoformat() if s and s.closes else None,
                "daily_limit": (s.daily_limit if s else None) or config.daily_limit}

    @app.get("/api/tasks", tags=["tasks"], summary="The tasks this server accepts submissions for")
    def list_tasks(session: Db) -> list[dict[str, Any]]:
        settings = all_settings(session)
        return [task_json(tid, settings.get(tid)) for tid in known_tasks]

    @app.put("/api/tasks/{task_id}/settings", tags=["organizer"], summary="Open/close dates and a daily limit")
    def put_settings(task_id: str, body: SettingsIn, _org: Organizer, session: Db) -> dict[str, Any]:
        task_of(task_id)
        s = settings_of(session, task_id)
        s.opens, s.closes, s.daily_limit = _naive_utc(body.opens), _naive_utc(body.closes), body.daily_limit
        session.commit()
        return task_json(task_id, s)

    def set_published(task_id: str, value: bool, session: Session) -> dict[str, Any]:
        task_of(task_id)
        s = settings_of(session, task_id)
        s.published = value
        session.commit()
        return task_json(task_id, s)

    @app.post("/api/tasks/{task_id}/publish", tags=["organizer"], summary="Make the leaderboard public")
    def publish(task_id: str, _org: Organizer, session: Db) -> dict[str, Any]:
        return set_published(task_id, True, session)

    @app.post("/api/tasks/{task_id}/unpublish", tags=["organizer"])
    def unpublish(task_id: str, _org: Organizer, session: Db) -> dict[str, Any]:
        return set_published(task_id, False, session)

    def board_entries(session: Session, task_id: str, *, organizer_view: bool) -> list[Any]:
        names = team_names(session)
        subs = session.scalars(select(Submission).where(Submission.task_id == task_id,
                                                         Submission.status.in_(("done", "failed")))
                               .order_by(Submission.id))
        return [pages.entry_of(s, names[s.team_id]) for s in subs if organizer_view or not s.hidden_reason]

    def may_see_board(request: Request, session: Session, task_id: str) -> bool:
        """Published boards are public; the organizer sees every board; otherwise 404."""
        viewer = who(request, session)
        if viewer is not None and viewer.organizer:
            return True
        s = session.scalar(select(TaskSettings).where(TaskSettings.task_id == task_id))
        if s is None or not s.published:
            raise HTTPException(404, f"the leaderboard of {task_id} is not published")
        return False

    @app.get("/api/tasks/{task_id}/leaderboard", tags=["tasks"], summary="Ranked runs (public once published)")
    def leaderboard_json(task_id: str, request: Request, session: Db) -> dict[str, Any]:
        from sharedtask.report.model import TaskSection, leaderboard

        task = task_of(task_id)
        organizer_view = may_see_board(request, session, task_id)
        entries = board_entries(session, task_id, organizer_view=organizer_view)
        rows = [{"rank": rank, "run": entry.name, "status": entry.verdict, "scores": entry.scores}
                for rank, entry in leaderboard(TaskSection(task, entries))]
        return {"task": task_id, "primary": task.primary_measure.key, "runs": rows}

    @app.get("/api/tasks/{task_id}/archive", tags=["organizer"],
             summary="Every finished run with its record and ir_metadata, for the overview paper (.tar.gz)")
    def archive(task_id: str, _org: Organizer, session: Db) -> FileResponse:
        task_of(task_id)
        names = team_names(session)
        subs = list(session.scalars(select(Submission).where(Submission.task_id == task_id,
                                                              Submission.run_dir.is_not(None))
                                    .order_by(Submission.id)))
        fd, tmp = tempfile.mkstemp(prefix="archive-", suffix=".tar.gz", dir=config.data_dir)
        with open(fd, "wb") as raw, tarfile.open(fileobj=raw, mode="w:gz") as tar:
            index = []
            for sub in subs:
                folder = f"{task_id}/{names[sub.team_id]}/{sub.id}-{sub.tag}"
                index.append({**submission_json(sub, names[sub.team_id]), "folder": folder})
                run_dir = Path(sub.run_dir or "")
                for name in ("output/run.txt", "run-record.json", "ir-metadata.yml"):
                    path = run_dir / name
                    # run.txt came out of a container: added only as a regular file, never via a link
                    if path.is_file() and not path.is_symlink():
                        tar.add(path, arcname=f"{folder}/{Path(name).name}", recursive=False)
            data = json.dumps(index, indent=2, default=str).encode("utf-8")
            info = tarfile.TarInfo(f"{task_id}/submissions.json")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        from starlette.background import BackgroundTask

        return FileResponse(tmp, media_type="application/gzip", filename=f"{task_id}-runs.tar.gz",
                            background=BackgroundTask(lambda: Path(tmp).unlink(missing_ok=True)))

    # ------------------------------------------------------------------ pages

    def html(text: str, status: int = 200) -> HTMLResponse:
        return HTMLResponse(text, status_code=status)

    def page_member(request: Request, session: Session) -> Team | HTMLResponse:
        found = who(request, session)
        if found is None:
            return html(pages.message_page("sign in", "Sign in with the token the organizer gave you.",
                                           login=True), 401)
        return found

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    def index(session: Db) -> HTMLResponse:
        return html(pages.task_list([load_task(t) for t in known_tasks], all_settings(session), utcnow()))

    def login_response(token: str, session: Session, next_page: str = "") -> HTMLResponse | RedirectResponse:
        found = team_of(session, token)
        if found is None:
            return html(pages.message_page("sign in", "That token is not valid.", login=True), 401)
        # only a path on this server: "//host" or "https://..." would send the team elsewhere
        local = next_page.startswith("/") and not next_page.startswith("//") and "\\" not in next_page
        response = RedirectResponse(next_page if local else "/organizer" if found.organizer else "/team",
                                    status_code=303)
        response.set_cookie(COOKIE, token, httponly=True, samesite="strict")
        return response

    @app.get("/login", include_in_schema=False)
    def login_link(session: Db, token: str = "", next: str = "") -> Any:  # noqa: A002 - the query's name
        return login_response(token, session, next)

    @app.post("/login", include_in_schema=False)
    async def login_form(request: Request, session: Db) -> Any:
        form = parse_qs((await request.body()).decode("utf-8", "replace"))
        return login_response((form.get("token") or [""])[0], session)

    def listing(session: Session, member: Team) -> list[tuple[Submission, str]]:
        names = team_names(session)
        query = select(Submission).order_by(Submission.id.desc())
        if not member.organizer:
            query = query.where(Submission.team_id == member.id)
        return [(s, names[s.team_id]) for s in session.scalars(query)]

    @app.get("/team", response_class=HTMLResponse, include_in_schema=False)
    def team_page(request: Request, session: Db) -> HTMLResponse:
        member = page_member(request, session)
        if isinstance(member, HTMLResponse):
            return member
        return html(pages.team_page(member, listing(session, member), primary_measures()))

    @app.get("/submissions/{submission_id}", response_class=HTMLResponse, include_in_schema=False)
    def submission_page(submission_id: int, request: Request, session: Db) -> HTMLResponse:
        member = page_member(request, session)
        if isinstance(member, HTMLResponse):
            return member
        sub = visible(session, member, submission_id)
        entry = pages.entry_of(sub, team_names(session)[sub.team_id])
        text = pages.report_page(load_task(sub.task_id), [entry], f"submission #{sub.id}: {entry.name} ({sub.status})")
        if sub.status in pages.PENDING:
            text = text.replace("<head>", f'<head><meta http-equiv="refresh" content="{pages.REFRESH_SECONDS}">', 1)
        return html(text)

    @app.get("/tasks/{task_id}/leaderboard", response_class=HTMLResponse, include_in_schema=False)
    def leaderboard_page(task_id: str, request: Request, session: Db) -> HTMLResponse:
        task = task_of(task_id)
        try:
            organizer_view = may_see_board(request, session, task_id)
        except HTTPException as exc:
            return html(pages.message_page("not published", str(exc.detail)), exc.status_code)
        entries = board_entries(session, task_id, organizer_view=organizer_view)
        title = f"{task_id}: leaderboard" + ("" if not organizer_view else " (organizer view)")
        return html(pages.report_page(task, entries, title))

    @app.get("/organizer", response_class=HTMLResponse, include_in_schema=False)
    def organizer_page(request: Request, session: Db) -> HTMLResponse:
        member = page_member(request, session)
        if isinstance(member, HTMLResponse):
            return member
        if not member.organizer:
            return html(pages.message_page("organizer only", "Only the organizer may see this page."), 403)
        teams = list(session.scalars(select(Team).order_by(Team.id)))
        return html(pages.organizer_page(listing(session, member), primary_measures(),
                                         [load_task(t) for t in known_tasks], all_settings(session), teams))

    async def organizer_form(request: Request, session: Session) -> tuple[Team, dict[str, list[str]]]:
        member = team(request, session)
        if not member.organizer:
            raise HTTPException(403, "only the organizer may do this")
        return member, parse_qs((await request.body()).decode("utf-8", "replace"))

    @app.post("/organizer/tasks/{task_id}/{action}", include_in_schema=False)
    async def organizer_task_action(task_id: str, action: str, request: Request, session: Db) -> Any:
        org, form = await organizer_form(request, session)
        if action == "settings":
            def field(name: str) -> str | None:
                return (form.get(name) or [""])[0].strip() or None

            try:
                body = SettingsIn(opens=field("opens"), closes=field("closes"), daily_limit=field("daily_limit"))
            except ValueError as exc:
                raise HTTPException(422, f"invalid settings: {str(exc).splitlines()[0]}") from None
            put_settings(task_id, body, org, session)
        elif action in ("publish", "unpublish"):
            set_published(task_id, action == "publish", session)
        else:
            raise HTTPException(404, f"no action {action!r}")
        return RedirectResponse("/organizer", status_code=303)

    @app.post("/organizer/submissions/{submission_id}/{action}", include_in_schema=False)
    async def organizer_submission_action(submission_id: int, action: str, request: Request, session: Db) -> Any:
        org, form = await organizer_form(request, session)
        if action == "rerun":
            rerun(submission_id, org, session)
        elif action == "hide":
            hide(submission_id, HideIn(reason=(form.get("reason") or ["hidden by the organizer"])[0][:500]),
                 org, session)
        else:
            raise HTTPException(404, f"no action {action!r}")
        return RedirectResponse("/organizer", status_code=303)

    @app.post("/organizer/teams", include_in_schema=False)
    async def organizer_new_team(request: Request, session: Db) -> HTMLResponse:
        _org, form = await organizer_form(request, session)
        created, token = create_team(session, (form.get("name") or [""])[0])
        session.commit()
        return html(pages.message_page(f"team {created.name} created",
                                       f"Give this token to {created.name} (it is shown only once): {token}"))

    return app
