"""What the route modules of :mod:`sharedtask.service.web` share: who is asking (tokens and sign-in
cookies → roles), the request's session and state, kept answers, the request bodies two route
modules read, and a phase's leaderboard as the asker may see it.

Route modules import this module and the domain, never each other. A request without a valid
token gets 401; a team asking for another team's submission gets 404, exactly as for one that
does not exist (no existence leak); an organizer-only action by a team gets 403.
"""

import datetime as dt
from typing import Annotated, Any, Callable, Iterator

import anyio
import anyio.to_thread

from fastapi import Depends, HTTPException, Request
from fastapi.responses import HTMLResponse, Response
from pydantic import BaseModel, Field
from sqlalchemy import select
from sqlalchemy.orm import Session

from sharedtask.service import phases, selection, submissions
from sharedtask.service.models import Submission, TaskSettings, Team, aware, utcnow
from sharedtask.service.state import ServiceState, task_of, team_names
from sharedtask.service.teams.signin import COOKIE, team_of_cookie
from sharedtask.service.teams.tokens import team_of



def state(request: Request) -> ServiceState:
    return request.app.state.service


def db(request: Request) -> Iterator[Session]:
    """A session for the request: plain for reads, a writer's for anything else.

    FastAPI runs this (sync) dependency and the sync handlers that use it in its thread
    pool, never on the event loop; the session lives as long as the request, which for
    these handlers is a few database statements, never an upload or a run.
    """
    service = state(request)
    maker = service.sessions if request.method in ("GET", "HEAD") else service.write_sessions()
    with maker() as session:
        yield session


async def _state(request: Request) -> ServiceState:
    """:func:`state` as a dependency: async because FastAPI runs a sync dependency in its thread
    pool, a round trip (and a wait for the GIL) per request for a mere attribute read."""
    return state(request)


Db = Annotated[Session, Depends(db)]
State = Annotated[ServiceState, Depends(_state)]


def token_of(request: Request) -> str | None:
    """``Authorization: Bearer T`` (the API; the pages accept it too)."""
    header = request.headers.get("authorization", "")
    if header.lower().startswith("bearer "):
        return header[7:].strip()
    return None


def identify(session: Session, request: Request) -> Team | None:
    """The asker: by its bearer token, else by its sign-in cookie (:mod:`sharedtask.service.teams.signin`)."""
    token = token_of(request)
    if token is not None:
        return team_of(session, token)
    return team_of_cookie(session, request.cookies.get(COOKIE))


def viewer(request: Request, session: Db) -> Team | None:
    return identify(session, request)


def member(request: Request, session: Db) -> Team:
    found = viewer(request, session)
    if found is None:
        raise HTTPException(401, "a valid token is needed (Authorization: Bearer TOKEN)",
                            headers={"WWW-Authenticate": "Bearer"})
    return found


def authenticate(service: ServiceState, request: Request) -> Team:
    """The token's team, looked up in a short session of its own (for handlers that stream).

    Why not the ``Member`` dependency: its session lives as long as the request, and a
    request that streams a large upload must hold no session and no transaction meanwhile.
    """
    with service.sessions() as session:
        found = identify(session, request)
        session.commit()  # ends the read transaction; expire_on_commit=False keeps the row loaded
    if found is None:
        raise HTTPException(401, "a valid token is needed (Authorization: Bearer TOKEN)",
                            headers={"WWW-Authenticate": "Bearer"})
    return found


def organizer(who: Annotated[Team, Depends(member)]) -> Team:
    if not who.organizer:
        raise HTTPException(403, "only the organizer may do this")
    return who


Member = Annotated[Team, Depends(member)]
Organizer = Annotated[Team, Depends(organizer)]


def visible(session: Session, who: Team, submission_id: int) -> Submission:
    """The submission if ``who`` may see it; 404 otherwise, the same as for a missing one."""
    sub = session.get(Submission, submission_id)
    if sub is None or (not who.organizer and sub.team_id != who.id):
        raise HTTPException(404, f"no submission {submission_id}")
    return sub


def may_see_board(request: Request, session: Session, task_id: str) -> bool:
    """Published boards are public; the organizer sees every board (True); otherwise 404."""
    who = viewer(request, session)
    if who is not None and who.organizer:
        return True
    s = session.scalar(select(TaskSettings).where(TaskSettings.task_id == task_id))
    if s is None or not s.published:
        raise HTTPException(404, f"the leaderboard of {task_id} is not published")
    return False


def reader_zone(request: Request, tz: str | None) -> Any:
    """The reader's time zone: ``?tz=`` when given, else the one the zone cookie keeps (None: UTC only).
    Every page that shows times reads it, so a choice made on one page holds on all."""
    from sharedtask.service.web import site_pages

    return site_pages.zone(tz if tz is not None else request.cookies.get(site_pages.TZ_COOKIE))


def remember_zone(response: HTMLResponse, tz: str | None) -> HTMLResponse:
    """Keep a valid ``?tz=`` in the zone cookie for the next pages (an unknown name is not kept)."""
    from sharedtask.service.web import site_pages

    if tz is not None and (tz == "UTC" or site_pages.zone(tz) is not None):
        response.set_cookie(site_pages.TZ_COOKIE, tz, max_age=365 * 86400, samesite="strict", httponly=True)
    return response


