"""Routes of the site's pages beyond submissions (see :mod:`sharedtask.service.web.site_pages`): a task's
page, a phase's leaderboard, the organizer's phase form and a team's selection of final runs.

No ``from __future__ import annotations`` (FastAPI reads the annotations at run time).
"""

from typing import Any
from urllib.parse import parse_qs

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import HTMLResponse, RedirectResponse

from sharedtask.service import phases, selection
from sharedtask.service.state import naive_utc, settings_of, task_of, team_names
from sharedtask.service.models import utcnow
from sharedtask.service.web import pages, site_pages
from sharedtask.service.web.common import (Db, PhaseIn, State, kept, member, phase_board, reader_zone,
                                           remember_zone, viewer)

router = APIRouter(include_in_schema=False)


@router.get("/tasks/{task_id}", response_class=HTMLResponse)
def task_page(task_id: str, request: Request, session: Db, service: State, tz: str | None = None) -> HTMLResponse:
    task = task_of(service, task_id)
    from sharedtask.service.stages import stages_of

    text = site_pages.task_page(task, settings_of(session, task_id), phases.phases_of(session, task_id), utcnow(),
                                reader_zone(request, tz), stages_of(session, task_id),
                                server=str(request.base_url).rstrip("/"))  # escaped where it is shown
    return remember_zone(HTMLResponse(text), tz)


@router.get("/tasks/{task_id}/phases/{name}/leaderboard", response_class=HTMLResponse)
def phase_board_page(task_id: str, name: str, request: Request, session: Db, service: State,
                     tz: str | None = None) -> HTMLResponse:
    def build() -> bytes:
        task, phase, rows = phase_board(task_id, name, request, session, service)
        who = viewer(request, session)
        return site_pages.board_page(task, phase, rows, team_names(session), bool(who and who.organizer),
                                     zone).encode()

    zone = reader_zone(request, tz)  # the validated zone, never the raw ?tz= (issue 39)
    try:  # kept per viewer and time zone until the next commit or phase boundary (common.kept)
        body = kept(service, request, ("phase-board-page", task_id, name, zone.key if zone else None), build)
    except HTTPException as exc:  # a 404 that says when the board opens, if it will; never a score
        return remember_zone(HTMLResponse(_closed_board(task_id, name, session, zone, str(exc.detail)),
                                          exc.status_code), tz)
    return remember_zone(HTMLResponse(body), tz)


def _closed_board(task_id: str, name: str, session: Any, zone: Any, detail: str) -> str:
    try:
        phase = phases.named(session, task_id, name)
    except HTTPException:  # no such task or phase: the refusal's own words
        return pages.message_page("not public", detail)
    return site_pages.closed_board_page(task_id, phase, utcnow(), zone)


@router.post("/organizer/tasks/{task_id}/phases")
async def organizer_phase(task_id: str, request: Request, session: Db, service: State) -> Any:
    from pydantic import ValidationError


    who = member(request, session)
    if not who.organizer:
        raise HTTPException(403, "only the organizer may do this")
    task = task_of(service, task_id)
    form = parse_qs((await request.body()).decode("utf-8", "replace"))

    def field(key: str) -> str | None:
        return (form.get(key) or [""])[0].strip() or None

    try:
        body = PhaseIn(dataset=field("dataset") or "", opens=field("opens"), closes=field("closes"),
                       daily_limit=field("daily_limit"), total_limit=field("total_limit"),
                       max_selected=field("max_selected"), scores_visible=bool(field("scores_visible")),
                       leaderboard_public=bool(field("leaderboard_public")))
    except ValidationError as exc:
        raise HTTPException(422, f"invalid phase: {str(exc).splitlines()[0]}") from None
    values = body.model_dump()
    values["opens"], values["closes"] = naive_utc(body.opens), naive_utc(body.closes)
    phases.put_phase(session, task, field("name") or "", values, phases.manifest_of(service))
    return RedirectResponse("/organizer", status_code=303)


@router.post("/submissions/{submission_id}/{action}")
def select_form(submission_id: int, action: str, request: Request, session: Db) -> Any:
    if action not in ("select", "unselect"):
        raise HTTPException(404, f"no action {action!r}")
    selection.set_selected(session, member(request, session), submission_id, action == "select")
    return RedirectResponse("/team", status_code=303)
