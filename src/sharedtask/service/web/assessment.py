"""Assessment routes: run kinds (teams), pools and campaigns (the organizer), judging (assessors).

Three roles, three kinds of credential: a team's token or sign-in reaches the team routes, the
organizer's the organizer routes, an assessor's (``serve --new-assessor``; cookie
``sharedtask_assessor``) only the ``/assess`` pages and ``/api/assess`` routes. Pools, campaigns
and judgments are the organizer's until the organizer publishes a campaign's qrels.

No ``from __future__ import annotations``: FastAPI reads the annotations at run time. Handlers
are plain functions (FastAPI runs them in its thread pool); each makes its own short sessions.
"""

from importlib.resources import files
from typing import Any
from urllib.parse import parse_qs, quote

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response
from pydantic import BaseModel, Field
from sqlalchemy import select
from starlette.concurrency import run_in_threadpool

from sharedtask.errors import SharedTaskError
from sharedtask.service.state import ServiceState, task_of, team_names
from sharedtask.service.web.common import Db, Member, Organizer, State, authenticate, hot, state
from sharedtask.service.assessment import campaigns, people, runs
from sharedtask.service.assessment.scale import scales_of
from sharedtask.service.models import Assessor, Campaign, PoolRow, Submission
from sharedtask.service.web import assessment_pages as view

router = APIRouter()


class KindIn(BaseModel):
    kind: str = Field(description="primary or alternate")


class PoolIn(BaseModel):
    depths: dict[str, int] | None = Field(default=None, description="depth per run kind, e.g. {\"primary\": 45}")
    seed: int | None = Field(default=None, description="seed of the order items are shown in")


class CampaignIn(BaseModel):
    pool: int
    assignments: dict[str, str] = Field(description="topic -> the assessor who judges all its items")
    double_share: float = Field(default=0.0, ge=0, le=1, description="share of each topic's items judged twice")
    seed: int = 0


class JudgmentIn(BaseModel):
    topic: str = Field(max_length=100)
    item: str = Field(max_length=200)
    grade: int
    quality: int | None = None


def _user(exc: SharedTaskError) -> HTTPException:
    return HTTPException(422, str(exc))


def _organizer(service: ServiceState, request: Request) -> None:
    """The organizer, checked in a short session of its own. Why not the ``Organizer`` dependency:
    on a POST its session is a writer's, and on SQLite it would hold the write lock for the whole
    request, while pooling and opening a campaign write in sessions of their own."""
    if not authenticate(service, request).organizer:
        raise HTTPException(403, "only the organizer may do this")


# ----------------------------------------------------------------------------- assessors


def _finder(request: Request) -> Any:
    """The asker as an assessor, looked up in a given session: ``Authorization: Bearer`` (an
    assessor's token), else the assessor's sign-in cookie. A team's or the organizer's
    credential is no assessor's."""
    header = request.headers.get("authorization", "")
    if header.lower().startswith("bearer "):
        token = header[7:].strip()
        return lambda session: people.assessor_of_token(session, token)
    cookie = request.cookies.get(people.COOKIE)
    return lambda session: people.assessor_of_cookie(session, cookie)


def _assessor(service: ServiceState, request: Request) -> Assessor | None:
    with service.sessions() as session:
        found = _finder(request)(session)
        session.commit()
    return found


def _require_assessor(service: ServiceState, request: Request) -> Assessor:
    found = _assessor(service, request)
    if found is None:
        raise HTTPException(401, "an assessor's token is needed (Authorization: Bearer TOKEN)",
                            headers={"WWW-Authenticate": "Bearer"})
    return found


@router.get("/api/assess/topics", tags=["assessment"], summary="Your topics in open campaigns, with progress")
def my_topics(request: Request, service: State) -> list[dict[str, Any]]:
    who = _require_assessor(service, request)
    with service.sessions() as session:
        return campaigns.assigned_to(session, who.id)


@router.get("/api/assess/campaigns/{campaign_id}/topics/{topic}", tags=["assessment"],
            summary="One of your topics: its items in display order and your judgments so far")
def my_topic(campaign_id: int, topic: str, request: Request, service: State) -> dict[str, Any]:
    who = _require_assessor(service, request)
    with service.sessions() as session:
        rows = campaigns.topic_rows(session, who.id, campaign_id, topic)
    return {"campaign": campaign_id, "topic": topic,
            "items": [{"item": r.item, "grade": r.grade, "quality": r.quality} for r in rows]}


@router.post("/api/assess/campaigns/{campaign_id}/judgments", tags=["assessment"],
             summary="Save or change one of your judgments (until the campaign closes)")
