"""The pages: task list, sign-in, team page, one submission, leaderboards, the organizer's overview.

Forms post ``application/x-www-form-urlencoded`` bodies, read with ``parse_qs`` (no
multipart dependency); the sign-in cookie is HttpOnly and SameSite=Strict, which also
keeps other sites from posting the organizer's forms. No ``from __future__ import
annotations`` (FastAPI reads the annotations at run time).
"""

from typing import Any
from urllib.parse import parse_qs

from starlette.concurrency import run_in_threadpool
from fastapi import APIRouter, HTTPException, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse
from sqlalchemy import select
from sqlalchemy.orm import Session

from sharedtask.service import boards, entries, phases, submissions, visibility
from sharedtask.service.models import Submission, Team, utcnow
from sharedtask.service.state import all_settings, primary_measures, task_of, team_names
from sharedtask.service.submissions import ahead_of
from sharedtask.service.teams import signin
from sharedtask.service.teams.signin import COOKIE
from sharedtask.service.teams.tokens import create_team
from sharedtask.service.web import pages, site_pages
from sharedtask.service.web.common import (Db, SettingsIn, State, kept, may_see_board, member, reader_zone,
                                           remember_zone, state, viewer, visible)

router = APIRouter(include_in_schema=False)


def html(text: str, status: int = 200) -> HTMLResponse:
    return HTMLResponse(text, status_code=status)


def signed_in(request: Request, session: Session) -> Team | HTMLResponse:
    """The viewer, or the sign-in page (401)."""
    found = viewer(request, session)
    if found is None:
        return html(pages.message_page("sign in", "Sign in with the token the organizer gave you.", login=True), 401)
    return found


def listing(session: Session, who: Team) -> list[tuple[Submission, str]]:
    names = team_names(session)
    query = select(Submission).order_by(Submission.id.desc())
    if not who.organizer:
        query = query.where(Submission.team_id == who.id)
    return [(s, names[s.team_id]) for s in phases.for_team(session, session.scalars(query), who, utcnow())]


def tasks(service: Any) -> list[Any]:
    from sharedtask.spec import load_task

    return [load_task(t) for t in service.known_tasks]


@router.get("/", response_class=HTMLResponse)
def index(request: Request, session: Db, service: State, tz: str | None = None) -> HTMLResponse:
    text = pages.task_list(tasks(service), all_settings(session), utcnow(), reader_zone(request, tz),
                           phases.calendars(session))
    return remember_zone(html(text), tz)


def login_response(token: str, session: Session, next_page: str = "") -> HTMLResponse | RedirectResponse:
    made = signin.sign_in(session, token)
    if made is None:
        return html(pages.message_page("sign in", "That token is not valid.", login=True), 401)
    found, cookie = made
    session.commit()
    # only a path on this server: "//host" or "https://..." would send the team elsewhere
    local = next_page.startswith("/") and not next_page.startswith("//") and "\\" not in next_page
    response = RedirectResponse(next_page if local else "/organizer" if found.organizer else "/team",
                                status_code=303)
    # the cookie holds a sign-in that expires and can be ended, never the token (service/teams/signin.py)
    response.set_cookie(COOKIE, cookie, max_age=int(signin.LIFETIME.total_seconds()), httponly=True,
                        samesite="strict")
    return response


@router.get("/login")
def login_link(request: Request, token: str = "", next: str = "") -> Any:  # noqa: A002 - the query's name
    # a GET that writes (the sign-in row): a writer's session, whose BEGIN takes SQLite's write
    # lock at once (db.py). A reader's session read the token first and then failed to upgrade
    # ("database is locked", HTTP 500) when another write came in between.
    with state(request).write_sessions()() as session:
        return login_response(token, session, next)


@router.post("/logout")
def logout(request: Request, session: Db) -> RedirectResponse:
    """End this browser's sign-in (the token itself stays valid)."""
    signin.sign_out(session, request.cookies.get(COOKIE))
    session.commit()
    response = RedirectResponse("/", status_code=303)
    response.delete_cookie(COOKIE)
    return response


@router.post("/login")
async def login_form(request: Request, session: Db) -> Any:
    # the body is bounded by limits.BodyLimit; the token lookup runs in the thread pool
    form = parse_qs((await request.body()).decode("utf-8", "replace"))
    return await run_in_threadpool(login_response, (form.get("token") or [""])[0], session)


@router.get("/team", response_class=HTMLResponse)
def team_page(request: Request, session: Db, service: State, tz: str | None = None) -> HTMLResponse:
    who = signed_in(request, session)
    if isinstance(who, HTMLResponse):
        return who
    subs = listing(session, who)
    ahead = ahead_of(session) if any(sub.status == "queued" for sub, _ in subs) else None
    return remember_zone(html(pages.team_page(who, subs, primary_measures(service),
                                              blind=submissions.blind_for(service, who), ahead=ahead,
                                              left=submissions.left_today(service, session, who),
                                              tz=reader_zone(request, tz))), tz)


