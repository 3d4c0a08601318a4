"""Provider construction from deployment settings and provider profiles.

Base URLs and API keys come only from here (environment / deployment configuration):
a run's request body names a provider (a profile) and a model, never a host or a key, so a
client cannot redirect the service's keys to its own server.
"""

from __future__ import annotations

from urllib.parse import quote

from app.clock import Clock
from app.providers.anthropic import AnthropicProvider
from app.providers.base import Provider
from app.providers.openai_chat import OpenAIChatProvider
from app.providers.openai_responses import OpenAIResponsesProvider
from app.providers.profiles import ANTHROPIC_DEFAULT_BASE_URL, OPENAI_DEFAULT_BASE_URL, Profile
from app.providers.transport import HttpProvider

__all__ = [
    "ANTHROPIC_DEFAULT_BASE_URL",
    "OPENAI_DEFAULT_BASE_URL",
    "PROVIDER_NAMES",
    "WIRES",
    "provider_for_profile",
    "provider_from_settings",
]

#: A profile's wire → its adapter.
WIRES: dict[str, type[HttpProvider]] = {
    "openai_chat": OpenAIChatProvider,
    "openai_responses": OpenAIResponsesProvider,
    "anthropic": AnthropicProvider,
}

#: Accepted provider names → wire. "openai" is Chat Completions, the wire every
#: OpenAI-compatible server speaks; the Responses API is opt-in.
PROVIDER_NAMES = {
    "openai": "openai_chat",
    "openai_chat": "openai_chat",
    "openai-chat": "openai_chat",
    "openai_responses": "openai_responses",
    "openai-responses": "openai_responses",
    "anthropic": "anthropic",
}


def provider_from_settings(
    name: str,
    *,
    openai_api_key: str | None = None,
    openai_base_url: str | None = None,
    anthropic_api_key: str | None = None,
    anthropic_base_url: str | None = None,
    timeout: float = 60.0,
) -> HttpProvider:
    """The adapter for provider `name`, configured from deployment settings.

    A missing key is allowed (local OpenAI-compatible servers need none); the provider then
    answers 401 and the run fails with that error. Unknown names raise `ValueError`
    (the scripted provider is built elsewhere).
    """
    wire = PROVIDER_NAMES.get(name)
    if wire == "openai_chat":
        return OpenAIChatProvider(
            base_url=openai_base_url or OPENAI_DEFAULT_BASE_URL,
            api_key=openai_api_key,
            timeout=timeout,
        )
    if wire == "openai_responses":
        return OpenAIResponsesProvider(
            base_url=openai_base_url or OPENAI_DEFAULT_BASE_URL,
            api_key=openai_api_key,
            timeout=timeout,
        )
    if wire == "anthropic":
        return AnthropicProvider(
            base_url=anthropic_base_url or ANTHROPIC_DEFAULT_BASE_URL,
            api_key=anthropic_api_key,
            timeout=timeout,
        )
    raise ValueError(f"unknown provider {name!r}; expected one of {sorted(PROVIDER_NAMES)}")


def provider_for_profile(
    profile: Profile, model: str, *, timeout: float = 60.0, clock: Clock
) -> HttpProvider:
    """The adapter for one run's model at `profile`: its base URL (`{model}` replaced by the
    model's name, URL-quoted: Azure deployments), key and auth scheme, extra headers, query
    parameters and timeout (the profile's, else `timeout`)."""
    adapter = WIRES.get(profile.wire)
    if adapter is None or profile.base_url is None:
        raise ValueError(f"profile {profile.name!r} ({profile.wire}) has no HTTP adapter")
    if not profile.in_path(model):  # (refused at create: `ModelSpec`)
        raise ValueError(f"the model name {model!r} is not a path segment of {profile.name!r}")
    return adapter(
        base_url=profile.base_url.replace("{model}", quote(model, safe="")),
        api_key=profile.api_key,
        timeout=profile.timeout_seconds or timeout,
        headers=dict(profile.headers),
        query=profile.query,
        auth=profile.auth,
        clock=clock,
    )


def _conforms(provider: HttpProvider) -> Provider:
    """Static check (mypy): every adapter implements the `Provider` protocol."""
    return provider
