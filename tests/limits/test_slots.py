"""Concurrency slots (app.limits.slots_sql) on both databases: never more than `max_concurrent`
held under concurrent takers (on PostgreSQL also from many processes), a leaked slot frees
at its expiry, a full key reserves no rate, a release makes the oldest waiting run due."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime, timedelta

import pytest

from app.core.lifecycle import RunStatus
from app.core.scope import Scope
from app.limits.rates_sql import Demand
from app.limits.shared import shared
from app.limits.slots_sql import Slot
from app.service.runs import RunService
from app.settings import Settings
from app.store import changes
from app.store.runs import RunStore
from app.store.waiting import RateLimit
from tests.helpers import counts_at_once, run_body

T0 = 1_800_000_000.0


def fresh(name: str) -> str:
    """A key of its own (the databases are shared between tests)."""
    return f"{name}-{uuid.uuid4().hex[:8]}"


async def test_concurrent_takers_never_hold_more_than_max_concurrent(store: RunStore) -> None:
    key = fresh("profile:p")
    slots = [Slot(key, 3)]

    async def one(i: int) -> bool:
        taken = await shared(store).slots.take(slots, f"h{i}", f"run-{i}", T0, T0 + 30)
        return taken.held

    held = await asyncio.gather(*(one(i) for i in range(40)))
    assert sum(held) == 3
    assert await shared(store).slots.in_flight(key, T0) == 3
    first = next(i for i, h in enumerate(held) if h)
    await shared(store).slots.release([key], f"h{first}", datetime.fromtimestamp(T0, UTC))
    again = await asyncio.gather(*(one(100 + i) for i in range(40)))
    assert sum(again) == 1
    assert await shared(store).slots.in_flight(key, T0) == 3


async def test_every_key_must_have_a_free_slot(store: RunStore) -> None:
    profile, model = fresh("profile:p"), fresh("model:p/m")
    assert (await shared(store).slots.take([Slot(model, 1)], "a", "r1", T0, T0 + 30)).held
    taken = await shared(store).slots.take(
        [Slot(profile, 5), Slot(model, 1)], "b", "r2", T0, T0 + 30
    )
    assert not taken.held
    assert (taken.full, taken.grant.key, taken.grant.limit) == (model, model, "max_concurrent")
    assert await shared(store).slots.in_flight(profile, T0) == 0  # (nothing taken on the free key)


async def test_a_leaked_slot_frees_at_its_expiry(store: RunStore) -> None:
    key = fresh("model:p/m")
    assert (await shared(store).slots.take([Slot(key, 1)], "dead", "r1", T0, T0 + 30)).held
    assert not (await shared(store).slots.take([Slot(key, 1)], "b", "r2", T0 + 29, T0 + 59)).held
    assert (await shared(store).slots.take([Slot(key, 1)], "b", "r2", T0 + 30, T0 + 60)).held


async def test_a_full_key_reserves_no_rate_and_a_deferred_call_holds_no_slot(
    store: RunStore,
) -> None:
    key = fresh("profile:p")
    rate = [Demand(key, 1, None)]  # one a minute
    assert (await shared(store).slots.take([Slot(key, 1)], "a", "r1", T0, T0 + 30, rate)).held
    refused = await shared(store).slots.take([Slot(key, 1)], "b", "r2", T0, T0 + 30, rate)
    assert refused.grant.limit == "max_concurrent"
    await shared(store).slots.release([key], "a", datetime.fromtimestamp(T0, UTC))
    # The refusal drew nothing: this call is the second of the minute, deferred a minute
    # (and holds no slot while it waits for its turn).
    deferred = await shared(store).slots.take(
        [Slot(key, 1)], "c", "r3", T0, T0 + 30, rate, slack=1.0
    )
    assert not deferred.held and deferred.grant.limit == "requests_per_minute"
    assert abs(deferred.grant.go_at - (T0 + 60)) < 1e-6
    assert await shared(store).slots.in_flight(key, T0) == 0


async def test_a_release_makes_the_oldest_waiting_run_due(
    store: RunStore, settings: Settings
) -> None:
    key = fresh("profile:p")
    service = RunService(store, settings)
    ids = []
    for _ in range(2):
        view, _ = await service.create_run(run_body())
        now = datetime.now(UTC)
        record = await store.claim("w", now, now + timedelta(seconds=30))
        assert record is not None and record.id == view.record.id
        later = now + timedelta(seconds=30)
        reason = RateLimit("max_concurrent", key, None)
        done, _ = await store.apply(
            record.id,
            changes.throttle(record.version, reason, later, None, (), None),
            now,
            scope=Scope.ALL,
        )
        assert done is not None and done.status == RunStatus.QUEUED
        ids.append(record.id)
    at = now.timestamp()
    assert (await shared(store).slots.take([Slot(key, 1)], "a", "other", at, at + 30)).held
    for i, run_id in enumerate(ids):
        taken = await shared(store).slots.take([Slot(key, 1)], f"w{i}", run_id, at + i, at + 30)
        assert not taken.held
    assert await shared(store).slots.release([key], "a", now) == ids[0]
    assert (await store.get(ids[0], scope=Scope.ALL)).available_at <= now  # type: ignore[union-attr]
    assert (await store.get(ids[1], scope=Scope.ALL)).available_at > now  # type: ignore[union-attr]
    assert await shared(store).slots.release([key], "nobody", now) == ids[1]
    assert await shared(store).slots.release([key], "nobody", now) is None


async def test_a_refusal_forgets_the_waiters_that_ended(
    store: RunStore, settings: Settings
) -> None:
    key = fresh("profile:p")
    at = datetime.now(UTC).timestamp()
    assert (await shared(store).slots.take([Slot(key, 1)], "a", "x", at, at + 30)).held
    assert not (
        await shared(store).slots.take([Slot(key, 1)], "b", "no-such-run", at, at + 30)
    ).held
    assert await shared(store).slots.waiters(key) == ["no-such-run"]
    assert not (await shared(store).slots.take([Slot(key, 1)], "c", "another", at, at + 30)).held
    assert await shared(store).slots.waiters(key) == ["another"]  # (no queued run of that id)


async def claimed(store: RunStore, service: RunService) -> str:
    """A new run, claimed (running): a worker's, about to take slots."""
    view, _ = await service.create_run(run_body())
    now = datetime.now(UTC)
    record = await store.claim("w", now, now + timedelta(seconds=30))
    assert record is not None and record.id == view.record.id
    return record.id


