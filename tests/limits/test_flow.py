"""Shared limits through the driver (app.limits.rates): a run over a limit is throttled back
to the queue with waiting reason `rate_limit` and its reserved turn, honours that turn
when it comes back, a provider's 429 slows every worker, and nothing is touched when no
limit applies."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from app.clock import SYSTEM_CLOCK, Clock, FakeClock
from app.core.lifecycle import RunStatus
from app.core.scope import Scope
from app.limits.budgets import Budgets
from app.limits.gates import model_gates
from app.limits.rates import PERMIT_SECONDS, Flow
from app.limits.rates_sql import Demand, FlowLimits, Grant
from app.limits.shared import shared
from app.limits.slots_sql import Slot
from app.providers.base import ProviderError
from app.providers.profiles import Profile, Profiles, RateLimits
from app.service.prices import PriceBook
from app.service.runs import RunService
from app.service.schemas import RunCreate
from app.service.tokens import new_key
from app.settings import Settings
from app.store.runs import RunStore
from app.worker.driver import RunDriver
from app.worker.lease import LeaseLost
from app.worker.providers import make_provider
from tests.helpers import run_body
from tests.mocks.replies import Reply
from tests.mocks.server import MockProviderServer
from tests.worker.test_model_params import wire_settings


def limited(provider: str, model: str, wire: Any = "scripted", **limits: int) -> Profiles:
    """Profiles limiting one model of `provider` (its own key: tests share databases)."""
    profile = Profile(provider, wire, model_limits={model: RateLimits(**limits)})
    return Profiles({provider: profile})


async def driver(
    store: RunStore,
    settings: Settings,
    profiles: Profiles | None = None,
    clock: Clock = SYSTEM_CLOCK,
    budgets: Budgets | None = None,
) -> RunDriver:
    key = await store.secret("callback_key", new_key)
    return RunDriver(
        store,
        settings,
        "w",
        lambda s: make_provider(s, settings, clock=SYSTEM_CLOCK),
        key,
        clock=clock,
        profiles=profiles,
        gates=None if budgets is None else model_gates(store, settings, clock, profiles, budgets),
    )


async def claim_and_drive(d: RunDriver, store: RunStore, at: datetime) -> RunStatus | None:
    record = await store.claim("w", at, at + timedelta(seconds=30))
    assert record is not None, "nothing due"
    return await d.drive(record)


async def test_a_run_over_the_limit_waits_for_its_reserved_turn_and_honours_it(
    store: RunStore, settings: Settings
) -> None:
    model = f"m-{uuid.uuid4().hex[:8]}"
    profiles = limited("scripted", model, requests_per_minute=1)
    service = RunService(store, settings)
    first, _ = await service.create_run(run_body(model={**model_doc(model)}))
    second, _ = await service.create_run(run_body(model={**model_doc(model)}))
    now = datetime.now(UTC)
    d = await driver(store, settings, profiles)
    assert await claim_and_drive(d, store, now) == RunStatus.REQUIRES_ACTION
    assert await claim_and_drive(d, store, now) == RunStatus.QUEUED
    waiting = (await service.get_run(second.record.id, scope=Scope.ALL)).record
    reason = waiting.waiting_reason
    assert reason is not None
    assert (reason["type"], reason["limit"]) == ("rate_limit", "requests_per_minute")
    assert reason["key"] == f"model:scripted/{model}"
    frees = datetime.fromisoformat(reason["frees_at"])
    assert 59 < (frees - now).total_seconds() < 61
    assert waiting.available_at == frees == waiting.flow_reserved_at
    assert waiting.model_attempts == 0 and waiting.turn == 0
    assert await store.claim("w", now, now + timedelta(seconds=30)) is None  # not before
    # At its turn it goes without drawing again: the next turn is still a minute later.
    later = await driver(store, settings, profiles, clock=FakeClock(frees))
    assert await claim_and_drive(later, store, frees) == RunStatus.REQUIRES_ACTION
    after = (await service.get_run(second.record.id, scope=Scope.ALL)).record
    assert after.flow_reserved_at is None
    grant = await shared(store).flow.acquire(
        [Demand(f"model:scripted/{model}", 1, None)], frees.timestamp()
    )
    assert abs(grant.go_at - (now.timestamp() + 120)) < 1
    assert first.record.id != second.record.id


def model_doc(model: str) -> dict[str, Any]:
    return {
        "provider": "scripted",
        "name": model,
        "script": [{"tool_calls": [{"name": "add", "arguments": {"a": 1, "b": 2}}]}],
    }


async def test_no_limit_no_statement(store: RunStore, settings: Settings) -> None:
    model = f"m-{uuid.uuid4().hex[:8]}"
    service = RunService(store, settings)
    await service.create_run(run_body(model=model_doc(model)))
    unlimited = Profiles({"scripted": Profile("scripted", "scripted")})
    d = await driver(store, settings, unlimited)
    assert await claim_and_drive(d, store, datetime.now(UTC)) == RunStatus.REQUIRES_ACTION
    keys = {b.key for b in await shared(store).flow.buckets(0.0)}
    assert not any(model in k for k in keys)


async def test_a_tenants_rate_limits_its_runs(store: RunStore, settings: Settings) -> None:
    tenant_doc = {"requests_per_minute": 1}

    async def tenant_limits(tenant: str) -> dict[str, Any]:
        return tenant_doc

    budgets = Budgets(
        PriceBook.for_settings(settings, SYSTEM_CLOCK),
        4096,
        tenant_limits=tenant_limits,
        clock=SYSTEM_CLOCK,
    )
    service = RunService(store, settings)
    views = [(await service.create_run(run_body()))[0] for _ in range(2)]
    d = await driver(store, settings, budgets=budgets)
    now = datetime.now(UTC)
    assert await claim_and_drive(d, store, now) == RunStatus.REQUIRES_ACTION
    assert await claim_and_drive(d, store, now) == RunStatus.QUEUED
    reasons = [
        (await service.get_run(v.record.id, scope=Scope.ALL)).record.waiting_reason for v in views
    ]
    assert {"type": "rate_limit", "limit": "requests_per_minute", "key": "tenant:default"} in [
        {k: r.get(k) for k in ("type", "limit", "key")} for r in reasons if r
    ]


def script_429(mock: MockProviderServer, model: str, retry_after: str) -> RunCreate:
    """The mock's next answer a 429 naming a limit of 60 a minute; a run body calling it."""
    fault = Reply.fault(429, "Rate limit reached", retry_after=retry_after)
    fault.headers["x-ratelimit-limit-requests"] = "60"
    mock.script(fault)
    return RunCreate.model_validate(
        {"prompt": "hi", "model": {"provider": "openai", "name": model}}
    )


