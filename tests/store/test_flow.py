"""The shared limits' buckets (app.store.flow) on both databases: reservations, the
minute's burst, refunds, a 429's block and slower rate, concurrent acquires."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from app.store.flow import SLOW_SECONDS, Demand, Learned
from app.store.runs import RunStore

T0 = 1_800_000_000.0


def fresh(name: str) -> str:
    """A key of its own (the databases are shared between tests)."""
    return f"{name}-{uuid.uuid4().hex[:8]}"


async def test_a_minutes_worth_goes_at_once_then_each_call_waits_its_turn(
    store: RunStore,
) -> None:
    key = fresh("profile:p")
    d = [Demand(key, 60, None)]  # one a second, a burst of 60
    grants = [await store.flow.acquire(d, T0) for _ in range(62)]
    assert all(g.go_at == T0 and g.key is None for g in grants[:60])
    assert grants[60].go_at == pytest.approx(T0 + 1.0)
    assert grants[61].go_at == pytest.approx(T0 + 2.0)
    assert (grants[61].key, grants[61].limit) == (key, "requests_per_minute")


async def test_a_reservation_is_kept_so_the_deferred_call_does_not_draw_again(
    store: RunStore,
) -> None:
    d = [Demand(fresh("model:p/m"), 1, None)]
    assert (await store.flow.acquire(d, T0)).go_at == T0
    deferred = await store.flow.acquire(d, T0)
    assert deferred.go_at == pytest.approx(T0 + 60)
    # A third caller queues behind the deferred one, not beside it.
    assert (await store.flow.acquire(d, T0 + 1)).go_at == pytest.approx(T0 + 120)


async def test_the_most_limiting_key_and_kind_decides(store: RunStore) -> None:
    key = fresh("profile:p")
    demands = [
        Demand(key, 600, 1000, tokens=800),
        Demand(fresh("tenant:t"), 6000, None, tokens=800),
    ]
    assert (await store.flow.acquire(demands, T0)).go_at == T0
    late = await store.flow.acquire(demands, T0)
    assert (late.key, late.limit) == (key, "tokens_per_minute")
    assert late.go_at == pytest.approx(T0 + 0.6 * 60)  # 600 tokens more than a minute's


async def test_a_refund_gives_back_the_tokens_a_call_did_not_use(store: RunStore) -> None:
    key = fresh("profile:p")
    assert (await store.flow.acquire([Demand(key, None, 1000, 1000)], T0)).go_at == T0
    # The call used 100 of its 1,000: the next acquire carries the 900 back.
    grant = await store.flow.acquire([Demand(key, None, 1000, 500 - 900)], T0)
    assert grant.go_at == T0
    assert (await store.flow.acquire([Demand(key, None, 1000, 400)], T0)).go_at == T0
    later = await store.flow.acquire([Demand(key, None, 1000, 100)], T0)
    assert later.go_at == pytest.approx(T0 + 6.0)


async def test_a_429_blocks_every_caller_and_slows_the_rate(store: RunStore) -> None:
    key = fresh("profile:p")
    d = [Demand(key, 60, None)]
    assert (await store.flow.acquire(d, T0)).go_at == T0
    await store.flow.feed_429([Learned(key)], T0, hint=10.0)
    after = await store.flow.acquire(d, T0)
    # Blocked for the hint, then an empty bucket at the slower rate (1 s / 0.8).
    assert after.go_at == pytest.approx(T0 + 10 + 1.25)
    nxt = await store.flow.acquire(d, T0)
    assert nxt.go_at == pytest.approx(T0 + 10 + 2.5)
    (bucket,) = [b for b in await store.flow.buckets(T0) if b.key == key]
    assert bucket.provider_429s == 1


async def test_a_limit_the_provider_names_is_learned_and_fades(store: RunStore) -> None:
    key = fresh("profile:p")
    d = [Demand(key, 600, None)]  # configured 10 a second; the provider allows 1
    await store.flow.acquire(d, T0)
    await store.flow.feed_429([Learned(key, requests_per_minute=60)], T0, hint=0.0)
    a = await store.flow.acquire(d, T0)
    b = await store.flow.acquire(d, T0)
    assert b.go_at - a.go_at == pytest.approx(1.0)
    # Past the fade, the configured rate again.
    late = T0 + SLOW_SECONDS + 200
    x = await store.flow.acquire(d, late)
    y = await store.flow.acquire(d, late)
    assert x.go_at == y.go_at == late


async def test_keys_without_a_429_are_not_touched_by_one(store: RunStore) -> None:
    tenant = fresh("tenant:t")
    await store.flow.acquire([Demand(tenant, 60, None)], T0)
    await store.flow.feed_429([Learned(fresh("profile:other"))], T0, hint=30.0)
    assert (await store.flow.acquire([Demand(tenant, 60, None)], T0)).go_at == T0


async def test_concurrent_acquires_never_hand_out_the_same_turn(store: RunStore) -> None:
    d = [Demand(fresh("profile:a"), 60, None), Demand(fresh("profile:b"), 120, None)]

    async def one() -> float:
        return (await store.flow.acquire(list(reversed(d)), T0)).go_at

    got = await asyncio.gather(*(one() for _ in range(80)))
    late = sorted(g for g in got if g > T0)
    assert len(late) == 20
    assert late == pytest.approx([T0 + i for i in range(1, 21)])
