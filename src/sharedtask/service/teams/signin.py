"""Browser sign-ins: an expiring, revocable cookie instead of the token itself.

``/login`` checks the team's token once and sets ``sharedtask_session``: a random id whose
sha256 is stored (:class:`~sharedtask.service.models.SignIn`), valid for
:data:`LIFETIME`, HttpOnly and SameSite=Strict (other sites can neither read it nor post a form
with it). It ends when it expires, when the browser signs out (``POST /logout``) or when the
organizer revokes the token it was made from. The API keeps ``Authorization: Bearer TOKEN``.
"""

from __future__ import annotations

from sharedtask.service.cookies import LIFETIME, Door
from sharedtask.service.models import SignIn, Team, Token

__all__ = ["COOKIE", "LIFETIME", "sign_in", "sign_out", "team_of_cookie"]

#: the rules are the same for every role (service/cookies.py); teams have their own tables
DOOR: Door[Team] = Door(owner=Team, token_model=Token, sign_in_model=SignIn, owner_key="team_id",
                        cookie="sharedtask_session", prefix="si_")
COOKIE = DOOR.cookie
sign_in = DOOR.sign_in
team_of_cookie = DOOR.owner_of_cookie
sign_out = DOOR.sign_out