async def test_a_429_slows_every_worker_on_the_key(
    store: RunStore, settings: Settings, mock: MockProviderServer
) -> None:
    settings = wire_settings(settings, mock)
    model = f"m-{uuid.uuid4().hex[:8]}"
    profiles = limited("openai", model, wire="openai_chat", requests_per_minute=600)
    body = script_429(mock, model, retry_after="7")
    service = RunService(store, settings)
    view, _ = await service.create_run(body)
    now = datetime.now(UTC)
    d = await driver(store, settings, profiles)
    assert await claim_and_drive(d, store, now) == RunStatus.QUEUED
    assert (await service.get_run(view.record.id, scope=Scope.ALL)).record.waiting_reason[
        "type"
    ] == "backoff"  # type: ignore[index]
    # Another worker's next call on the key waits the hint and goes at the learned rate.
    key = f"model:openai/{model}"
    a = await shared(store).flow.acquire([Demand(key, 600, None)], now.timestamp())
    b = await shared(store).flow.acquire([Demand(key, 600, None)], now.timestamp())
    assert a.go_at >= now.timestamp() + 7
    assert abs((b.go_at - a.go_at) - 1.0) < 0.01  # 60 a minute, as the provider said
    (bucket,) = [x for x in await shared(store).flow.buckets(now.timestamp()) if x.key == key]
    assert bucket.provider_429s == 1


