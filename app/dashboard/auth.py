"""Dashboard sessions: a person signed in with a username and password, or an API key of
AGENTRUN_API_KEYS (or open mode); a signed HTTP-only SameSite=Lax cookie; a CSRF token
bound to the session.

The cookie is signed with a service-wide key kept in the database (every API process
shares it) and holds `{"csrf", "session"}` for a person or `{"csrf", "actor"}` for a key:
- a person's `session` is the secret of a row of `operator_sessions` (which stores only
  its hash, app.tenancy.operators); every request looks it up again, so a revoked or
  expired session, a disabled account or tenant is signed out on its next request, and a
  change of role applies at once;
- a key's `actor` is `actor_of(key)` (never the key), re-checked against the configured
  keys on every request, so removing a key from AGENTRUN_API_KEYS ends its sessions.
A visitor without a login still gets a session (no principal) so the login form has a
CSRF token too. `dashboard_principal` is who the request acts as: its tenant and role
decide what the pages show and which actions it may take.
"""

from __future__ import annotations

import hmac
import secrets
from dataclasses import dataclass
from typing import Any

from fastapi import Request
from itsdangerous import BadSignature, URLSafeTimedSerializer
from starlette.responses import Response

from app.service.principals import DEFAULT_TENANT, OPEN_MODE, Authenticator, Permission, Principal
from app.service.reads import RunReads
from app.tenancy.access import Role, principal_of
from app.tenancy.keys import actor_of, key_matches
from app.tenancy.operators import SESSION_TTL, OperatorService

COOKIE = "agentrun_admin"
COOKIE_PATH = "/admin"
MAX_AGE = int(SESSION_TTL.total_seconds())
CSRF_FIELD = "csrf_token"
SECRET_NAME = "dashboard_session_key"


class LoginRequired(Exception):
    """Raised by page dependencies; answered with a 303 to the login page."""

    def __init__(self, next_path: str) -> None:
        super().__init__(next_path)
        self.next_path = next_path


class CsrfRefused(Exception):
    """A POST without the session's CSRF token; answered with 403, nothing changed."""


class PermissionRefused(Exception):
    """The signed-in principal's role lacks `permission`; answered with 403."""

    def __init__(self, permission: Permission, principal: Principal) -> None:
        super().__init__(permission.value)
        self.permission = permission
        self.principal = principal


@dataclass(frozen=True, slots=True)
class Session:
    principal: Principal | None
    csrf: str
    fresh: bool = False  # not yet in a cookie: the response must set it
    secret: str | None = None  # a person's session secret (its row stores the hash)

    @property
    def logged_in(self) -> bool:
        return self.principal is not None

    @property
    def actor(self) -> str | None:
        return None if self.principal is None else self.principal.actor

    @property
    def role(self) -> str | None:
        return None if self.principal is None else self.principal.role

    def can(self, permission: Permission | str) -> bool:
        return self.principal is not None and self.principal.can(Permission(permission))


async def serializer(request: Request) -> URLSafeTimedSerializer:
    cached: URLSafeTimedSerializer | None = getattr(request.app.state, "dashboard_signer", None)
    if cached is None:
        reads: RunReads = request.app.state.reads
        key = await reads.shared_secret(SECRET_NAME)
        cached = URLSafeTimedSerializer(key, salt="agentrun-dashboard-session")
        request.app.state.dashboard_signer = cached
    return cached


def operators_of(request: Request) -> OperatorService:
    service: OperatorService = request.app.state.operators
    return service


async def open_mode(request: Request) -> bool:
    """No key exists at all (the API's open mode): the dashboard is open too."""
    authenticator: Authenticator = request.app.state.authenticator
    return await authenticator.open_mode()


def env_keys(request: Request) -> list[str]:
    keys: list[str] = request.app.state.settings.api_key_list
    return keys


async def key_principal(request: Request, actor: object) -> Principal | None:
    """Who a key session's `actor` is, while its key is configured (or open mode lasts)."""
    if not isinstance(actor, str):
        return None
    if actor == OPEN_MODE.actor:
        return OPEN_MODE if await open_mode(request) else None
    if actor in {actor_of(k) for k in env_keys(request)}:
        return principal_of(DEFAULT_TENANT, Role.ADMIN, actor)
    return None


async def load_session(request: Request) -> Session:
    """The request's session; a fresh anonymous one when the cookie is missing or forged,
    and one without a principal when what it names no longer stands."""
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
            secret = data.get("session")
            if isinstance(secret, str):
                principal = await operators_of(request).principal(secret)
                session = Session(principal, data["csrf"], secret=secret if principal else None)
            else:
                session = Session(await key_principal(request, data.get("actor")), data["csrf"])
    if session is None:
        session = Session(None, secrets.token_urlsafe(32), fresh=True)
    request.state.dashboard_session = session
    return session


async def dashboard_principal(request: Request) -> Principal:
    """Who the request acts as: the signed-in person or key (LoginRequired otherwise)."""
    session = await load_session(request)
    if session.principal is None:
        target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        raise LoginRequired(target)
    return session.principal


async def check_key(request: Request, presented: str) -> Principal | None:
    """Who logs in with the API key `presented` (a key of AGENTRUN_API_KEYS), or None
    when it is wrong. In open mode every login succeeds as `open-mode`."""
    if await open_mode(request):
        return OPEN_MODE
    keys = env_keys(request)
    presented = presented.strip()
    if not keys or not presented or not key_matches(presented, keys):
        return None
    return principal_of(DEFAULT_TENANT, Role.ADMIN, actor_of(presented))


async def check_person(request: Request, username: str, password: str) -> Session | None:
    """A new session for a person's right password, or None."""
    signed = await operators_of(request).sign_in(username, password)
    if signed is None:
        return None
    return Session(signed.principal, secrets.token_urlsafe(32), fresh=True, secret=signed.secret)


async def write_session(request: Request, response: Response, session: Session) -> None:
    signer = await serializer(request)
    data: dict[str, Any] = {"csrf": session.csrf}
    if session.secret is not None:
        data["session"] = session.secret
    else:
        data["actor"] = session.actor
    response.set_cookie(
        COOKIE,
        signer.dumps(data),
        max_age=MAX_AGE,
        path=COOKIE_PATH,
        httponly=True,
        samesite="lax",
        secure=request.url.scheme == "https",
    )


async def end_session(request: Request, response: Response, session: Session) -> None:
    """Log out: a person's session is revoked in the database, the cookie cleared."""
    if session.secret is not None:
        await operators_of(request).sign_out(session.secret)
    response.delete_cookie(COOKIE, path=COOKIE_PATH, httponly=True, samesite="lax")


def new_login(principal: Principal) -> Session:
    """A new key session (and CSRF token) at login: nothing from before it survives."""
    return Session(principal, secrets.token_urlsafe(32), fresh=True)


def csrf_ok(session: Session, presented: object) -> bool:
    return (
        not session.fresh
        and isinstance(presented, str)
        and bool(presented)
        and hmac.compare_digest(presented.encode(), session.csrf.encode())
    )
