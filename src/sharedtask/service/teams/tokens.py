"""Roles and bearer tokens: the organizer's is made on the server's command line, teams' by the organizer.

A token is 32 random bytes (``secrets.token_urlsafe``); only its sha256 is stored,
and lookups compare digests, so the database never holds a usable token.
"""

from __future__ import annotations

import hashlib
import re
import secrets

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from sharedtask.errors import SharedTaskError
from sharedtask.service.models import Team, Token

ORGANIZER = "organizer"
#: Team names appear in run names, archives and URLs: a plain, short alphabet. Always used with
#: ``fullmatch``: ``$`` would also match before a final newline (``teamA\n`` beside ``teamA``;
#: docs.python.org/3/library/re.html, "$").
TEAM_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


def digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def check_team_name(name: str) -> str:
    if not TEAM_NAME.fullmatch(name):
        raise SharedTaskError(f"invalid team name {name!r}",
                              hint="use 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit")
    return name


def new_token(session: Session, team: Team) -> str:
    """A fresh token for ``team`` (the only time it is seen in clear)."""
    # Never starting with "-": a token is passed as `--token T`, where argparse would read it as an option.
    token = "st_" + secrets.token_urlsafe(32)
    session.add(Token(digest=digest(token), team_id=team.id))
    return token


def create_team(session: Session, name: str, *, organizer: bool = False) -> tuple[Team, str]:
    """A new team (or the organizer) and its first token; a taken name is a user error."""
    check_team_name(name)
    if session.scalar(select(Team).where(Team.name == name)) is not None:
        raise SharedTaskError(f"a team named {name!r} exists already", hint="choose another name")
    team = Team(name=name, organizer=organizer)
    try:
        with session.begin_nested():  # a savepoint: the session stays usable when the name was taken meanwhile
            session.add(team)
    except IntegrityError:  # two organizers adding one name at once: the unique name decides
        raise SharedTaskError(f"a team named {name!r} exists already", hint="choose another name") from None
    return team, new_token(session, team)


def organizer_token(session: Session) -> str:
    """A new organizer token (the organizer row is created the first time)."""
    team = session.scalar(select(Team).where(Team.organizer.is_(True)))
    if team is None:
        _, token = create_team(session, ORGANIZER, organizer=True)
        return token
    return new_token(session, team)


def team_of(session: Session, token: str | None) -> Team | None:
    """The team (or organizer) a token belongs to, None for a missing, unknown or revoked one."""
    if not token:
        return None
    # one statement (it runs on every request that carries a token)
    return session.scalar(select(Team).join(Token, Token.team_id == Team.id)
                          .where(Token.digest == digest(token), Token.revoked.is_(False)))
