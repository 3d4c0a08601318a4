"""Provider profiles: named model endpoints of the deployment (wire, base URL, key from the
environment, extra headers and query parameters, timeouts, allowed models) and their
shared limits. A run names a profile as `model.provider`; the built-in names (`openai`,
`openai_responses`, `anthropic`, `scripted`) are default profiles made from the
deployment's settings, and a configured profile of the same name replaces one.

(The shapes are `app.providers.profile_shapes`, re-exported here; loading and validation
from configuration are `load_profiles`, over `app.providers.profile_config`.)
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

from app.providers.profile_config import parse_documents
from app.providers.profile_shapes import (
    ANTHROPIC_DEFAULT_BASE_URL,
    DEFAULT_AUTH,
    OPENAI_DEFAULT_BASE_URL,
    PARAM_TABLE,
    Auth,
    Profile,
    ProfileError,
    Profiles,
    RateLimits,
    Wire,
)

if TYPE_CHECKING:
    from app.settings import Settings

__all__ = [
    "ANTHROPIC_DEFAULT_BASE_URL",
    "DEFAULT_AUTH",
    "OPENAI_DEFAULT_BASE_URL",
    "PARAM_TABLE",
    "Auth",
    "Profile",
    "ProfileError",
    "Profiles",
    "RateLimits",
    "Wire",
    "active",
    "builtin_profiles",
    "install",
    "load_profiles",
    "profiles_of",
]


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
