"""Provider profiles: named model endpoints of the deployment (wire, base URL, key from the
environment, extra headers and query parameters, timeouts, allowed models) and their
shared limits. A run names a profile as `model.provider`; the built-in names (`openai`,
`openai_responses`, `anthropic`, `scripted`) are default profiles made from the
deployment's settings, and a configured profile of the same name replaces one.

(The shapes are fixed here for the worker's flow control, `app.worker.flow`; loading and
validation from configuration are `load_profiles`.)
"""

from __future__ import annotations

import os
import unicodedata
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from app.settings import Settings

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


# --- loading ---------------------------------------------------------------------------

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


def builtin_profiles(settings: Settings) -> dict[str, Profile]:
    """The default profiles, from the settings the service always had (`OPENAI_API_KEY`,
    `OPENAI_BASE_URL`, `ANTHROPIC_API_KEY`, `ANTHROPIC_BASE_URL`)."""
    openai_url = settings.openai_base_url or OPENAI_DEFAULT_BASE_URL
    return {
        "openai": Profile(
            "openai",
            "openai_chat",
            base_url=openai_url,
            api_key_env="OPENAI_API_KEY",
            api_key=settings.openai_api_key,
        ),
        "openai_responses": Profile(
            "openai_responses",
            "openai_responses",
            base_url=openai_url,
            api_key_env="OPENAI_API_KEY",
            api_key=settings.openai_api_key,
        ),
        "anthropic": Profile(
            "anthropic",
            "anthropic",
            base_url=settings.anthropic_base_url or ANTHROPIC_DEFAULT_BASE_URL,
            api_key_env="ANTHROPIC_API_KEY",
            auth="x-api-key",
            api_key=settings.anthropic_api_key,
        ),
        "scripted": Profile("scripted", "scripted", auth="none"),
    }


def load_profiles(
    settings: Settings,
    *,
    require_keys: bool = True,
    environ: Mapping[str, str] | None = None,
) -> Profiles:
    """The built-in profiles with the configured ones over them (`AGENTRUN_PROVIDERS_FILE`,
    a TOML file, then `AGENTRUN_PROVIDERS`, the same document as JSON: an entry of the
    environment replaces the file's entry of that name). `require_keys`: a profile's key
    variable must be set (processes that call providers); raises `ProfileError`."""
    from app.providers.profile_config import parse_documents

    env = os.environ if environ is None else environ
    documents: list[tuple[str, str, bool]] = []
    if settings.providers_file:
        try:
            with open(settings.providers_file, encoding="utf-8") as f:
                documents.append((settings.providers_file, f.read(), True))
        except OSError as exc:
            raise ProfileError(
                f"AGENTRUN_PROVIDERS_FILE: cannot read {settings.providers_file}: {exc.strerror}"
            ) from exc
        except UnicodeDecodeError as exc:
            raise ProfileError(
                f"AGENTRUN_PROVIDERS_FILE: {settings.providers_file} is not UTF-8 text "
                f"(byte {exc.start})"
            ) from None
    if settings.providers:
        documents.append(("AGENTRUN_PROVIDERS", settings.providers, False))
    profiles = builtin_profiles(settings)
    profiles.update(parse_documents(documents, profiles, env, require_keys=require_keys))
    return Profiles(profiles)


_ACTIVE: Profiles | None = None
_OF_SETTINGS: dict[int, tuple[Settings, Profiles]] = {}


def profiles_of(settings: Settings) -> Profiles:
    """`load_profiles(settings)` once per settings object (a process has one)."""
    known = _OF_SETTINGS.get(id(settings))
    if known is not None and known[0] is settings:
        return known[1]
    profiles = load_profiles(settings)
    _OF_SETTINGS[id(settings)] = (settings, profiles)
    return profiles


def install(profiles: Profiles | None) -> None:
    """Make `profiles` the ones run creation checks `model.provider` against (the process's
    start-up does, with its settings' profiles; None: the environment's again)."""
    global _ACTIVE
    _ACTIVE = profiles


def active() -> Profiles:
    """The process's profiles: those installed at start, else the environment's."""
    if _ACTIVE is None:
        from app.settings import get_settings

        install(load_profiles(get_settings(), require_keys=False))
    assert _ACTIVE is not None
    return _ACTIVE
