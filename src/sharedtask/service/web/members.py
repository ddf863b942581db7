"""Team members with their own tokens, revocable by the organizer (``/api/teams/{name}/tokens``),
and a team's places in the line of queued submissions (``/api/queue``).

Each member of a team gets a token of its own (the team's first one is made with the team):
a member who leaves, or a token that leaked, is revoked alone and the rest of the team goes
on. A revoked token is refused at once (``tokens.team_of`` looks at ``revoked`` on every
request). Tokens are shown in clear once, when made; the list shows ids and dates only.

No ``from __future__ import annotations``: FastAPI reads the annotations at run time.
"""

from typing import Any

from fastapi import APIRouter, HTTPException
from sqlalchemy import func, select

from sharedtask.service.submissions import queue_line
from sharedtask.service.web.common import Db, Member, Organizer
from sharedtask.service.models import Submission, Team, Token, aware
from sharedtask.service.teams.tokens import new_token

router = APIRouter(prefix="/api")


def _team(session: Any, name: str) -> Team:
    team = session.scalar(select(Team).where(Team.name == name, Team.organizer.is_(False)))
    if team is None:
        raise HTTPException(404, f"no team {name[:80]!r}")
    return team


def token_json(token: Token) -> dict[str, Any]:
    return {"id": token.id, "created": aware(token.created), "revoked": bool(token.revoked)}


@router.post("/teams/{name}/tokens", status_code=201, tags=["organizer"],
             summary="A new token for a member of the team (shown once)")
def add_token(name: str, _org: Organizer, session: Db) -> dict[str, Any]:
    team = _team(session, name)
    token = new_token(session, team)
    session.flush()
    row = session.scalars(select(Token).where(Token.team_id == team.id).order_by(Token.id.desc())).first()
    answer = {"team": team.name, "token": token, **token_json(row)}
    session.commit()  # last: on SQLite a read after it would open a writer's transaction again
    return answer


@router.get("/teams/{name}/tokens", tags=["organizer"],
            summary="The team's tokens: ids, dates, revoked or not (never the tokens)")
def list_tokens(name: str, _org: Organizer, session: Db) -> list[dict[str, Any]]:
    team = _team(session, name)
    return [token_json(t) for t in session.scalars(select(Token).where(Token.team_id == team.id).order_by(Token.id))]


@router.post("/teams/{name}/tokens/{token_id}/revoke", tags=["organizer"], summary="Revoke one token of the team")
def revoke_token(name: str, token_id: int, _org: Organizer, session: Db) -> dict[str, Any]:
    team = _team(session, name)
    token = session.get(Token, token_id)
    if token is None or token.team_id != team.id:
        raise HTTPException(404, f"team {team.name} has no token {token_id}")
    token.revoked = True
    session.flush()
    answer = token_json(token)
    session.commit()
    return answer


@router.get("/queue", tags=["submissions"],
            summary="Where your queued submissions are in the line (1: next to run)")
def queue(who: Member, session: Db) -> dict[str, Any]:
    """The line is the server's: every queued submission, oldest first (the order the executor
    takes them). A team sees its own submissions' places and how many are queued and running in
    all, never whose the others are."""
    queued = queue_line(session)
    running = int(session.scalar(select(func.count(Submission.id)).where(Submission.status == "running")) or 0)
    mine = set(queued) if who.organizer else set(session.scalars(
        select(Submission.id).where(Submission.team_id == who.id, Submission.status == "queued")))
    return {"queued": len(queued), "running": running,
            "positions": [{"id": sid, "position": place} for place, sid in enumerate(queued, 1) if sid in mine]}
