"""Concurrency slots (app.limits.slots_sql): a run that got its slots but was
deferred by a rate no longer waits for a slot; a release must wake a run that does."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

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
from tests.helpers import run_body


async def test_a_release_wakes_a_waiter_not_a_run_deferred_by_a_rate(
    store: RunStore, settings: Settings
) -> None:
    key = f"profile:p-{uuid.uuid4().hex[:8]}"
    service = RunService(store, settings)
    ids = []
    for _ in range(2):  # two runs throttled for the full key
        view, _ = await service.create_run(run_body())
        now = datetime.now(UTC)
        record = await store.claim("w", now, now + timedelta(seconds=30))
        assert record is not None and record.id == view.record.id
        reason = RateLimit("max_concurrent", key, None)
        change = changes.throttle(
            record.version, reason, now + timedelta(seconds=30), None, (), None
        )
        done, _ = await store.apply(record.id, change, now, scope=Scope.ALL)
        assert done is not None and done.status == RunStatus.QUEUED
        ids.append(record.id)
    deferred, waiter = ids
    at = now.timestamp()
    slot, rate = [Slot(key, 1)], [Demand(key, 1, None)]  # (a call a minute)
    assert (await shared(store).slots.take(slot, "x", "other", at, at + 5, rate)).held
    assert not (await shared(store).slots.take(slot, "d1", deferred, at + 1, at + 30, rate)).held
    # x's slot expired: `deferred` gets it, but its rate turn is a minute away.
    taken = await shared(store).slots.take(slot, "d2", deferred, at + 6, at + 36, rate, 1.0)
    assert not taken.held and taken.grant.limit == "requests_per_minute"
    assert (await shared(store).slots.take(slot, "y", "other2", at + 7, at + 100)).held
    assert not (await shared(store).slots.take(slot, "w1", waiter, at + 8, at + 38, rate)).held
    released = datetime.fromtimestamp(at + 9, UTC)
    # fails: the run deferred by the rate (its stale waiter row) is woken instead
    assert await shared(store).slots.release([key], "y", released) == waiter