# --- max_concurrent: concurrency slots (app.limits.slots_sql) ---------------------------------


async def test_a_full_key_throttles_the_run_and_a_release_wakes_it(
    store: RunStore, settings: Settings
) -> None:
    model = f"m-{uuid.uuid4().hex[:8]}"
    key = f"model:scripted/{model}"
    profiles = limited("scripted", model, max_concurrent=1)
    service = RunService(store, settings)
    at = datetime.now(UTC).timestamp()
    assert (await shared(store).slots.take([Slot(key, 1)], "elsewhere", "x", at, at + 30)).held
    view, _ = await service.create_run(run_body(model=model_doc(model)))
    now = datetime.now(UTC)
    d = await driver(store, settings, profiles)
    assert await claim_and_drive(d, store, now) == RunStatus.QUEUED
    waiting = (await service.get_run(view.record.id, scope=Scope.ALL)).record
    assert waiting.waiting_reason == {
        "type": "rate_limit",
        "limit": "max_concurrent",
        "key": key,
        "frees_at": None,
    }
    fallback = (waiting.available_at - now).total_seconds()
    assert abs(fallback - settings.lease_seconds) < 1  # (should the release's wake-up be lost)
    assert waiting.model_attempts == 0 and waiting.flow_reserved_at is None
    # The other call ends: its release makes the run due at once, and it runs.
    released = datetime.now(UTC)
    assert await shared(store).slots.release([key], "elsewhere", released) == view.record.id
    assert await claim_and_drive(d, store, datetime.now(UTC)) == RunStatus.REQUIRES_ACTION
    assert await shared(store).slots.in_flight(key, datetime.now(UTC).timestamp()) == 0


async def test_a_slot_is_released_when_the_call_fails(
    store: RunStore, settings: Settings, mock: MockProviderServer
) -> None:
    settings = wire_settings(settings, mock)
    model = f"m-{uuid.uuid4().hex[:8]}"
    profiles = limited("openai", model, wire="openai_chat", max_concurrent=2)
    mock.script(Reply.fault(500, "boom"))
    service = RunService(store, settings)
    body = RunCreate.model_validate(
        {"prompt": "hi", "model": {"provider": "openai", "name": model}}
    )
    await service.create_run(body)
    d = await driver(store, settings, profiles)
    assert await claim_and_drive(d, store, datetime.now(UTC)) == RunStatus.QUEUED  # (backoff)
    key = f"model:openai/{model}"
    assert await shared(store).slots.in_flight(key, datetime.now(UTC).timestamp()) == 0


async def test_no_slot_statement_for_a_run_without_max_concurrent(
    store: RunStore, settings: Settings, monkeypatch: Any
) -> None:
    async def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("a slot statement for a run without max_concurrent")

    monkeypatch.setattr(shared(store).slots, "take", refuse)
    monkeypatch.setattr(shared(store).slots, "release", refuse)
    model = f"m-{uuid.uuid4().hex[:8]}"
    service = RunService(store, settings)
    await service.create_run(run_body(model=model_doc(model)))
    d = await driver(store, settings, limited("scripted", model, requests_per_minute=600))
    assert await claim_and_drive(d, store, datetime.now(UTC)) == RunStatus.REQUIRES_ACTION


