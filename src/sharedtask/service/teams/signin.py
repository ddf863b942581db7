"""Browser sign-ins: an expiring, revocable cookie instead of the token itself.

``/login`` checks the team's token once and sets ``sharedtask_session``: a random id whose
sha256 is stored (:class:`~sharedtask.service.models.SignIn`), valid for
:data:`LIFETIME`, HttpOnly and SameSite=Strict (other sites can neither read it nor post a form
with it). It ends when it expires, when the browser signs out (``POST /logout``) or when the
organizer revokes the token it was made from. The API keeps ``Authorization: Bearer TOKEN``.
"""

from __future__ import annotations

import datetime as dt
import secrets

from sqlalchemy import select
from sqlalchemy.orm import Session

from sharedtask.service.models import SignIn, Team, Token, utcnow
from sharedtask.service.teams.tokens import digest

COOKIE = "sharedtask_session"
LIFETIME = dt.timedelta(days=14)


def sign_in(session: Session, token: str) -> tuple[Team, str] | None:
    """A new sign-in for a valid token: (its team, the cookie's value); None for a bad token."""
    row = session.scalar(select(Token).where(Token.digest == digest(token), Token.revoked.is_(False)))
    if row is None:
        return None
    value = "si_" + secrets.token_urlsafe(32)
    session.add(SignIn(digest=digest(value), token_id=row.id, expires=utcnow() + LIFETIME, revoked=False))
    team = session.get(Team, row.team_id)
    assert team is not None
    return team, value


def team_of_cookie(session: Session, value: str | None) -> Team | None:
    """The team of a sign-in cookie: None when unknown, expired, signed out or its token revoked."""
    if not value:
        return None
    token_id = session.scalar(select(SignIn.token_id).join(Token, Token.id == SignIn.token_id).where(
        SignIn.digest == digest(value), SignIn.revoked.is_(False), SignIn.expires > utcnow(),
        Token.revoked.is_(False)))
    if token_id is None:
        return None
    token = session.get(Token, token_id)
    return session.get(Team, token.team_id) if token is not None else None


def sign_out(session: Session, value: str | None) -> None:
    if value:
        for row in session.scalars(select(SignIn).where(SignIn.digest == digest(value))):
            row.revoked = True
