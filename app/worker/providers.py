"""Provider construction from a run's model spec and the deployment's settings."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from app.providers.base import Provider
from app.providers.scripted import ScriptedProvider
from app.settings import Settings


def make_provider(spec: Mapping[str, Any], settings: Settings) -> Provider:
    """Credentials and base URLs come from the deployment, never from the run."""
    if spec["provider"] == "scripted":
        return ScriptedProvider(spec)
    from app.providers.registry import provider_from_settings

    return provider_from_settings(
        spec["provider"],
        openai_api_key=settings.openai_api_key,
        openai_base_url=settings.openai_base_url,
        anthropic_api_key=settings.anthropic_api_key,
        anthropic_base_url=settings.anthropic_base_url,
        timeout=settings.provider_timeout,
    )
