"""The batches of shared limits (app.limits.rates) under limits that change: a worker's
cached batch lets no call through that the limits in force at the time would not."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

from app.clock import SYSTEM_CLOCK
from app.limits.rates import Flow
from app.limits.shared import shared
from app.providers.base import ProviderError
from app.providers.profiles import RateLimits
from app.store.runs import RunStore


def _key() -> str:
    return f"profile:p-{uuid.uuid4().hex[:8]}"


async def test_a_429_block_stops_this_workers_cached_batch(store: RunStore) -> None:
    """A provider's 429 pushes the key's bucket empty for the hint: this worker's next
    call on the key waits too, it does not go on a batch cached before the 429."""
    key = _key()
    rates = {key: RateLimits(requests_per_minute=6000)}
    flow = Flow(shared(store).flow, shared(store).slots, clock=SYSTEM_CLOCK)
    now = datetime.fromtimestamp(1_800_000_000, UTC)
    for _ in range(4):  # batches of 1, 2 (one left, used), 4: three calls left
        grant, _ = await flow.acquire(rates, 10, now)
        assert grant.go_at == now.timestamp()
    err = ProviderError("Rate limit reached", status=429, retryable=True, retry_after=7.0)
    await flow.provider_429(rates, err, now)
    grant, _ = await flow.acquire(rates, 10, now + timedelta(milliseconds=10))
    assert grant.go_at >= now.timestamp() + 7  # fails: go_at == now (from the batch)


async def test_a_batch_granted_without_tokens_does_not_pass_a_token_limit(
    store: RunStore,
) -> None:
    """A batch granted while the key limited requests only reserved no tokens: once the
    key limits tokens, its calls must not skip the token bucket."""
    key = _key()
    flow = Flow(shared(store).flow, shared(store).slots, clock=SYSTEM_CLOCK)
    now = datetime.fromtimestamp(1_800_000_000, UTC)
    before = {key: RateLimits(requests_per_minute=6000)}
    for _ in range(4):  # three calls left, "with" 3 x 1000 tokens never reserved
        await flow.acquire(before, 1000, now)
    after = {key: RateLimits(requests_per_minute=6000, tokens_per_minute=1000)}
    # 1000 tokens at 1000 a minute: 60 s of a 54 s bucket, the call waits ~6 s.
    grant, _ = await flow.acquire(after, 1000, now)
    assert grant.go_at > now.timestamp() + 5  # fails: go_at == now (from the batch)


async def test_a_batch_lapsing_refunds_only_tokens_it_reserved(store: RunStore) -> None:
    """The lapsed calls of a batch granted with no token limit reserved no tokens: none
    are refunded on the key's token bucket."""
    key = _key()
    flow = Flow(shared(store).flow, shared(store).slots, clock=SYSTEM_CLOCK)
    now = datetime.fromtimestamp(1_800_000_000, UTC)
    before = {key: RateLimits(requests_per_minute=6000)}
    for _ in range(4):  # three calls left over, never used
        await flow.acquire(before, 1000, now)
    after = {key: RateLimits(requests_per_minute=6000, tokens_per_minute=60_000)}
    later = now + timedelta(seconds=2)  # (the batch lapsed)
    await flow.acquire(after, 1000, later)
    bucket = next(b for b in await shared(store).flow.buckets(later.timestamp()) if b.key == key)
    assert bucket.tokens_used >= 999  # fails: -2000 (3000 never-reserved tokens refunded)


async def test_a_lowered_limit_is_not_bypassed_by_a_cached_batch(store: RunStore) -> None:
    """The key's requests per minute went down between two calls (the profile was
    reloaded): calls from a batch granted at the old rate do not go past the new one."""
    key = _key()
    flow = Flow(shared(store).flow, shared(store).slots, clock=SYSTEM_CLOCK)
    now = datetime.fromtimestamp(1_800_000_000, UTC)
    fast = {key: RateLimits(requests_per_minute=6000)}
    for i in range(16):  # 1, 2, 4, 8 ... a batch of 16 cached
        await flow.acquire(fast, 10, now + timedelta(milliseconds=i))
    slow = {key: RateLimits(requests_per_minute=1)}  # a call a minute: burst of one
    goes = [
        (await flow.acquire(slow, 10, now + timedelta(milliseconds=20 + i)))[0].go_at
        for i in range(5)
    ]
    assert sum(go <= now.timestamp() + 1 for go in goes) <= 1  # fails: all 5 go at once
