"""The shapes of the provider profiles (`app.providers.profiles`): a profile, its shared
limits, the deployment's set of them. Apart from their loading, so that the profile
document (`app.providers.profile_config`) and the loader (`app.providers.profiles`) both
build on them without importing each other.
"""

from __future__ import annotations

import unicodedata
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
    #: The key read from `api_key_env` at start: in memory only, never stored or shown.
    api_key: str | None = field(default=None, repr=False, compare=False)

    @property
    def param_table(self) -> str:
        """The parameter table a run's params are checked against (`app.providers.params`)."""
        return PARAM_TABLE[self.wire]

    def allows(self, model: str) -> bool:
        return self.models is None or model in self.models

    def in_path(self, model: str) -> bool:
        """`model` stays one path segment of a `{model}` base URL. URL-quoted it does for the
        HTTP client but for "." and ".." (which it resolves to another path of the host);
        `/` and `\\` (also as NFKC forms, `．．`) are refused too, for a proxy that decodes
        `%2F` or normalises before it resolves dot segments."""
        if "{model}" not in (self.base_url or ""):
            return True
        folded = unicodedata.normalize("NFKC", model)
        return folded not in (".", "..") and not any(c in folded for c in "/\\")

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

    def param_table_of(self, name: str) -> str:
        """The parameter table of the profile `name` (its wire's: how its requests carry
        the output cap, which params are not input); an unknown name stands for itself."""
        profile = self.get(name)
        return profile.param_table if profile is not None else name

    def limited(self) -> bool:
        """Any shared limit configured at all (none: flow control costs nothing)."""
        return any(
            not p.limits.empty() or any(not m.empty() for m in p.model_limits.values())
            for p in self
        )


#: The wire's parameter table (`app.providers.params.TABLES`): what a run's params are
#: checked against.
PARAM_TABLE: dict[str, str] = {
    "openai_chat": "openai",
    "openai_responses": "openai_responses",
    "anthropic": "anthropic",
    "scripted": "scripted",
}
#: The auth a configured profile gets when it names none.
DEFAULT_AUTH: dict[str, Auth] = {
    "openai_chat": "bearer",
    "openai_responses": "bearer",
    "anthropic": "x-api-key",
    "scripted": "none",
}
OPENAI_DEFAULT_BASE_URL = "https://api.openai.com/v1"
ANTHROPIC_DEFAULT_BASE_URL = "https://api.anthropic.com"


class ProfileError(ValueError):
    """A provider configuration the service refuses to start with; the message names the
    entry (`profiles.local-vllm.limits.requests_per_minute: ...`)."""
