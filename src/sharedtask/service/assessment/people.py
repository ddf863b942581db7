"""Assessors, their tokens and their browser sign-ins, kept apart from teams' on purpose.

An assessor's token is looked up only in ``assessor_tokens`` and a team's only in ``tokens``:
neither can stand in for the other, so an assessor reaches no team or organizer route and a team
(or the organizer) reaches no assessor route. Tokens and cookies are stored as their sha256 only.
"""

from __future__ import annotations

import secrets

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from sharedtask.errors import SharedTaskError
from sharedtask.service.cookies import LIFETIME, Door
from sharedtask.service.models import Assessor, AssessorSignIn, AssessorToken
from sharedtask.service.teams.tokens import TEAM_NAME, digest

__all__ = ["COOKIE", "LIFETIME", "assessor_named", "assessor_of_cookie", "assessor_of_token", "create_assessor",
           "new_token", "revoke_token", "sign_in", "sign_out", "tokens_of"]

#: the same sign-in rules as teams' (service/cookies.py), on the assessors' own tables
DOOR: Door[Assessor] = Door(owner=Assessor, token_model=AssessorToken, sign_in_model=AssessorSignIn, owner_key="assessor_id",
                            cookie="sharedtask_assessor", prefix="sa_")
COOKIE = DOOR.cookie
assessor_of_token = DOOR.owner_of_token
assessor_of_cookie = DOOR.owner_of_cookie
sign_in = DOOR.sign_in
sign_out = DOOR.sign_out


def new_token(session: Session, assessor: Assessor) -> str:
    """A fresh token for ``assessor`` (the only time it is seen in clear)."""
    token = "as_" + secrets.token_urlsafe(32)  # never "-…": it is passed as an option's value
    session.add(AssessorToken(digest=digest(token), assessor_id=assessor.id, revoked=False))
    session.flush()
    return token


def create_assessor(session: Session, name: str) -> tuple[Assessor, str]:
    """A new assessor and its first token (shown once); an empty, odd or taken name is a user error."""
    if not TEAM_NAME.fullmatch(name or ""):
        raise SharedTaskError(f"invalid assessor name {name!r}",
                              hint="use 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit")
    if session.scalar(select(Assessor).where(Assessor.name == name)) is not None:
        raise SharedTaskError(f"an assessor named {name!r} exists already", hint="choose another name")
    assessor = Assessor(name=name)
    try:
        with session.begin_nested():  # a savepoint: the session stays usable when the name was taken meanwhile
            session.add(assessor)
    except IntegrityError:  # two organizers adding one name at once: the unique name decides
        raise SharedTaskError(f"an assessor named {name!r} exists already", hint="choose another name") from None
    return assessor, new_token(session, assessor)


def assessor_named(session: Session, name: str) -> Assessor | None:
    return session.scalar(select(Assessor).where(Assessor.name == name))


def tokens_of(session: Session, assessor: Assessor) -> list[AssessorToken]:
    return list(session.scalars(select(AssessorToken).where(AssessorToken.assessor_id == assessor.id)
                                .order_by(AssessorToken.id)))


def revoke_token(session: Session, assessor: Assessor, token_id: int) -> AssessorToken | None:
    """Revoke one of the assessor's tokens (its browser sign-ins end with it); None if it has no such token.

    The judgments it saved stay: they are the assessor's, not the token's."""
    token = session.get(AssessorToken, token_id)
    if token is None or token.assessor_id != assessor.id:
        return None
    token.revoked = True
    return token