@router.get("/submissions/{submission_id}", response_class=HTMLResponse)
def submission_page(submission_id: int, request: Request, session: Db, service: State,
                    tz: str | None = None) -> HTMLResponse:
    from sharedtask.spec import load_task

    who = signed_in(request, session)
    if isinstance(who, HTMLResponse):
        return who
    (sub,) = phases.for_team(session, [visible(session, who, submission_id)], who, utcnow())
    seen_by = (visibility.ORGANIZER if who.organizer else visibility.BLIND if submissions.blind_for(service, who)
               else visibility.TEAM)
    entry = entries.entry_of(sub, team_names(session)[sub.team_id], seen_by=seen_by)
    text = pages.report_page(load_task(sub.task_id), [entry], f"submission #{sub.id}: {entry.name} ({sub.status})",
                             zone=reader_zone(request, tz))
    queued = pages.queue_banner(sub, ahead_of(session)) if sub.status == "queued" else ""
    banner = pages.failure_banner(entry, sub) or queued
    text = pages.with_nav(text.replace("<h3>Leaderboard</h3>", "<h3>The run</h3>", 1), banner)
    if sub.status in entries.PENDING:
        text = text.replace("<head>", f'<head><meta http-equiv="refresh" content="{pages.REFRESH_SECONDS}">', 1)
    return remember_zone(html(text), tz)


@router.get("/tasks/{task_id}/leaderboard", response_class=HTMLResponse)
def leaderboard_page(task_id: str, request: Request, session: Db, service: State, tz: str | None = None,
                     every: bool = Query(False, alias="all", description="every run, not one row per team"),
                     team: str | None = Query(None, max_length=64, description="every run of this team")) -> HTMLResponse:
    """One row per team (:mod:`sharedtask.service.boards`), ``?all=1`` every run, ``?team=NAME`` a team's runs."""
    task = task_of(service, task_id)
    zone = reader_zone(request, tz)
    team_id = None if team is None else next((i for i, n in team_names(session).items() if n == team), None)
    view = "team" if team is not None else "all" if every else "teams"

    def build() -> bytes:
        organizer_view = may_see_board(request, session, task_id)  # 404 first: no team is named before
        names = team_names(session)
        if team is not None and team_id is None:
            raise HTTPException(404, f"no team {team!r} has runs on the leaderboard of {task_id}")
        pairs = submissions.board_pairs(service, session, task_id, organizer_view=organizer_view)
        if view == "teams":
            shown = [(row.entry, names[row.team_id], row.runs) for row in boards.per_team(task, pairs)]
        else:
            chosen = boards.of_team(pairs, team_id) if team_id is not None else pairs
            shown = [(entry, names[run.team_id], 0) for run, entry in chosen]
        return site_pages.task_board(task, shown, view=view, team=team, total=len(pairs),
                                     organizer_view=organizer_view, tz=zone).encode()

    key = ("leaderboard-page", task_id, view, team_id, zone.key if zone else None)  # canonical values only
    try:  # kept per viewer until the next commit or task/phase boundary (common.kept)
        body = build() if team is not None and team_id is None else kept(service, request, key, build)
    except HTTPException as exc:
        return html(pages.message_page("not published", str(exc.detail)), exc.status_code)
    return remember_zone(HTMLResponse(body), tz)


@router.get("/organizer", response_class=HTMLResponse)
def organizer_page(request: Request, session: Db, service: State, tz: str | None = None) -> HTMLResponse:
    who = signed_in(request, session)
    if isinstance(who, HTMLResponse):
        return who
    if not who.organizer:
        return html(pages.message_page("organizer only", "Only the organizer may see this page."), 403)
    teams = list(session.scalars(select(Team).order_by(Team.id)))
    zone = reader_zone(request, tz)
    text = pages.organizer_page(listing(session, who), primary_measures(service), tasks(service),
                                all_settings(session), teams, ahead=ahead_of(session), tz=zone)
    phases_html = site_pages.organizer_phases(session, tasks(service), utcnow(), zone)
    return remember_zone(html(text.replace("</main>", phases_html + "</main>", 1)), tz)


async def organizer_form(request: Request, session: Session) -> tuple[Team, dict[str, list[str]]]:
    who = member(request, session)
    if not who.organizer:
        raise HTTPException(403, "only the organizer may do this")
    return who, parse_qs((await request.body()).decode("utf-8", "replace"))


@router.post("/organizer/tasks/{task_id}/{action}")
async def organizer_task_action(task_id: str, action: str, request: Request, session: Db, service: State) -> Any:
    _org, form = await organizer_form(request, session)
    task_of(service, task_id)
    if action == "settings":
        def field(name: str) -> str | None:
            return (form.get(name) or [""])[0].strip() or None

        try:
            body = SettingsIn(opens=field("opens"), closes=field("closes"), daily_limit=field("daily_limit"))
        except ValueError as exc:
            raise HTTPException(422, f"invalid settings: {str(exc).splitlines()[0]}") from None
        submissions.put_settings(service, session, task_id, body.opens, body.closes, body.daily_limit)
    elif action in ("publish", "unpublish"):
        submissions.set_published(service, session, task_id, action == "publish")
    else:
        raise HTTPException(404, f"no action {action!r}")
    return RedirectResponse("/organizer", status_code=303)


@router.post("/organizer/submissions/{submission_id}/{action}")
async def organizer_submission_action(submission_id: int, action: str, request: Request, session: Db,
                                      service: State) -> Any:
    org, form = await organizer_form(request, session)
    sub = visible(session, org, submission_id)
    if action == "rerun":
        submissions.rerun(service, session, sub)
    elif action == "hide":
        submissions.hide(session, sub, (form.get("reason") or ["hidden by the organizer"])[0][:500])
    else:
        raise HTTPException(404, f"no action {action!r}")
    return RedirectResponse("/organizer", status_code=303)


@router.post("/organizer/teams")
async def organizer_new_team(request: Request, session: Db) -> HTMLResponse:
    _org, form = await organizer_form(request, session)
    created, token = create_team(session, (form.get("name") or [""])[0])
    session.commit()
    return html(pages.message_page(f"team {created.name} created",
                                   f"Give this token to {created.name} (it is shown only once): {token}"))
