"""Dashboard sessions: an API-key login, a signed HTTP-only SameSite=Lax cookie, and a
CSRF token bound to the session.

The cookie holds `{"actor", "csrf"}` signed with a service-wide key kept in the database
(every API process shares it, no new setting). It never holds the API key: the actor is
`actor_of(key)`, re-checked against the configured keys on every request, so removing a
key from AGENTRUN_API_KEYS ends its sessions. A visitor without a login still gets a
session (no actor) so the login form has a CSRF token too.
"""

from __future__ import annotations

import hmac
import secrets
from dataclasses import dataclass
from typing import Any

from fastapi import Request
from itsdangerous import BadSignature, URLSafeTimedSerializer
from starlette.responses import Response

from app.service.keys import Authenticator, actor_of, key_matches
from app.service.reads import RunReads

COOKIE = "agentrun_admin"
COOKIE_PATH = "/admin"
MAX_AGE = 12 * 3600
CSRF_FIELD = "csrf_token"
SECRET_NAME = "dashboard_session_key"


class LoginRequired(Exception):
    """Raised by page dependencies; answered with a 303 to the login page."""

    def __init__(self, next_path: str) -> None:
        super().__init__(next_path)
        self.next_path = next_path


class CsrfRefused(Exception):
    """A POST without the session's CSRF token; answered with 403, nothing changed."""


@dataclass(frozen=True, slots=True)
class Session:
    actor: str | None
    csrf: str
    fresh: bool = False  # not yet in a cookie: the response must set it

    @property
    def logged_in(self) -> bool:
        return self.actor is not None


async def serializer(request: Request) -> URLSafeTimedSerializer:
    cached: URLSafeTimedSerializer | None = getattr(request.app.state, "dashboard_signer", None)
    if cached is None:
        reads: RunReads = request.app.state.reads
        key = await reads.shared_secret(SECRET_NAME)
        cached = URLSafeTimedSerializer(key, salt="agentrun-dashboard-session")
        request.app.state.dashboard_signer = cached
    return cached


async def open_mode(request: Request) -> bool:
    """The API's open mode (no key in AGENTRUN_API_KEYS nor in the database, on loopback):
    a database key ends it for the dashboard too."""
    authenticator: Authenticator = request.app.state.authenticator
    return await authenticator.open_mode()


async def valid_actors(request: Request) -> set[str]:
    if await open_mode(request):
        return {actor_of(None)}
    keys: list[str] = request.app.state.settings.api_key_list
    return {actor_of(k) for k in keys}


async def load_session(request: Request) -> Session:
    """The request's session; a fresh anonymous one when the cookie is missing, forged,
    expired, or names an actor whose key is no longer configured."""
    cached: Session | None = getattr(request.state, "dashboard_session", None)
    if cached is not None:
        return cached
    session = None
    raw = request.cookies.get(COOKIE)
    if raw:
        signer = await serializer(request)
        try:
            data: Any = signer.loads(raw, max_age=MAX_AGE)
        except BadSignature:
            data = None
        if isinstance(data, dict) and isinstance(data.get("csrf"), str):
            actor = data.get("actor")
            if not isinstance(actor, str) or actor not in await valid_actors(request):
                actor = None
            session = Session(actor, data["csrf"])
    if session is None:
        session = Session(None, secrets.token_urlsafe(32), fresh=True)
    request.state.dashboard_session = session
    return session


async def check_key(request: Request, presented: str) -> str | None:
    """The actor for a login with `presented` (a key of AGENTRUN_API_KEYS), or None when
    the key is wrong. In open mode every login succeeds as `open-mode`."""
    if await open_mode(request):
        return actor_of(None)
    keys: list[str] = request.app.state.settings.api_key_list
    presented = presented.strip()
    if not presented or not key_matches(presented, keys):
        return None
    return actor_of(presented)


async def write_session(request: Request, response: Response, session: Session) -> None:
    signer = await serializer(request)
    response.set_cookie(
        COOKIE,
        signer.dumps({"actor": session.actor, "csrf": session.csrf}),
        max_age=MAX_AGE,
        path=COOKIE_PATH,
        httponly=True,
        samesite="lax",
        secure=request.url.scheme == "https",
    )


def clear_session(response: Response) -> None:
    response.delete_cookie(COOKIE, path=COOKIE_PATH, httponly=True, samesite="lax")


def new_login(actor: str) -> Session:
    """A new session (and CSRF token) at login: nothing from before the login survives."""
    return Session(actor, secrets.token_urlsafe(32), fresh=True)


def csrf_ok(session: Session, presented: object) -> bool:
    return (
        not session.fresh
        and isinstance(presented, str)
        and bool(presented)
        and hmac.compare_digest(presented.encode(), session.csrf.encode())
    )