async def judge(campaign_id: int, body: JudgmentIn, request: Request, service: State) -> dict[str, Any]:
    """One trip to the few threads of the hot requests (``common.hot``, as the boards' GETs): under a
    crowd of assessors, a few threads taking turns at the GIL answer sooner than forty
    (benchmarks/assessment.py)."""

    def work() -> dict[str, Any]:
        try:  # the assessor is found in the save's own transaction: one per save
            return campaigns.save(service, _finder(request), campaign_id, body.topic, body.item, body.grade,
                                  body.quality)
        except SharedTaskError as exc:
            raise _user(exc) from None


    return await hot(lambda _service: work(), service)


def _secured(response: Response) -> Response:
    response.headers["Content-Security-Policy"] = view.CSP
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Referrer-Policy"] = "no-referrer"
    return response


def _page(text: str, status: int = 200) -> Response:
    return _secured(HTMLResponse(text, status_code=status))


def _login(service: ServiceState, token: str, next_page: str) -> Response:
    with service.write_sessions()() as session:
        made = people.sign_in(session, token)
        if made is None:
            return _page(view.sign_in_page("That is not an assessor's token."), 401)
        session.commit()
    local = next_page.startswith("/assess") and not next_page.startswith("//") and "\\" not in next_page
    response = RedirectResponse(next_page if local else "/assess", status_code=303)
    response.set_cookie(people.COOKIE, made[1], max_age=int(people.LIFETIME.total_seconds()), httponly=True,
                        samesite="strict", path="/")
    return response


@router.get("/assess/login", include_in_schema=False)
def login_link(request: Request, token: str = "", next: str = "") -> Response:  # noqa: A002 - the query's name
    return _login(state(request), token, next)


@router.post("/assess/login", include_in_schema=False)
async def login_form(request: Request) -> Response:
    form = parse_qs((await request.body()).decode("utf-8", "replace"))
    return await run_in_threadpool(_login, state(request), (form.get("token") or [""])[0], "")


@router.post("/assess/logout", include_in_schema=False)
def logout(request: Request, service: State) -> Response:
    with service.write_sessions()() as session:
        people.sign_out(session, request.cookies.get(people.COOKIE))
        session.commit()
    response = RedirectResponse("/assess/login", status_code=303)
    response.delete_cookie(people.COOKIE, path="/")
    return response


@router.get("/assess/static/assess.js", include_in_schema=False)
def script() -> Response:
    text = files("sharedtask.service.web").joinpath("static/assess.js").read_text(encoding="utf-8")
    return Response(text, media_type="text/javascript", headers={"Cache-Control": "max-age=300"})


@router.get("/assess", include_in_schema=False)
def topics_page(request: Request, service: State) -> Response:
    who = _assessor(service, request)
    if who is None:
        return _page(view.sign_in_page("Sign in with the token the organizer gave you."), 401)
    with service.sessions() as session:
        rows = campaigns.assigned_to(session, who.id)
    return _page(view.topics_page(who.name, rows))


@router.get("/assess/campaigns/{campaign_id}/topics/{topic}", include_in_schema=False)
def judging_page(campaign_id: int, topic: str, request: Request, service: State) -> Response:
    who = _assessor(service, request)
    if who is None:
        return _page(view.sign_in_page("Sign in with the token the organizer gave you."), 401)
    with service.sessions() as session:
        rows = campaigns.topic_rows(session, who.id, campaign_id, topic)
        task_id = session.scalar(select(Campaign.task_id).where(Campaign.id == campaign_id))
    docs = campaigns.documents_of(service, campaign_id)
    scales = scales_of(task_of(service, task_id))
    return _page(view.judging_page(campaign_id, topic, docs["topics"].get(topic, ""), rows, docs["items"], scales,
                                   who.name))


@router.post("/assess/campaigns/{campaign_id}/judgments", include_in_schema=False)
async def judge_form(campaign_id: int, request: Request) -> Response:
    """The page's forms without JavaScript: save, then back to the topic at the next item."""
    form = parse_qs((await request.body()).decode("utf-8", "replace"))
    value = lambda key: (form.get(key) or [""])[0]  # noqa: E731
    service = state(request)

    def work() -> Response:
        who = _require_assessor(service, request)
        try:
            grade = int(value("grade"))
            quality = int(value("quality")) if value("quality") else None
            campaigns.save(service, who, campaign_id, value("topic"), value("item"), grade, quality)
        except (ValueError, SharedTaskError) as exc:
            raise HTTPException(422, f"not saved: {exc}") from None
        return RedirectResponse(f"/assess/campaigns/{campaign_id}/topics/{quote(value('topic'), safe='')}",
                                status_code=303)

    return await run_in_threadpool(work)


# ----------------------------------------------------------------------------- teams: run kinds


@router.post("/api/submissions/{submission_id}/kind", tags=["submissions"],
             summary="Mark your run primary or alternate (one primary per team and task)")
def set_kind(submission_id: int, body: KindIn, who: Member, session: Db) -> dict[str, Any]:
    return runs.set_kind(session, who, submission_id, body.kind)


