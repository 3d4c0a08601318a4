"""Provider construction from a run's model spec and the deployment's settings; every
provider it makes counts its calls (`app.metrics`: by provider and outcome, latency)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any

from app import metrics
from app.clock import Clock
from app.providers.base import (
    ModelRequest,
    Provider,
    ProviderError,
    ProviderTurn,
    StreamItem,
    TurnComplete,
)
from app.providers.profiles import Profiles, profiles_of
from app.providers.scripted import ScriptedProvider
from app.settings import Settings


def make_provider(
    spec: Mapping[str, Any], settings: Settings, profiles: Profiles | None = None, *, clock: Clock
) -> Provider:
    """The adapter of the run's profile (`model.provider`; `profiles`: the settings' own,
    loaded once). Credentials and base URLs come from the deployment, never from the run."""
    name = spec["provider"]
    profile = (profiles or profiles_of(settings)).get(name)
    if profile is None:  # (a run created before its profile left the configuration)
        return Measured(Unconfigured(name), name, clock)
    if profile.wire == "scripted":
        return Measured(ScriptedProvider(spec), name, clock)
    from app.providers.registry import provider_for_profile

    try:
        provider = provider_for_profile(
            profile, spec["name"], timeout=settings.provider_timeout, clock=clock
        )
    except ValueError as exc:  # (a model its profile cannot reach, the profile changed since)
        return Measured(Unconfigured(name, str(exc)), name, clock)
    return Measured(provider, name, clock)


class Unconfigured:
    """The provider of a profile this deployment no longer has (or that cannot reach the
    run's model): each call fails the run (not retryable: configuration does not come back
    by waiting)."""

    def __init__(self, profile: str, why: str | None = None) -> None:
        self.name = profile
        self.error = ProviderError(
            why or f"no provider profile named {profile!r} is configured in this deployment",
            retryable=False,
            provider=profile,
        )

    async def complete(self, request: ModelRequest) -> ProviderTurn:
        raise self.error

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamItem]:
        raise self.error
        yield  # (an async generator, as the protocol's stream)


class Measured:
    """A provider whose calls are counted as the usage ledger counts them: an answer is
    `ok` (with its latency), a `ProviderError` is `error`; a call abandoned (the lease
    lost, a shutdown) is neither."""

    def __init__(self, inner: Provider, label: str, clock: Clock) -> None:
        self.inner = inner
        self.name = inner.name
        self.label = label
        self.clock = clock

    async def complete(self, request: ModelRequest) -> ProviderTurn:
        started = self.clock.monotonic()
        try:
            answer = await self.inner.complete(request)
        except ProviderError:
            metrics.model_call(self.label, False, self.clock.monotonic() - started)
            raise
        metrics.model_call(self.label, True, self.clock.monotonic() - started)
        return answer

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamItem]:
        started = self.clock.monotonic()
        answered = False
        items = self.inner.stream(request)
        try:
            async for item in items:
                if isinstance(item, TurnComplete):
                    answered = True
                    metrics.model_call(self.label, True, self.clock.monotonic() - started)
                yield item
        except ProviderError:
            metrics.model_call(self.label, False, self.clock.monotonic() - started)
            raise
        finally:
            aclose = getattr(items, "aclose", None)
            if aclose is not None:
                await aclose()
        if not answered:  # (the worker fails such a call: it ended without a turn)
            metrics.model_call(self.label, False, self.clock.monotonic() - started)