async def throttle(store: RunStore, run_id: str, key: str, until: datetime) -> None:
    record = await store.get(run_id, scope=Scope.ALL)
    assert record is not None
    reason = RateLimit("max_concurrent", key, None)
    change = changes.throttle(record.version, reason, until, None, (), None)
    done, _ = await store.apply(run_id, change, datetime.now(UTC), scope=Scope.ALL)
    assert done is not None and done.status == RunStatus.QUEUED


async def test_a_waiter_refused_a_moment_ago_is_kept_by_the_next_refusal(
    store: RunStore, settings: Settings
) -> None:
    """A run refused by one worker is still running until its throttle is written; a
    refusal of another run in between must not forget it (it would then wait for its
    fallback, not a release)."""
    key = fresh("profile:p")
    service = RunService(store, settings)
    first, second = await claimed(store, service), await claimed(store, service)
    at = datetime.now(UTC).timestamp()
    assert (await shared(store).slots.take([Slot(key, 1)], "a", "other", at, at + 30)).held
    assert not (await shared(store).slots.take([Slot(key, 1)], "b", first, at, at + 30)).held
    assert not (await shared(store).slots.take([Slot(key, 1)], "c", second, at + 1, at + 30)).held
    assert await shared(store).slots.waiters(key) == [first, second]
    later = datetime.now(UTC) + timedelta(seconds=30)
    for run_id in (first, second):
        await throttle(store, run_id, key, later)
    assert await shared(store).slots.release([key], "a", datetime.now(UTC)) == first


async def refused(store: RunStore, settings: Settings) -> tuple[str, str]:
    """A key whose one slot `a` holds, and a running run it refused: (key, run id)."""
    key = fresh("profile:p")
    run_id = await claimed(store, RunService(store, settings))
    at = datetime.now(UTC).timestamp()
    assert (await shared(store).slots.take([Slot(key, 1)], "a", "other", at, at + 30)).held
    assert not (await shared(store).slots.take([Slot(key, 1)], "b", run_id, at, at + 30)).held
    return key, run_id


async def test_a_slot_freed_before_the_throttle_was_written_makes_the_run_due(
    store: RunStore, settings: Settings
) -> None:
    key, run_id = await refused(store, settings)
    # The slot is released while the refused run is still running: it wakes no one...
    assert await shared(store).slots.release([key], "a", datetime.now(UTC)) is None
    await throttle(store, run_id, key, datetime.now(UTC) + timedelta(seconds=30))
    # ...so the recheck after the throttle finds the free slot and makes the run due now.
    now = datetime.now(UTC)
    assert await shared(store).slots.recheck(run_id, key, now)
    assert (await store.get(run_id, scope=Scope.ALL)).available_at <= now  # type: ignore[union-attr]
    assert not await shared(store).slots.recheck(run_id, key, now)  # (already due: no change)


async def test_a_recheck_leaves_a_run_whose_key_is_still_full_waiting(
    store: RunStore, settings: Settings
) -> None:
    key, run_id = await refused(store, settings)
    later = datetime.now(UTC) + timedelta(seconds=30)
    await throttle(store, run_id, key, later)
    assert not await shared(store).slots.recheck(run_id, key, datetime.now(UTC))
    assert (await store.get(run_id, scope=Scope.ALL)).available_at == later  # type: ignore[union-attr]
    assert await shared(store).slots.release([key], "a", datetime.now(UTC)) == run_id


TAKER = """
import asyncio, os, sys
from app.store.backend.engines import create_engine
from app.store.runs import RunStore
from app.limits.shared import shared
from app.limits.slots_sql import Slot

async def main() -> None:
    store = RunStore(create_engine(sys.argv[1]))
    key = sys.argv[2]
    await shared(store).slots.in_flight(key, 0.0)  # connected: the takes below are all that is left
    print("ready", flush=True)
    sys.stdin.readline()

    async def one(i: int) -> bool:
        got = await shared(store).slots.take([Slot(key, 3)], f"{os.getpid()}-{i}", "r", 1e9, 2e9)
        return got.held

    print(sum(await asyncio.gather(*(one(i) for i in range(10)))), flush=True)
    await store.aclose()

asyncio.run(main())
"""


@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
async def test_takers_in_many_processes_never_hold_more_than_max_concurrent(
    store: RunStore, database_url: str
) -> None:
    """Real processes, each with its own pool, 10 takers each, told to go at once."""
    key = fresh("profile:p")
    counts = counts_at_once(TAKER, [database_url, key], 4)
    assert sum(counts) == 3, counts
    assert await shared(store).slots.in_flight(key, 1e9) == 3
