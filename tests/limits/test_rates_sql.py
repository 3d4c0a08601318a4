"""The shared limits' buckets (app.limits.rates_sql) on both databases: reservations, the
minute's burst, refunds, a 429's block and slower rate, concurrent acquires."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from app.limits.rates_sql import SLOW_SECONDS, Demand, Learned
from app.limits.shared import shared
from app.store.runs import RunStore

T0 = 1_800_000_000.0


def fresh(name: str) -> str:
    """A key of its own (the databases are shared between tests)."""
    return f"{name}-{uuid.uuid4().hex[:8]}"


async def test_a_minutes_worth_goes_at_once_then_each_call_waits_its_turn(
    store: RunStore,
) -> None:
    key = fresh("profile:p")
    d = [Demand(key, 60, None)]  # one a second, a burst of 54 (90 % of a minute's)
    grants = [await shared(store).flow.acquire(d, T0) for _ in range(56)]
    assert all(g.go_at == T0 and g.key is None for g in grants[:54])
    assert grants[54].go_at == pytest.approx(T0 + 1.0)
    assert grants[55].go_at == pytest.approx(T0 + 2.0)
    assert (grants[55].key, grants[55].limit) == (key, "requests_per_minute")


async def test_a_reservation_is_kept_so_the_deferred_call_does_not_draw_again(
    store: RunStore,
) -> None:
    d = [Demand(fresh("model:p/m"), 1, None)]
    assert (await shared(store).flow.acquire(d, T0)).go_at == T0
    deferred = await shared(store).flow.acquire(d, T0)
    assert deferred.go_at == pytest.approx(T0 + 60)
    # A third caller queues behind the deferred one, not beside it.
    assert (await shared(store).flow.acquire(d, T0 + 1)).go_at == pytest.approx(T0 + 120)


async def test_the_most_limiting_key_and_kind_decides(store: RunStore) -> None:
    key = fresh("profile:p")
    demands = [
        Demand(key, 600, 1000, tokens=800),
        Demand(fresh("tenant:t"), 6000, None, tokens=800),
    ]
    assert (await shared(store).flow.acquire(demands, T0)).go_at == T0
    late = await shared(store).flow.acquire(demands, T0)
    assert (late.key, late.limit) == (key, "tokens_per_minute")
    assert late.go_at == pytest.approx(T0 + 1600 * 0.06 - 54)  # 1,600 tokens of a 900 burst


async def test_a_refund_gives_back_the_tokens_a_call_did_not_use(store: RunStore) -> None:
    key = fresh("profile:p")  # 1,000 a minute: 0.06 s a token, a burst of 900
    assert (await shared(store).flow.acquire([Demand(key, None, 1000, 500)], T0)).go_at == T0
    # That call used 50 of its 500: the next acquire (of 500) carries the 450 back.
    assert (await shared(store).flow.acquire([Demand(key, None, 1000, 500 - 450)], T0)).go_at == T0
    assert (await shared(store).flow.acquire([Demand(key, None, 1000, 300)], T0)).go_at == T0
    later = await shared(store).flow.acquire([Demand(key, None, 1000, 100)], T0)
    assert later.go_at == pytest.approx(T0 + 950 * 0.06 - 54)


async def test_a_429_blocks_every_caller_and_slows_the_rate(store: RunStore) -> None:
    key = fresh("profile:p")
    d = [Demand(key, 60, None)]
    assert (await shared(store).flow.acquire(d, T0)).go_at == T0
    await shared(store).flow.feed_429([Learned(key)], T0, hint=10.0)
    after = await shared(store).flow.acquire(d, T0)
    # Blocked for the hint, then an empty bucket at the slower rate (1 s / 0.8).
    assert after.go_at == pytest.approx(T0 + 10 + 1.25)
    nxt = await shared(store).flow.acquire(d, T0)
    assert nxt.go_at == pytest.approx(T0 + 10 + 2.5)
    (bucket,) = [b for b in await shared(store).flow.buckets(T0) if b.key == key]
    assert bucket.provider_429s == 1


async def test_a_limit_the_provider_names_is_learned_and_fades(store: RunStore) -> None:
    key = fresh("profile:p")
    d = [Demand(key, 600, None)]  # configured 10 a second; the provider allows 1
    await shared(store).flow.acquire(d, T0)
    await shared(store).flow.feed_429([Learned(key, requests_per_minute=60)], T0, hint=0.0)
    a = await shared(store).flow.acquire(d, T0)
    b = await shared(store).flow.acquire(d, T0)
    assert b.go_at - a.go_at == pytest.approx(1.0)
    # Past the fade, the configured rate again.
    late = T0 + SLOW_SECONDS + 200
    x = await shared(store).flow.acquire(d, late)
    y = await shared(store).flow.acquire(d, late)
    assert x.go_at == y.go_at == late


async def test_keys_without_a_429_are_not_touched_by_one(store: RunStore) -> None:
    tenant = fresh("tenant:t")
    await shared(store).flow.acquire([Demand(tenant, 60, None)], T0)
    await shared(store).flow.feed_429([Learned(fresh("profile:other"))], T0, hint=30.0)
    assert (await shared(store).flow.acquire([Demand(tenant, 60, None)], T0)).go_at == T0


async def test_concurrent_acquires_never_hand_out_the_same_turn(store: RunStore) -> None:
    d = [Demand(fresh("profile:a"), 60, None), Demand(fresh("profile:b"), 120, None)]

    async def one() -> float:
        return (await shared(store).flow.acquire(list(reversed(d)), T0)).go_at

    got = await asyncio.gather(*(one() for _ in range(80)))
    late = sorted(g for g in got if g > T0)
    assert len(late) == 26
    assert late == pytest.approx([T0 + i for i in range(1, 27)])


async def test_a_learned_interval_below_a_second_is_kept_whole(store: RunStore) -> None:
    key = fresh("profile:p")  # (asyncpg once bound 0.5 s as the integer 0)
    d = [Demand(key, 600, None)]
    await shared(store).flow.acquire(d, T0)
    await shared(store).flow.feed_429([Learned(key, requests_per_minute=120)], T0, hint=0.0)
    await shared(store).flow.feed_429([Learned(key, requests_per_minute=120)], T0 + 2, hint=0.0)
    assert (await shared(store).flow.slow_rates())[key] == 120.0


async def test_a_batch_is_granted_while_the_bucket_stays_half_empty_after_it(
    store: RunStore,
) -> None:
    key = fresh("profile:p")  # 60 a minute: one a second; half the bucket is 27 calls
    batch = [Demand(key, 60, 600, tokens=10, batch=8, per_call=10)]
    first = await shared(store).flow.acquire(batch, T0)  # a new bucket: the batch fits
    assert first.granted == ((key, 8),) and first.go_at == T0
    # Three more batches reach 32 > 27 calls: the fourth is refused, the call alone goes.
    granted = [(await shared(store).flow.acquire(batch, T0)).granted for _ in range(3)]
    assert granted == [((key, 8),), ((key, 8),), ((key, 1),)]
    # 8 + 8 + 8 + 1 calls reserved and only their tokens (the refused batch's are not).
    assert (await shared(store).flow.acquire([Demand(key, 60, 600, tokens=10)], T0)).go_at == T0
    bucket = next(b for b in await shared(store).flow.buckets(T0) if b.key == key)
    assert bucket.requests_used == pytest.approx(26)
    assert bucket.tokens_used == pytest.approx(26 * 10)


async def test_a_batch_is_one_call_when_its_tokens_would_fill_half_the_bucket(
    store: RunStore,
) -> None:
    key = fresh("profile:p")  # 1,000 tokens a minute: half the bucket is 450 tokens
    d = [Demand(key, 6000, 1000, tokens=100, batch=8, per_call=100)]
    assert (await shared(store).flow.acquire(d, T0)).granted == ((key, 1),)  # 800 > 450
    small = [Demand(key, 6000, 1000, tokens=40, batch=8, per_call=40)]
    assert (await shared(store).flow.acquire(small, T0)).granted == ((key, 8),)  # 100 + 320 <= 450
    assert (await shared(store).flow.acquire(small, T0)).granted == ((key, 1),)  # 420 + 320 > 450


async def test_a_key_with_nothing_configured_learns_its_first_429(store: RunStore) -> None:
    """No row before: the 429 makes it, blocked for the hint, at the named rate (no
    burst), fading back to no limit; the key is reported slowed until then."""
    key = fresh("model:p/m")
    slowed = await shared(store).flow.feed_429(
        [Learned(key, requests_per_minute=480)], T0, hint=2.0
    )
    assert slowed == {key: pytest.approx(T0 + SLOW_SECONDS)}
    assert (await shared(store).flow.slowed(T0))[key] == pytest.approx(T0 + SLOW_SECONDS)
    d = [Demand(key, None, None, learned=True)]
    goes = [(await shared(store).flow.acquire(d, T0)).go_at for _ in range(3)]
    assert goes == pytest.approx([T0 + 2 + 0.125 * i for i in (1, 2, 3)])
    late = T0 + SLOW_SECONDS + 1  # faded: no limit, and no longer slowed
    assert (await shared(store).flow.acquire(d, late)).go_at == late
    assert key not in await shared(store).flow.slowed(late)


async def test_without_a_named_limit_the_first_429_starts_at_the_seed(store: RunStore) -> None:
    key = fresh("model:p/m")
    await shared(store).flow.feed_429([Learned(key, seed=60)], T0, hint=0.0)
    assert (await shared(store).flow.slow_rates())[key] == 60.0
    # A later 429 (not one of the same second) steps the rate in force (62 a minute, 10 s
    # into its fade) down: the seed is for a key with no rate only.
    await shared(store).flow.feed_429([Learned(key, seed=600)], T0 + 10, hint=0.0)
    in_force = 60 / (1 - 10 / SLOW_SECONDS)
    assert (await shared(store).flow.slow_rates())[key] == pytest.approx(in_force * 0.8, abs=0.1)


async def test_a_learned_token_limit_counts_the_tokens_of_a_key_with_none_configured(
    store: RunStore,
) -> None:
    key = fresh("model:p/m")
    await shared(store).flow.feed_429([Learned(key, tokens_per_minute=600)], T0, hint=0.0)
    d = [Demand(key, None, None, tokens=100, learned=True)]  # 10 s a call
    a, b = [(await shared(store).flow.acquire(d, T0)).go_at for _ in range(2)]
    assert b - a == pytest.approx(10.0)