async def test_a_tenants_max_concurrent_limits_its_runs(
    store: RunStore, settings: Settings
) -> None:
    tenant_doc = {"max_concurrent": 1}

    async def tenant_limits(tenant: str) -> dict[str, Any]:
        return tenant_doc

    budgets = Budgets(
        PriceBook.for_settings(settings, SYSTEM_CLOCK),
        4096,
        tenant_limits=tenant_limits,
        clock=SYSTEM_CLOCK,
    )
    service = RunService(store, settings)
    view, _ = await service.create_run(run_body())
    at = datetime.now(UTC).timestamp()
    key = "tenant:default"
    assert (await shared(store).slots.take([Slot(key, 1)], "elsewhere", "x", at, at + 30)).held
    d = await driver(store, settings, budgets=budgets)
    try:
        assert await claim_and_drive(d, store, datetime.now(UTC)) == RunStatus.QUEUED
    finally:
        await shared(store).slots.release([key], "elsewhere", datetime.now(UTC))
    reason = (await service.get_run(view.record.id, scope=Scope.ALL)).record.waiting_reason
    assert reason is not None and (reason["limit"], reason["key"]) == ("max_concurrent", key)
    assert await claim_and_drive(d, store, datetime.now(UTC)) == RunStatus.REQUIRES_ACTION


class _Lost:
    """A provider whose call ends by the lease being lost mid-flight."""

    name = "scripted"

    async def complete(self, request: Any) -> Any:
        raise LeaseLost()


async def test_a_slot_is_released_when_the_lease_is_lost_mid_call(
    store: RunStore, settings: Settings
) -> None:
    model = f"m-{uuid.uuid4().hex[:8]}"
    profiles = limited("scripted", model, max_concurrent=1)
    service = RunService(store, settings)
    await service.create_run(run_body(model=model_doc(model)))
    key = await store.secret("callback_key", new_key)
    d = RunDriver(
        store, settings, "w", lambda s: _Lost(), key, profiles=profiles, clock=SYSTEM_CLOCK
    )  # type: ignore[arg-type,return-value]
    assert await claim_and_drive(d, store, datetime.now(UTC)) is None
    at = datetime.now(UTC).timestamp()
    assert await shared(store).slots.in_flight(f"model:scripted/{model}", at) == 0


class CountedLimits:
    """The store's buckets, counting the acquire statements a worker sends."""

    def __init__(self, limits: FlowLimits) -> None:
        self.limits = limits
        self.statements = 0

    async def acquire(self, demands: Any, now: float) -> Grant:
        self.statements += 1
        return await self.limits.acquire(demands, now)

    async def feed_429(self, learned: Any, now: float, hint: float) -> dict[str, float]:
        return await self.limits.feed_429(learned, now, hint)


def counted(store: RunStore) -> tuple[Flow, CountedLimits]:
    spy = CountedLimits(shared(store).flow)
    return Flow(spy, shared(store).slots, clock=SYSTEM_CLOCK), spy  # type: ignore[arg-type]


async def test_a_busy_worker_draws_its_calls_in_batches(store: RunStore) -> None:
    key = f"profile:p-{uuid.uuid4().hex[:8]}"
    rates = {key: RateLimits(requests_per_minute=6000, tokens_per_minute=600_000)}
    flow, spy = counted(store)
    now = datetime.fromtimestamp(1_800_000_000, UTC)
    for i in range(40):  # 40 calls in a few milliseconds
        grant, reserved = await flow.acquire(rates, 100, now + timedelta(milliseconds=i))
        assert grant.go_at <= (now + timedelta(milliseconds=i)).timestamp()
        assert reserved.keys == (key,)
    # Each batch asks for the calls of the last second: 1, 2, 4, 8, 16, 16 (at most).
    assert spy.statements == 6
    bucket = next(b for b in await shared(store).flow.buckets(now.timestamp()) if b.key == key)
    assert bucket.requests_used == pytest.approx(47, abs=0.1)  # 40 used, 7 still held
    assert bucket.tokens_used == pytest.approx(4700, abs=10)


