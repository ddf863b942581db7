"""Assessors, their tokens and their browser sign-ins, kept apart from teams' on purpose.

An assessor's token is looked up only in ``assessor_tokens`` and a team's only in ``tokens``:
neither can stand in for the other, so an assessor reaches no team or organizer route and a team
(or the organizer) reaches no assessor route. Tokens and cookies are stored as their sha256 only.
"""

from __future__ import annotations

import datetime as dt
import secrets

from sqlalchemy import select
from sqlalchemy.orm import Session

from sharedtask.errors import SharedTaskError
from sharedtask.service.models import Assessor, AssessorSignIn, AssessorToken, utcnow
from sharedtask.service.teams.tokens import TEAM_NAME, digest

#: the assessor's sign-in cookie (teams': ``sharedtask_session``)
COOKIE = "sharedtask_assessor"
LIFETIME = dt.timedelta(days=14)


def create_assessor(session: Session, name: str) -> tuple[Assessor, str]:
    """A new assessor and its first token (shown once); an empty, odd or taken name is a user error."""
    if not TEAM_NAME.fullmatch(name or ""):
        raise SharedTaskError(f"invalid assessor name {name!r}",
                              hint="use 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit")
    if session.scalar(select(Assessor).where(Assessor.name == name)) is not None:
        raise SharedTaskError(f"an assessor named {name!r} exists already", hint="choose another name")
    assessor = Assessor(name=name)
    session.add(assessor)
    session.flush()
    token = "as_" + secrets.token_urlsafe(32)
    session.add(AssessorToken(digest=digest(token), assessor_id=assessor.id, revoked=False))
    session.flush()
    return assessor, token


def assessor_of_token(session: Session, token: str | None) -> Assessor | None:
    if not token:
        return None
    return session.scalar(select(Assessor).join(AssessorToken, AssessorToken.assessor_id == Assessor.id)
                          .where(AssessorToken.digest == digest(token), AssessorToken.revoked.is_(False)))


def assessor_of_cookie(session: Session, value: str | None) -> Assessor | None:
    if not value:
        return None
    return session.scalar(
        select(Assessor).join(AssessorToken, AssessorToken.assessor_id == Assessor.id)
        .join(AssessorSignIn, AssessorSignIn.token_id == AssessorToken.id)
        .where(AssessorSignIn.digest == digest(value), AssessorSignIn.revoked.is_(False),
               AssessorSignIn.expires > utcnow(), AssessorToken.revoked.is_(False)))


def sign_in(session: Session, token: str) -> tuple[Assessor, str] | None:
    """A new sign-in for a valid assessor token: (the assessor, the cookie's value); None otherwise."""
    row = session.scalar(select(AssessorToken).where(AssessorToken.digest == digest(token),
                                                     AssessorToken.revoked.is_(False)))
    if row is None:
        return None
    value = "sa_" + secrets.token_urlsafe(32)
    session.add(AssessorSignIn(digest=digest(value), token_id=row.id, expires=utcnow() + LIFETIME, revoked=False))
    assessor = session.get(Assessor, row.assessor_id)
    assert assessor is not None
    return assessor, value


def sign_out(session: Session, value: str | None) -> None:
    if value:
        for row in session.scalars(select(AssessorSignIn).where(AssessorSignIn.digest == digest(value))):
            row.revoked = True
