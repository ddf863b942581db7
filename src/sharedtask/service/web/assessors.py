"""The organizer's hand on assessors (``/api/assessors``): add one, give a person a second token,
revoke a token that leaked or whose holder left.

As for team members (``web/members.py``): tokens are shown in clear once, when made; lists show
ids and dates only. Revoking a token refuses it at once and ends every browser sign-in made
from it (``service/cookies.py``); the judgments saved with it stay, they are the assessor's.

No ``from __future__ import annotations``: FastAPI reads the annotations at run time.
"""

from typing import Any

from fastapi import APIRouter, HTTPException
from pydantic import BaseModel, Field
from sqlalchemy import func, select

from sharedtask.service.assessment import people
from sharedtask.service.models import Assessor, AssessorToken, aware
from sharedtask.service.web.common import Db, Organizer

router = APIRouter(prefix="/api")


class AssessorIn(BaseModel):
    name: str = Field(description="1-64 letters, digits, '.', '_' or '-'")


def _assessor(session: Any, name: str) -> Assessor:
    found = people.assessor_named(session, name)
    if found is None:
        raise HTTPException(404, f"no assessor {name[:80]!r}")
    return found


def token_json(token: AssessorToken) -> dict[str, Any]:
    return {"id": token.id, "created": aware(token.created), "revoked": bool(token.revoked)}


@router.post("/assessors", status_code=201, tags=["organizer"], summary="Add an assessor and its first token (shown once)")
def add_assessor(body: AssessorIn, _org: Organizer, session: Db) -> dict[str, Any]:
    assessor, token = people.create_assessor(session, body.name)
    answer = {"assessor": assessor.name, "token": token, **token_json(people.tokens_of(session, assessor)[-1])}
    session.commit()  # last: on SQLite a read after it would open a writer's transaction again
    return answer


@router.get("/assessors", tags=["organizer"], summary="The assessors, with how many of their tokens are live")
def list_assessors(_org: Organizer, session: Db) -> list[dict[str, Any]]:
    live = dict(session.execute(select(AssessorToken.assessor_id, func.count(AssessorToken.id))
                                .where(AssessorToken.revoked.is_(False)).group_by(AssessorToken.assessor_id)).all())
    return [{"assessor": a.name, "created": aware(a.created), "live_tokens": int(live.get(a.id, 0))}
            for a in session.scalars(select(Assessor).order_by(Assessor.id))]


@router.post("/assessors/{name}/tokens", status_code=201, tags=["organizer"],
             summary="A new token for the assessor (shown once)")
def add_token(name: str, _org: Organizer, session: Db) -> dict[str, Any]:
    assessor = _assessor(session, name)
    token = people.new_token(session, assessor)
    answer = {"assessor": assessor.name, "token": token, **token_json(people.tokens_of(session, assessor)[-1])}
    session.commit()
    return answer


@router.get("/assessors/{name}/tokens", tags=["organizer"],
            summary="The assessor's tokens: ids, dates, revoked or not (never the tokens)")
def list_tokens(name: str, _org: Organizer, session: Db) -> list[dict[str, Any]]:
    return [token_json(t) for t in people.tokens_of(session, _assessor(session, name))]


@router.post("/assessors/{name}/tokens/{token_id}/revoke", tags=["organizer"],
             summary="Revoke one token of the assessor (its sign-ins end; its judgments stay)")
def revoke_token(name: str, token_id: int, _org: Organizer, session: Db) -> dict[str, Any]:
    assessor = _assessor(session, name)
    token = people.revoke_token(session, assessor, token_id)
    if token is None:
        raise HTTPException(404, f"assessor {assessor.name} has no token {token_id}")
    session.flush()
    answer = token_json(token)
    session.commit()
    return answer
