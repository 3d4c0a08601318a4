"""API keys: who a presented bearer key is (`Authenticator`), and the actor tag the event
log records for it. Shared by the API's bearer check and the dashboard's login.

`EnvKeys` knows the keys of AGENTRUN_API_KEYS: each is an admin of the default tenant.
"""

from __future__ import annotations

import hashlib
import hmac
from typing import Protocol

from app.service.access import DEFAULT_TENANT, OPEN_MODE, Principal, Role


def key_matches(presented: str, keys: list[str]) -> bool:
    """Compare against every key, always, in constant time."""
    found = False
    for key in keys:
        found |= hmac.compare_digest(presented.encode(), key.encode())
    return found


def actor_of(key: str | None) -> str:
    """Who did it, for the event log: a short, non-reversible tag of the key."""
    if key is None:
        return "open-mode"
    return "key:" + hashlib.sha256(key.encode()).hexdigest()[:12]


class Authenticator(Protocol):
    """Resolves a presented bearer secret to a caller."""

    async def open_mode(self) -> bool:
        """True when no key exists at all: every caller is `OPEN_MODE` (loopback only)."""
        ...

    async def authenticate(self, presented: str) -> Principal | None:
        """The caller `presented` identifies, or None when it is no valid key."""
        ...


class EnvKeys:
    """The keys of AGENTRUN_API_KEYS: admins of the default tenant."""

    def __init__(self, keys: list[str]) -> None:
        self.keys = keys

    async def open_mode(self) -> bool:
        return not self.keys

    async def authenticate(self, presented: str) -> Principal | None:
        if not self.keys:
            return OPEN_MODE
        if not presented or not key_matches(presented, self.keys):
            return None
        return Principal(DEFAULT_TENANT, Role.ADMIN, actor_of(presented))
