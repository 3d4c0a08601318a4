"""What the budget work adds to a lifecycle that uses no budget, in CPU: the code it runs
per create (the price lookup of `checked_limits`) and per model call (`before_call` for a
run without limits of a tenant without any, its limits cached; `priced_call`;
`billed_usage` with its two new counters), against the code it replaced (`usage_of` +
`cost_of` over AGENTRUN_PRICES, the old `billed_usage`), timed in one process,
alternated, median of `--repeat` samples.

A lifecycle of `bench/lifecycle.py` makes one create and two model calls.

Run: `.venv/bin/python bench/budget_check.py [--n 20000] [--repeat 7]`
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from app.clock import SYSTEM_CLOCK, FakeClock  # noqa: E402
from app.core import Text, Usage, UserMessage  # noqa: E402
from app.limits.budgets import Budgets  # noqa: E402
from app.limits.rules import CachedTenantLimits  # noqa: E402
from app.limits.run_limits import RunLimitsService  # noqa: E402
from app.providers.base import ModelRequest, ProviderTurn  # noqa: E402
from app.service.prices import PriceBook  # noqa: E402
from app.settings import Settings  # noqa: E402
from app.store.run_records import NewEvent, RunRecord  # noqa: E402
from app.tenancy.tenants import TenantLimits  # noqa: E402
from app.worker.billing import billed_usage, priced_call  # noqa: E402

SPEC = {"provider": "scripted", "name": "demo"}
TURN = ProviderTurn(choice=(Text("ok"),), usage=Usage(10, 5, 15))


def old_cost_of(
    prices: Mapping[str, Mapping[str, float]], spec: Mapping[str, Any], turn: ProviderTurn
) -> float | None:
    price = prices.get(f"{spec['provider']}:{spec['name']}")
    if price is None:
        return None
    return 0.0


def old_usage_of(turn: ProviderTurn) -> dict[str, int]:
    u = turn.usage
    return {
        "input_tokens": u.input_tokens,
        "output_tokens": u.output_tokens,
        "total_tokens": u.total_tokens,
        "cached_input_tokens": u.cached_input_tokens,
        "reasoning_tokens": u.reasoning_tokens,
    }


def old_billed(usage: Mapping[str, Any] | None, events: list[NewEvent]) -> dict[str, Any] | None:
    calls = [e.data.get("usage") or {} for e in events if e.type == "model.called"]
    if not calls:
        return None
    total = dict(usage or {})
    for call in calls:
        for key, value in call.items():
            if isinstance(value, int):
                total[key] = int(total.get(key) or 0) + value
    return total


def record() -> RunRecord:
    now = datetime.now(UTC)
    return RunRecord(
        id="run_x", status="running", state="{}", schema_version=2, version=2,  # type: ignore[arg-type]
        lease_owner="w", lease_expires_at=now, attempts=1, model_attempts=0,
        model_retry_since=None, available_at=now, expires_at=None, idempotency_key=None,
        request_hash=None, config={"model": SPEC}, metadata={}, waiting=None, turn=0,
        max_turns=8, output=None, error=None, usage=None, last_event_seq=2, created_at=now,
        updated_at=now,
    )  # fmt: skip


async def old_path(n: int) -> float:
    prices: dict[str, dict[str, float]] = {}
    started = time.process_time()
    for _ in range(n):
        data = {"usage": old_usage_of(TURN), "cost_usd": old_cost_of(prices, SPEC, TURN)}
        old_billed(None, [NewEvent("model.called", data)])  # type: ignore[arg-type]
    return (time.process_time() - started) / n


async def new_path(n: int, budgets: Budgets, rec: RunRecord, request: ModelRequest) -> float:
    started = time.process_time()
    for _ in range(n):
        await budgets.before_call(rec, [], request)
        data = priced_call(budgets.prices, "scripted", "demo", TURN)
        billed_usage(None, [NewEvent("model.called", data)])  # type: ignore[arg-type]
    return (time.process_time() - started) / n


async def create_path(n: int, limits: RunLimitsService) -> float:
    started = time.process_time()
    for _ in range(n):
        await limits.checked_limits(SPEC, None)
    return (time.process_time() - started) / n


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=20000)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()

    class NoLimits:  # (a tenant without limits, as `Tenants.limits_of` answers it)
        async def limits_of(self, tenant: str) -> TenantLimits:
            return TenantLimits()

    rec = record()
    clock = FakeClock(rec.created_at)  # (the call's time: the run's creation, as before)
    prices = PriceBook({}, clock=clock)
    tenants = CachedTenantLimits(NoLimits(), clock=clock)  # type: ignore[arg-type]
    budgets = Budgets(prices, 4096, {}, tenants, clock=clock)
    settings = Settings(database_url="sqlite:///unused.db")
    limits = RunLimitsService(None, settings, prices, SYSTEM_CLOCK)  # type: ignore[arg-type]
    request = ModelRequest(model="demo", prompt=UserMessage((Text("hi"),)))
    old, new, create = [], [], []
    for _ in range(args.repeat):
        old.append(await old_path(args.n))
        new.append(await new_path(args.n, budgets, rec, request))
        create.append(await create_path(args.n, limits))
    per_call = statistics.median(new) - statistics.median(old)
    per_lifecycle = 2 * per_call + statistics.median(create)
    print(f"per model call: old {statistics.median(old) * 1e6:.2f} µs, "
          f"new {statistics.median(new) * 1e6:.2f} µs (+{per_call * 1e6:.2f} µs)")  # fmt: skip
    print(f"per create: checked_limits {statistics.median(create) * 1e6:.2f} µs")
    print(f"per lifecycle (1 create, 2 calls): +{per_lifecycle * 1e6:.2f} µs of CPU")


if __name__ == "__main__":
    asyncio.run(main())