async def test_a_batch_lapses_after_a_second_and_its_tokens_go_back(store: RunStore) -> None:
    key = f"profile:p-{uuid.uuid4().hex[:8]}"
    rates = {key: RateLimits(requests_per_minute=60, tokens_per_minute=600)}
    flow, spy = counted(store)
    now = datetime.fromtimestamp(1_800_000_000, UTC)
    for _ in range(2):  # the second asks for 2: one is left over
        await flow.acquire(rates, 10, now)
    assert spy.statements == 2
    later = now + timedelta(seconds=PERMIT_SECONDS + 0.5)
    await flow.acquire(rates, 10, later)  # the left-over call has lapsed: a statement
    assert spy.statements == 3
    bucket = next(b for b in await shared(store).flow.buckets(now.timestamp()) if b.key == key)
    # 1 + 2 + 1 calls reserved; the lapsed call's 10 tokens came back with the third.
    assert bucket.requests_used == pytest.approx(4)
    assert bucket.tokens_used == pytest.approx(30)


async def test_near_its_limit_every_call_is_its_own_reservation(store: RunStore) -> None:
    key = f"profile:p-{uuid.uuid4().hex[:8]}"
    rates = {key: RateLimits(requests_per_minute=60)}  # half the bucket: 27 calls
    flow, spy = counted(store)
    now = datetime.fromtimestamp(1_800_000_000, UTC)
    goes = [(await flow.acquire(rates, 100, now))[0].go_at for _ in range(60)]
    bucket = next(b for b in await shared(store).flow.buckets(now.timestamp()) if b.key == key)
    assert bucket.requests_used == pytest.approx(60)  # no call held back unused
    assert goes[:54] == [now.timestamp()] * 54 and goes[54] > now.timestamp()
    assert spy.statements > 60 - 27  # past half the bucket: one statement a call


async def test_a_slot_release_that_failed_is_retried_until_it_succeeds(
    store: RunStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The database went away as the call ended: the slot is freed once it is back, not
    held for its whole lifetime."""
    key = f"profile:p-{uuid.uuid4().hex[:8]}"
    flow = Flow(shared(store).flow, shared(store).slots, clock=SYSTEM_CLOCK)
    monkeypatch.setattr("app.limits.rates.RELEASE_RETRY_SECONDS", 0.01)
    now = datetime.now(UTC)
    grant, reserved = await flow.acquire({key: RateLimits(max_concurrent=1)}, 10, now, "r", 30)
    assert reserved.slot_keys == (key,) and grant.limit is None
    release = shared(store).slots.release
    failures = 3

    async def flaky(*args: Any) -> str | None:
        nonlocal failures
        if failures:
            failures -= 1
            raise ConnectionError("the database went away")
        return await release(*args)

    monkeypatch.setattr(shared(store).slots, "release", flaky)
    await flow.release(reserved, now)  # (fails: retried in the background)
    assert await shared(store).slots.in_flight(key, now.timestamp()) == 1
    for _ in range(200):
        if not await shared(store).slots.in_flight(key, now.timestamp()):
            break
        await asyncio.sleep(0.01)
    assert failures == 0 and await shared(store).slots.in_flight(key, now.timestamp()) == 0


async def test_a_429_ends_this_workers_batch_on_the_key(store: RunStore) -> None:
    key = f"profile:p-{uuid.uuid4().hex[:8]}"
    rates = {key: RateLimits(requests_per_minute=6000)}
    flow, spy = counted(store)
    now = datetime.fromtimestamp(1_800_000_000, UTC)
    for _ in range(2):  # the second asks for 2: one is left over
        await flow.acquire(rates, 10, now)
    err = ProviderError("Rate limit reached", status=429, retry_after=5.0)
    await flow.provider_429(rates, err, now)
    # The left-over call is not sent past the 429: the next call asks the bucket, and waits.
    grant, _ = await flow.acquire(rates, 10, now)
    assert spy.statements == 3 and grant.go_at >= now.timestamp() + 5