@router.get("/api/tasks/{task_id}/kinds", tags=["submissions"],
            summary="Your finished valid runs of the task and their kinds (the organizer: every team's)")
def kinds(task_id: str, request: Request, service: State) -> list[dict[str, Any]]:
    task_of(service, task_id)
    who = authenticate(service, request)
    return _runs_of(service, task_id, None if who.organizer else who.id)


# ----------------------------------------------------------------------------- the organizer


def _runs_of(service: ServiceState, task_id: str, team_id: int | None = None) -> list[dict[str, Any]]:
    from sharedtask.service.entries import run_name

    with service.sessions() as session:
        marked = runs.primaries(session, task_id)
        names = team_names(session)
        query = select(Submission).where(Submission.task_id == task_id, Submission.status == "done",
                                         Submission.valid.is_(True)).order_by(Submission.id)
        if team_id is not None:
            query = query.where(Submission.team_id == team_id)
        subs = session.scalars(query)
        return [{"id": s.id, "run": run_name(names[s.team_id], s), "kind": runs.kind_of(marked, s.id)}
                for s in subs]


@router.get("/api/tasks/{task_id}/pool-runs", tags=["organizer"], summary="The runs a pool would take, with kinds")
def pool_runs(task_id: str, _org: Organizer, service: State) -> list[dict[str, Any]]:
    task_of(service, task_id)
    return _runs_of(service, task_id)


@router.post("/api/tasks/{task_id}/pools", status_code=201, tags=["organizer"],
             summary="Pool the task's submitted runs by its pooling rule")
def build_pool(task_id: str, body: PoolIn, request: Request, service: State) -> dict[str, Any]:
    _organizer(service, request)
    try:
        return runs.build(service, task_of(service, task_id), body.depths, body.seed)
    except SharedTaskError as exc:
        raise _user(exc) from None


@router.get("/api/tasks/{task_id}/pools", tags=["organizer"])
def list_pools(task_id: str, _org: Organizer, service: State) -> list[dict[str, Any]]:
    with service.sessions() as session:
        return [runs.pool_json(p) for p in session.scalars(select(PoolRow).where(PoolRow.task_id == task_id)
                                                          .order_by(PoolRow.id))]


@router.post("/api/tasks/{task_id}/campaigns", status_code=201, tags=["organizer"],
             summary="Open a judging campaign on a pool: topics assigned to assessors, a share judged twice")
def open_campaign(task_id: str, body: CampaignIn, request: Request, service: State) -> dict[str, Any]:
    _organizer(service, request)
    try:
        return campaigns.open_campaign(service, task_of(service, task_id), body.pool, body.assignments,
                                       body.double_share, body.seed)
    except SharedTaskError as exc:
        raise _user(exc) from None


def _campaign_json(service: ServiceState, campaign_id: int) -> dict[str, Any]:
    with service.sessions() as session:
        c = campaigns.get_campaign(session, campaign_id)
        body = campaigns.campaign_json(session, c)
        body["agreement"] = campaigns.agreement_of(session, task_of(service, c.task_id), campaign_id)
    return body


@router.get("/api/campaigns/{campaign_id}", tags=["organizer"], summary="A campaign: progress and agreement")
def get_campaign(campaign_id: int, _org: Organizer, service: State) -> dict[str, Any]:
    return _campaign_json(service, campaign_id)


@router.post("/api/campaigns/{campaign_id}/close", tags=["organizer"],
             summary="Close the campaign: its qrels become the task's truth and the boards score against them")
def close_campaign(campaign_id: int, request: Request, service: State) -> dict[str, Any]:
    _organizer(service, request)
    with service.sessions() as session:
        task_id = campaigns.get_campaign(session, campaign_id).task_id
    try:
        return campaigns.close(service, task_of(service, task_id), campaign_id)
    except SharedTaskError as exc:
        raise _user(exc) from None


@router.post("/api/campaigns/{campaign_id}/rescore", tags=["organizer"],
             summary="Score the task's finished runs again against a closed campaign's qrels")
def rescore_campaign(campaign_id: int, request: Request, service: State) -> dict[str, Any]:
    from sharedtask.service.assessment import truth

    _organizer(service, request)
    with service.sessions() as session:
        c = campaigns.get_campaign(session, campaign_id)
    if c.status != "closed" or not c.qrels_path:
        raise HTTPException(409, "only a closed campaign's qrels score runs")
    return {"campaign": campaign_id, "scored_runs": truth.rescore_closed(service, task_of(service, c.task_id), c)}


