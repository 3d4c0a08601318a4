"""A tenant's daily limits as the worker reads them: cached, one read per lapse."""

from __future__ import annotations

import asyncio
from typing import Any

from app.clock import SYSTEM_CLOCK
from app.limits.rules import CachedTenantLimits


class Limits:
    def __init__(self, doc: dict[str, Any]) -> None:
        self.doc = doc

    def stored(self) -> dict[str, Any]:
        return self.doc


class CountingTenants:
    """Tenants whose limits read takes a moment and is counted."""

    def __init__(self) -> None:
        self.reads = 0
        self.release = asyncio.Event()

    async def limits_of(self, tenant: str) -> Limits:
        self.reads += 1
        await self.release.wait()
        return Limits({"daily_cost_usd": 5.0, "max_runs": 3, "tenant": tenant})


async def test_callers_at_a_lapse_share_one_read() -> None:
    tenants = CountingTenants()
    cache = CachedTenantLimits(tenants, seconds=60, clock=SYSTEM_CLOCK)  # type: ignore[arg-type]
    callers = [asyncio.ensure_future(cache("acme")) for _ in range(8)]
    await asyncio.sleep(0)
    tenants.release.set()
    got = await asyncio.gather(*callers)
    assert tenants.reads == 1
    assert got == [{"daily_cost_usd": 5.0}] * 8  # (the daily limits only)
    assert await cache("acme") == {"daily_cost_usd": 5.0} and tenants.reads == 1
    await cache("other")
    assert tenants.reads == 2  # (a read per tenant)


async def test_a_lapsed_entry_is_read_again_and_a_caller_that_gives_up_leaves_it() -> None:
    tenants = CountingTenants()
    cache = CachedTenantLimits(tenants, seconds=0, clock=SYSTEM_CLOCK)  # type: ignore[arg-type]
    impatient = asyncio.ensure_future(cache("acme"))
    patient = asyncio.ensure_future(cache("acme"))
    await asyncio.sleep(0)
    impatient.cancel()
    tenants.release.set()
    assert await patient == {"daily_cost_usd": 5.0}
    assert tenants.reads == 1
    await cache("acme")  # (lapsed at once: read again)
    assert tenants.reads == 2
