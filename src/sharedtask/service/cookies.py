"""Browser sign-ins for any role: an expiring, revocable cookie instead of the token itself.

Teams and assessors sign in the same way; only their tables differ (``tokens``/``sign_ins``
for teams, ``assessor_tokens``/``assessor_sign_ins`` for assessors, kept apart so that one
role's token or cookie can never stand in for the other's). A :class:`Door` names one role's
tables, and the rules live here once:

- signing in checks the token once and stores the sha256 of a fresh random cookie value,
  valid for :data:`LIFETIME`;
- a cookie is good while it is unexpired, not signed out, and its token is not revoked, so
  revoking a token signs its holder out everywhere at once.
"""

from __future__ import annotations

import datetime as dt
import secrets
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from sqlalchemy import select
from sqlalchemy.orm import Session

from sharedtask.service.models import utcnow
from sharedtask.service.teams.tokens import digest

LIFETIME = dt.timedelta(days=14)

Owner = TypeVar("Owner")


@dataclass(frozen=True)
class Door(Generic[Owner]):
    """One role's way in: its owner table, token table and sign-in table."""

    owner: type[Owner]
    token_model: Any  # the token model (``digest``, ``revoked``, the owner's key)
    sign_in_model: Any  # the sign-in model (``digest``, ``token_id``, ``expires``, ``revoked``)
    owner_key: str   # the token's column naming its owner: "team_id", "assessor_id"
    cookie: str      # the cookie's name
    prefix: str      # a cookie value's prefix, telling roles apart in a log line

    def _token_owner(self) -> Any:
        return getattr(self.token_model, self.owner_key)

    def owner_of_token(self, session: Session, token: str | None) -> Owner | None:
        """The owner of a bearer token; None for a missing, unknown or revoked one."""
        if not token:
            return None
        return session.scalar(select(self.owner).join(self.token_model, self._token_owner() == self.owner.id)  # type: ignore[attr-defined]
                              .where(self.token_model.digest == digest(token), self.token_model.revoked.is_(False)))

    def sign_in(self, session: Session, token: str) -> tuple[Owner, str] | None:
        """A new sign-in for a valid token: (its owner, the cookie's value); None for a bad token."""
        row = session.scalar(select(self.token_model).where(self.token_model.digest == digest(token),
                                                       self.token_model.revoked.is_(False)))
        if row is None:
            return None
        value = self.prefix + secrets.token_urlsafe(32)
        session.add(self.sign_in_model(digest=digest(value), token_id=row.id, expires=utcnow() + LIFETIME, revoked=False))
        owner = session.get(self.owner, getattr(row, self.owner_key))
        assert owner is not None
        return owner, value

    def owner_of_cookie(self, session: Session, value: str | None) -> Owner | None:
        """The owner of a sign-in cookie: None when unknown, expired, signed out or its token revoked."""
        if not value:
            return None
        # one statement: it runs on every page a signed-in browser asks for
        return session.scalar(
            select(self.owner).join(self.token_model, self._token_owner() == self.owner.id)  # type: ignore[attr-defined]
            .join(self.sign_in_model, self.sign_in_model.token_id == self.token_model.id)
            .where(self.sign_in_model.digest == digest(value), self.sign_in_model.revoked.is_(False),
                   self.sign_in_model.expires > utcnow(), self.token_model.revoked.is_(False)))

    def sign_out(self, session: Session, value: str | None) -> None:
        if value:
            for row in session.scalars(select(self.sign_in_model).where(self.sign_in_model.digest == digest(value))):
                row.revoked = True
