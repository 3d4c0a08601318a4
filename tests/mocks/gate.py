"""Model calls held until the test lets them go.

A test that needs a run still busy when it looks holds the run's model call here, not
with a `delay_ms` that may run out under load before the test looks. The gate wraps the
deployment's own providers (the scripted one, usually): a held call waits, then answers
as that provider would. Thread-safe: the worker may run in the test's event loop or in a
server's thread (`patch`); the waits are paced loops on a `threading.Event`.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator, Mapping
from typing import Any

import pytest

from app.clock import SYSTEM_CLOCK, Clock
from app.providers.base import ModelRequest, Provider, ProviderTurn, StreamItem
from app.settings import Settings
from app.worker import providers as worker_providers
from app.worker.driver import ProviderFactory

#: How long a held call waits at most: a test that forgot to release fails, not hangs.
HOLD_SECONDS = 120.0


class Gate:
    """Holds the first `holds` model calls (None: every call) until `release()`."""

    def __init__(self, holds: int | None = None) -> None:
        self.holds = holds
        self.released = threading.Event()
        self.lock = threading.Lock()
        self.arrived = threading.Condition(self.lock)  # (notified as a call is held)
        self.calls = 0  # calls that entered the gate
        self.held = 0  # of which held (till released)

    def providers(self, settings: Settings) -> ProviderFactory:
        """A `Worker(providers=...)` whose calls pass this gate."""
        return lambda spec: GatedProvider(
            worker_providers.make_provider(spec, settings, clock=SYSTEM_CLOCK), self
        )

    def patch(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Every worker made from now on (those of an app's lifespan too) uses this gate."""
        make = worker_providers.make_provider

        def gated(
            spec: Mapping[str, Any], settings: Settings, profiles: Any = None, *, clock: Clock
        ) -> Provider:
            return GatedProvider(make(spec, settings, profiles, clock=clock), self)

        monkeypatch.setattr("app.worker.worker.make_provider", gated)

    def release(self) -> None:
        self.released.set()

    async def holding(self, count: int = 1, timeout: float = 30.0) -> None:
        """Once `count` calls are held at the gate."""
        deadline = time.monotonic() + timeout
        while self.held < count:
            if time.monotonic() > deadline:
                raise AssertionError(f"only {self.held} of {count} model calls came to the gate")
            await asyncio.sleep(0.01)

    def wait_held(self, count: int = 1, timeout: float = 30.0) -> None:
        """Once `count` calls are held at the gate, from a thread that is not the worker's
        (a sync test beside a server in its own thread)."""
        with self.arrived:
            if not self.arrived.wait_for(lambda: self.held >= count, timeout):
                raise AssertionError(f"only {self.held} of {count} model calls came to the gate")

    async def enter(self) -> None:
        with self.lock:
            self.calls += 1
            hold = self.holds is None or self.calls <= self.holds
            self.held += int(hold)
            self.arrived.notify_all()
        if not hold:
            return
        deadline = time.monotonic() + HOLD_SECONDS
        while not self.released.is_set():
            if time.monotonic() > deadline:
                raise AssertionError("a model call held at the gate was never released")
            await asyncio.sleep(0.01)


class GatedProvider:
    """`inner`, whose every call passes `gate` first."""

    def __init__(self, inner: Provider, gate: Gate) -> None:
        self.inner = inner
        self.name = inner.name
        self.gate = gate

    async def complete(self, request: ModelRequest) -> ProviderTurn:
        await self.gate.enter()
        return await self.inner.complete(request)

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamItem]:
        await self.gate.enter()
        async for item in self.inner.stream(request):
            yield item
