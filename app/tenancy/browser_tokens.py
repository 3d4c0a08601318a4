"""Browser tokens: short-lived signed tokens a backend mints for its frontend, so that a
browser can follow one run (its events, JSON and SSE, its wait and its messages) without
holding an API key.

A token is signed, not stored (HMAC-SHA256 through itsdangerous, under a service-wide key
kept in the database, `RunReads.shared_secret`): every API process verifies one without a
lookup, and there is nothing to revoke, which is why a token lives 24 h at most. It
carries the tenant of the key that minted it, the run id and the expiry, and stands for a
`Principal` of role viewer confined to that run (`app.api.security.authorize`).
`BrowserTokenSigner` is what the kernel verifies them through (its `RunTokens`).

The prefix `arb_` lets `authenticate` tell a token from an API key without trying both,
and lets the log redaction (`app.logs`) recognise one wherever it appears.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

from itsdangerous import BadSignature, URLSafeSerializer

from app.clock import Clock
from app.service.principals import BrowserTokenInvalid, Principal
from app.tenancy.access import Role, principal_of

PREFIX = "arb_"
#: The name of the signing key in the service secrets (never the dashboard's key).
SECRET_NAME = "browser_token_key"
SALT = "agentrun-browser-token"
DEFAULT_TTL_SECONDS = 15 * 60
MAX_TTL_SECONDS = 24 * 3600
#: What the event log records of a token's caller (it never acts: the token is read only).
ACTOR_PREFIX = "browser:"


def is_browser_token(presented: str) -> bool:
    return presented.startswith(PREFIX)


def principal_for(tenant: str, run_id: str) -> Principal:
    """The caller a token for `run_id` stands for: a viewer of that run only."""
    return principal_of(tenant, Role.VIEWER, ACTOR_PREFIX + run_id, run_id=run_id)


class BrowserTokens:
    """Mints and verifies tokens under one key; expiry is `clock`'s epoch seconds."""

    def __init__(self, key: str, clock: Clock) -> None:
        self._signer = URLSafeSerializer(key, salt=SALT)
        self._clock = clock

    def mint(self, tenant: str, run_id: str, ttl_seconds: int) -> tuple[str, datetime]:
        """A token for `run_id` of `tenant`, valid `ttl_seconds`; and when it expires."""
        if not 1 <= ttl_seconds <= MAX_TTL_SECONDS:
            raise ValueError(f"ttl_seconds must be within 1..{MAX_TTL_SECONDS}")
        expires = int(self._clock.epoch()) + ttl_seconds
        body = self._signer.dumps({"t": tenant, "r": run_id, "e": expires})
        return PREFIX + body, datetime.fromtimestamp(expires, UTC)

    def verify(self, presented: str) -> Principal:
        """The principal of a valid token; `BrowserTokenInvalid` (401) for a token that is
        malformed, not signed by this service, or expired."""
        if not is_browser_token(presented):
            raise BrowserTokenInvalid("this is not a browser token")
        try:
            data: Any = self._signer.loads(presented[len(PREFIX) :])
        except BadSignature:
            raise BrowserTokenInvalid("the browser token is not valid") from None
        if not (
            isinstance(data, dict)
            and isinstance(data.get("t"), str)
            and isinstance(data.get("r"), str)
            and isinstance(data.get("e"), int)
        ):
            raise BrowserTokenInvalid("the browser token is not valid")
        if self._clock.epoch() >= data["e"]:
            raise BrowserTokenInvalid("the browser token has expired; mint a new one")
        return principal_for(data["t"], data["r"])


class BrowserTokenSigner:
    """The process's browser tokens (`app.service.principals.RunTokens`): the signer is
    built at first use from the key `secret(SECRET_NAME)` reads (`RunReads.shared_secret`),
    then shared by every request of the process."""

    def __init__(self, secret: Callable[[str], Awaitable[str]], clock: Clock) -> None:
        self._secret = secret
        self._clock = clock
        self._signer: BrowserTokens | None = None

    async def signer(self) -> BrowserTokens:
        if self._signer is None:
            self._signer = BrowserTokens(await self._secret(SECRET_NAME), self._clock)
        return self._signer

    def recognises(self, presented: str) -> bool:
        return is_browser_token(presented)

    async def verify(self, presented: str) -> Principal:
        return (await self.signer()).verify(presented)
