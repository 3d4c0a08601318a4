"""Provider profiles: named model endpoints of the deployment (wire, base URL, key from the
environment, extra headers and query parameters, timeouts, allowed models) and their
shared limits. A run names a profile as `model.provider`; the built-in names (`openai`,
`openai_responses`, `anthropic`, `scripted`) are default profiles made from the
deployment's settings, and a configured profile of the same name replaces one.

(The shapes are fixed here for the worker's flow control, `app.worker.flow`; loading and
validation from configuration are `load_profiles`.)
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Literal

Wire = Literal["openai_chat", "openai_responses", "anthropic", "scripted"]
Auth = Literal["bearer", "api-key", "x-api-key", "none"]


@dataclass(frozen=True, slots=True)
class RateLimits:
    """Limits shared by every worker (enforced in the database): requests and tokens per
    minute (a token bucket refilled continuously, holding at most a minute's worth) and
    model calls in flight at once. None: not limited."""

    requests_per_minute: int | None = None
    tokens_per_minute: int | None = None
    max_concurrent: int | None = None

    def empty(self) -> bool:
        return (
            self.requests_per_minute is None
            and self.tokens_per_minute is None
            and self.max_concurrent is None
        )


@dataclass(frozen=True, slots=True)
class Profile:
    """One named endpoint. `models`: the model names a run may ask for (None: any);
    `limits` hold over all of the profile's calls, `model_limits[name]` over one model's."""

    name: str
    wire: Wire
    base_url: str | None = None
    api_key_env: str | None = None
    auth: Auth = "bearer"
    headers: Mapping[str, str] = field(default_factory=dict)
    query: Mapping[str, str] = field(default_factory=dict)
    timeout_seconds: float | None = None
    models: frozenset[str] | None = None
    limits: RateLimits = RateLimits()
    model_limits: Mapping[str, RateLimits] = field(default_factory=dict)

    def allows(self, model: str) -> bool:
        return self.models is None or model in self.models

    def limits_of(self, model: str) -> RateLimits:
        return self.model_limits.get(model, RateLimits())


class Profiles:
    """The deployment's profiles by name."""

    def __init__(self, profiles: Mapping[str, Profile]) -> None:
        self._by_name = dict(profiles)

    def get(self, name: str) -> Profile | None:
        return self._by_name.get(name)

    def names(self) -> list[str]:
        return sorted(self._by_name)

    def __iter__(self) -> Iterator[Profile]:
        return iter(self._by_name.values())

    def limited(self) -> bool:
        """Any shared limit configured at all (none: flow control costs nothing)."""
        return any(
            not p.limits.empty() or any(not m.empty() for m in p.model_limits.values())
            for p in self
        )
