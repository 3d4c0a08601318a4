"""Budgets: what a run (and its tenant, and the deployment, per UTC day) may spend, and the
check the worker makes BEFORE each model call (`check`).

A call is allowed only if what it could add at most fits every limit in force: its input
(an upper estimate, `app.limits.budgets.input_estimate`) plus its output cap. The cap is
clamped down to what the limits leave (`Allowance.cap`), so the provider itself stops the
answer before it passes a limit: the bill can never be more than what was checked. A call
that cannot fit even its smallest useful answer (`min_output` tokens) is not made: the run
suspends with a `Budget` waiting reason naming the limit.

Pure: no IO; the caller gives what was spent (the run's `usage`, the day's totals).
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from app.clock import Clock
from app.service.prices import Price
from app.service.schemas import RunLimits
from app.service.tenant_limits import TenantLimitsSource
from app.store.waiting import Budget

#: What a call's cost is checked with beyond its arithmetic: each call's cost is rounded
#: to 1e-8 USD on the ledger, so a budget keeps this much per call in hand.
COST_EPSILON = 1e-8


@dataclass(frozen=True, slots=True)
class Spent:
    """What the run (or the day, for a daily limit) has spent so far."""

    tokens: int = 0
    cost_usd: float = 0.0
    calls: int = 0
    seconds: float = 0.0


@dataclass(frozen=True, slots=True)
class Ceiling:
    """One limit in force: its name, whose it is (`run`, `tenant`, `deployment`), and the
    allowed amount."""

    limit: str
    scope: str
    allowed: float


@dataclass(frozen=True, slots=True)
class Allowance:
    """The call may go ahead with at most `cap` output tokens (None: no limit bounds the
    output; the request keeps its own cap)."""

    cap: int | None


def ceilings(limits: Mapping[str, Any] | None, scope: str = "run") -> list[Ceiling]:
    """The limits in force of a stored `limits` document (a run's, or a day's)."""
    return [Ceiling(k, scope, float(v)) for k, v in (limits or {}).items() if v is not None]


def check(
    ceilings: list[tuple[Ceiling, Spent]],
    input_tokens: int,
    price: Price | None,
    min_output: int = 1,
) -> Allowance | Budget:
    """May a call with (at most) `input_tokens` of input go ahead under every ceiling
    given with what was spent against it, and with how many output tokens at most? A
    cost ceiling with no price is a refusal (create refuses that; a price removed since
    counts as nothing left to check against)."""
    cap: int | None = None
    for ceiling, spent in ceilings:
        left: int | None = None
        name = ceiling.limit
        if name == "max_model_calls":
            if spent.calls + 1 > ceiling.allowed:
                return _over(ceiling, spent.calls, spent.calls + 1)
        elif name == "max_duration_seconds":
            if spent.seconds >= ceiling.allowed:
                return _over(ceiling, round(spent.seconds, 3), round(spent.seconds, 3))
        elif name in ("max_total_tokens", "daily_tokens"):
            left = int(ceiling.allowed) - spent.tokens - input_tokens
            if left < min_output:
                return _over(ceiling, spent.tokens, spent.tokens + input_tokens + min_output)
        elif name in ("max_cost_usd", "daily_cost_usd"):
            needed = None if price is None else _cost_left(ceiling, spent, input_tokens, price)
            if needed is None or needed[0] < min_output:
                least = (
                    None
                    if price is None
                    else round(spent.cost_usd + price.cost(input_tokens, min_output), 8)
                )
                return _over(ceiling, round(spent.cost_usd, 8), least)
            left = needed[0]
        if left is not None:
            cap = left if cap is None else min(cap, left)
    return Allowance(cap)


def _cost_left(
    ceiling: Ceiling, spent: Spent, input_tokens: int, price: Price
) -> tuple[int] | None:
    """How many output tokens the money left pays for, after the input (its tier's rate);
    checked with the price itself so rounding never lets the call pass the limit."""
    money = ceiling.allowed - spent.cost_usd - COST_EPSILON
    base = price.cost(input_tokens, 0)
    if base > money:
        return (-1,)
    rate = price.output_rate(input_tokens)
    if rate <= 0:
        return (10**15,)
    n = max(0, math.floor((money - base) / rate))
    while n > 0 and price.cost(input_tokens, n) > money:
        n -= max(1, n // 1000)
    return (n,)


def _over(ceiling: Ceiling, spent: float, needed: float | None) -> Budget:
    allowed: float = float(ceiling.allowed)
    if allowed.is_integer() and "cost" not in ceiling.limit:
        allowed = int(allowed)
    return Budget(ceiling.limit, spent, allowed, ceiling.scope, needed)


#: How long a process trusts what it read of a tenant's limits (and of a day's totals).
CACHE_SECONDS = 1.0
DAILY = ("daily_tokens", "daily_cost_usd")


class CachedTenantLimits:
    """A tenant's daily limits, trusted for `seconds` (as `DbKeys` trusts a key): a run
    of a tenant with none costs a dictionary read per model call. When the entry lapses,
    one read refreshes it for every caller that asks meanwhile (a worker's slots all
    reach the lapse together)."""

    def __init__(
        self, tenants: TenantLimitsSource, seconds: float = CACHE_SECONDS, *, clock: Clock
    ) -> None:
        self.tenants = tenants
        self.seconds = seconds
        self.clock = clock
        self._cache: dict[str, tuple[float, Mapping[str, Any]]] = {}
        self._reading: dict[str, asyncio.Future[Mapping[str, Any]]] = {}

    async def __call__(self, tenant: str) -> Mapping[str, Any]:
        cached = self._cache.get(tenant)
        if cached is not None and cached[0] > self.clock.monotonic():
            return cached[1]
        reading = self._reading.get(tenant)
        if reading is None:
            reading = self._reading[tenant] = asyncio.ensure_future(self._read(tenant))
            reading.add_done_callback(lambda _: self._reading.pop(tenant, None))
        return await asyncio.shield(reading)  # (a caller that gives up leaves the read)

    async def _read(self, tenant: str) -> Mapping[str, Any]:
        limits = (await self.tenants.limits_of(tenant)).stored()
        daily = {k: v for k, v in limits.items() if k in DAILY}
        self._cache[tenant] = (self.clock.monotonic() + self.seconds, daily)
        return daily


__all__ = ["Budget", "RunLimits"]