@router.post("/api/campaigns/{campaign_id}/publish", tags=["organizer"], summary="Let everyone see the qrels")
def publish_campaign(campaign_id: int, request: Request, service: State) -> dict[str, Any]:
    _organizer(service, request)
    with service.write_sessions()() as session:
        c = campaigns.get_campaign(session, campaign_id)
        if c.status != "closed":
            raise HTTPException(409, "close the campaign before publishing its qrels")
        c.published = True
        session.commit()
    return _campaign_json(service, campaign_id)


@router.get("/api/campaigns/{campaign_id}/qrels", tags=["tasks"], summary="A closed campaign's qrels, once published")
def campaign_qrels(campaign_id: int, request: Request, service: State) -> Response:
    from pathlib import Path

    from sharedtask.service.web.common import viewer

    with service.sessions() as session:
        c = session.get(Campaign, campaign_id)
        who = viewer(request, session)
        organizer = who is not None and who.organizer
        if c is None or not c.qrels_path or not (c.published or organizer):
            raise HTTPException(404, f"no published qrels of campaign {campaign_id}")
        path = Path(c.qrels_path)
    return PlainTextResponse(path.read_text(encoding="utf-8"))


# ----------------------------------------------------------------------------- the organizer's page


def _organizer_html(service: ServiceState, task_id: str) -> str:
    with service.sessions() as session:
        pools = [runs.pool_json(p) for p in session.scalars(select(PoolRow).where(PoolRow.task_id == task_id)
                                                           .order_by(PoolRow.id))]
        ids = list(session.scalars(select(Campaign.id).where(Campaign.task_id == task_id).order_by(Campaign.id)))
    return view.organizer_page(task_id, _runs_of(service, task_id), pools, [_campaign_json(service, i) for i in ids])


def _organizer_or_page(request: Request, service: ServiceState) -> Response | None:
    from sharedtask.service.web.common import viewer
    from sharedtask.service.web.pages import message_page

    with service.sessions() as session:
        who = viewer(request, session)
    if who is None or not who.organizer:
        return HTMLResponse(message_page("sign in", "The organizer's page: sign in with the organizer's token.",
                                         login=True), status_code=401 if who is None else 403)
    return None


@router.get("/organizer/tasks/{task_id}/assessment", include_in_schema=False)
def organizer_page(task_id: str, request: Request, service: State) -> Response:
    task_of(service, task_id)
    refused = _organizer_or_page(request, service)
    return refused or HTMLResponse(_organizer_html(service, task_id))


@router.post("/organizer/tasks/{task_id}/pools", include_in_schema=False)
async def organizer_pool(task_id: str, request: Request) -> Response:
    form = parse_qs((await request.body()).decode("utf-8", "replace"))
    service = state(request)

    def work() -> Response:
        refused = _organizer_or_page(request, service)
        if refused:
            return refused
        seed = (form.get("seed") or [""])[0]
        try:
            runs.build(service, task_of(service, task_id), None, int(seed) if seed.strip() else None)
        except (SharedTaskError, ValueError) as exc:
            raise HTTPException(422, str(exc)) from None
        return RedirectResponse(f"/organizer/tasks/{task_id}/assessment", status_code=303)

    return await run_in_threadpool(work)


@router.post("/organizer/tasks/{task_id}/campaigns", include_in_schema=False)
async def organizer_campaign(task_id: str, request: Request) -> Response:
    form = parse_qs((await request.body()).decode("utf-8", "replace"))
    service = state(request)
    value = lambda key: (form.get(key) or [""])[0]  # noqa: E731

    def work() -> Response:
        refused = _organizer_or_page(request, service)
        if refused:
            return refused
        try:
            assigned = dict(line.strip().split("=", 1) for line in value("assign").splitlines() if line.strip())
            campaigns.open_campaign(service, task_of(service, task_id), int(value("pool")),
                                    {k.strip(): v.strip() for k, v in assigned.items()},
                                    float(value("double_share") or 0), int(value("seed") or 0))
        except (SharedTaskError, ValueError) as exc:
            raise HTTPException(422, f"{exc} (one 'topic=assessor' a line)") from None
        return RedirectResponse(f"/organizer/tasks/{task_id}/assessment", status_code=303)

    return await run_in_threadpool(work)


@router.post("/organizer/campaigns/{campaign_id}/{action}", include_in_schema=False)
def organizer_campaign_action(campaign_id: int, action: str, request: Request, service: State) -> Response:
    refused = _organizer_or_page(request, service)
    if refused:
        return refused
    with service.sessions() as session:
        task_id = campaigns.get_campaign(session, campaign_id).task_id
    if action == "close":
        campaigns.close(service, task_of(service, task_id), campaign_id)
    elif action == "publish":
        with service.write_sessions()() as session:
            c = campaigns.get_campaign(session, campaign_id)
            if c.status == "closed":
                c.published = True
                session.commit()
    else:
        raise HTTPException(404, f"no action {action[:40]!r}")
    return RedirectResponse(f"/organizer/tasks/{task_id}/assessment", status_code=303)
