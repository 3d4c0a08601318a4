"""API keys: whether a presented key is one of the configured ones, and the actor tag the
event log records for it. Shared by the API's bearer check and the dashboard's login."""

from __future__ import annotations

import hashlib
import hmac


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