def _next_boundary(service: ServiceState, now: Any) -> Any:
    with service.sessions() as session:
        return phases.next_boundary(session, now)


def viewer_class(service: ServiceState, request: Request) -> tuple[Any, ...]:
    """Who asks, as a key: ``("organizer",)``, ``("team", id)`` or ``("anyone",)``.

    Why not the credential's digest: every random token (unknown, so shown the public board)
    kept one more copy of that board (issue 39). A request without a credential costs no query."""
    if token_of(request) is None and not request.cookies.get(COOKIE):
        return ("anyone",)
    with service.sessions() as session:
        who = identify(session, request)
        session.commit()
    if who is None:
        return ("anyone",)
    return ("organizer",) if who.organizer else ("team", who.id)


def kept(service: ServiceState, request: Request, key: tuple[Any, ...], build: Any) -> bytes:
    """``build()`` (bytes), or the same bytes kept since the last commit (:mod:`sharedtask.service.response_cache`).

    ``key`` holds canonical values only (a known task, a validated zone), never raw input; to it
    is added who asks (:func:`viewer_class`): who asks decides what they see. An answer is also
    kept no later than the next opening or closing of a task or a phase
    (:func:`sharedtask.service.phases.next_boundary`): what is open, and whose scores a phase
    keeps back, changes then without any commit. An answer ``build`` refuses (an HTTP error) is
    not kept.
    """
    if not service.answers.enabled:
        return build()
    key = (*key, *viewer_class(service, request))
    stamp = service.answers.stamp()  # before building: an answer is never older than its stamp
    now = utcnow()
    body = service.answers.get(key, stamp, now)
    if body is None:
        body = build()
        until = service.answers.boundary(stamp, now, lambda: _next_boundary(service, now))  # once per stamp
        service.answers.put(key, stamp, body, until)
    return body


class SettingsIn(BaseModel):
    opens: dt.datetime | None = None
    closes: dt.datetime | None = None
    daily_limit: int | None = Field(default=None, ge=1)


class PhaseIn(BaseModel):
    dataset: str = Field(min_length=1, max_length=100,
                         description="a dataset of tira.yml (datasets:) that the phase's submissions run on")
    opens: dt.datetime | None = Field(default=None, description="ISO 8601 with a zone; none: open already")
    closes: dt.datetime | None = Field(default=None, description="ISO 8601 with a zone; none: never closes")
    daily_limit: int | None = Field(default=None, ge=1, description="submissions per team and UTC day")
    total_limit: int | None = Field(default=None, ge=1, description="submissions per team in the whole phase")
    scores_visible: bool = Field(default=True, description="false: teams see their scores only once it closed")
    leaderboard_public: bool = Field(default=False, description="the phase's leaderboard is public")
    max_selected: int | None = Field(default=None, ge=1,
                                     description="runs a team may mark as final; none: each team's best run counts")


def phase_board(task_id: str, name: str, request: Request, session: Any, service: Any) -> tuple[Any, Any, list]:
    """(task, phase, ranked rows) of a phase's leaderboard as the asker may see it; 404 when not public."""
    from sharedtask.report.model import TaskSection, leaderboard

    task = task_of(service, task_id)
    phase = phases.named(session, task_id, name)
    who = viewer(request, session)
    organizer_view = bool(who is not None and who.organizer)
    now = utcnow()
    if not selection.may_see(phase, organizer_view, now):
        opens = selection.board_opens(phase, now)
        when = f": it opens at {aware(opens)}, when the phase closes" if opens is not None else ""
        raise HTTPException(404, f"the leaderboard of phase {name} of {task_id} is not public{when}")
    runs = selection.board_runs(session, phase, task.primary_measure.key, organizer_view=organizer_view)
    names = team_names(session)
    blind = service.config.blind and not organizer_view
    entries = [submissions.light_entry(run, names[run.team_id], blind=blind) for run in runs]
    by_name = {entry.name: run for entry, run in zip(entries, runs)}
    rows = [(rank, entry, by_name[entry.name]) for rank, entry in leaderboard(TaskSection(task, entries))]
    return task, phase, rows


#: threads that build the hot GETs' answers; the rest of the thread pool (40) is the uploads' and the pages'
HOT_THREADS = 4


async def hot(function: Callable[..., Response], service: ServiceState, *args: Any) -> Response:
    """``function(*args)`` in one of :data:`HOT_THREADS` threads.

    Why not the shared pool: under a crowd its 40 threads all ran short requests at once, and
    40 runnable threads take turns at the GIL; the event loop waited behind them, and an
    upload, read 64 KB per turn of the loop, took seconds (benchmarks/service.py). Requests
    beyond these few wait in the loop, where waiting costs nothing.
    """
    if service.hot_threads is None:  # made here, in the server's event loop
        service.hot_threads = anyio.CapacityLimiter(HOT_THREADS)
    return await anyio.to_thread.run_sync(function, service, *args, limiter=service.hot_threads)
