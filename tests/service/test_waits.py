"""Waiting for a run's status (`EventHub.until`): answered at once when the run is already
there, woken by the run's own commits (NOTIFY on PostgreSQL, the hub's poll on SQLite),
one read per wake-up however many wait, watches written in batches, ended by a timeout
or by the process shutting down."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest

from app.clock import SYSTEM_CLOCK
from app.core.lifecycle import RunStatus
from app.core.scope import Scope
from app.service.live import SETTLED, EventHub
from app.service.runs import RunService
from app.settings import Settings
from app.store.runs import RunStore
from tests.helpers import drive_once, results_for, run_body, wait_for

POSTGRES = pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
QUEUED = {RunStatus.QUEUED}


@pytest.fixture
async def hub(store: RunStore, settings: Settings) -> AsyncIterator[EventHub]:
    # On PostgreSQL nothing but a NOTIFY wakes a wait within a test (no look at the run
    # after a silence); on SQLite the hub polls every `poll_interval`.
    hub = EventHub(
        store, settings.database_url, settings.poll_interval, fallback_seconds=600,
        first_look_seconds=600, clock=SYSTEM_CLOCK,
    )  # fmt: skip
    yield hub
    await hub.close()


async def waiting(hub: EventHub, store: RunStore, run_id: str, count: int = 1) -> None:
    """Until `count` waits hold the run (and, on PostgreSQL, its watch is written)."""
    await wait_for(lambda: asyncio.sleep(0, hub.subscribers(run_id)), lambda n: n >= count)
    if store.notifies:
        await wait_for(store.watched, lambda w: (run_id, hub.watcher) in w)


async def test_a_run_already_in_a_wanted_status_is_answered_at_once(
    store: RunStore, settings: Settings, hub: EventHub
) -> None:
    service = RunService(store, settings)
    view, _ = await service.create_run(run_body())
    run_id = view.record.id
    started = time.monotonic()
    record = await hub.until(run_id, QUEUED, 30, scope=Scope.ALL)
    assert record is not None and record.status == RunStatus.QUEUED
    await service.cancel(run_id, scope=Scope.ALL)
    # Cancelled is wanted by default; and a run that can never leave its status ends
    # any wait at once, even one for a status it did not reach.
    for wanted in (SETTLED, {RunStatus.REQUIRES_ACTION}):
        record = await hub.until(run_id, wanted, 30, scope=Scope.ALL)
        assert record is not None and record.status == RunStatus.CANCELLED
    assert time.monotonic() - started < 5
    assert hub.subscribers(run_id) == 0
    assert await hub.until("run_missing", SETTLED, 30, scope=Scope.ALL) is None


async def test_a_wait_is_woken_when_the_run_suspends_and_again_when_it_completes(
    store: RunStore, settings: Settings, hub: EventHub
) -> None:
    service = RunService(store, settings)
    view, _ = await service.create_run(run_body())
    run_id = view.record.id
    suspended = asyncio.ensure_future(hub.until(run_id, SETTLED, 60, scope=Scope.ALL))
    completed = asyncio.ensure_future(hub.until(run_id, {RunStatus.COMPLETED}, 60, scope=Scope.ALL))
    await waiting(hub, store, run_id, 2)
    await drive_once(store, settings)  # queued → running → requires_action
    record = await asyncio.wait_for(suspended, 30)
    assert record is not None and record.status == RunStatus.REQUIRES_ACTION
    assert not completed.done()
    await service.submit_tool_results(
        results_for(await service.get_run(run_id, scope=Scope.ALL)), run_id=run_id, scope=Scope.ALL
    )
    await drive_once(store, settings)
    record = await asyncio.wait_for(completed, 30)
    assert record is not None and record.status == RunStatus.COMPLETED
    assert record.output == "the sums are 3 and 7"
    await wait_for(lambda: asyncio.sleep(0, hub.subscribers(run_id)), lambda n: n == 0)
    if store.notifies:
        await wait_for(store.watched, lambda w: (run_id, hub.watcher) not in w)


async def test_a_wait_times_out_with_the_run_as_it_is(
    store: RunStore, settings: Settings, hub: EventHub
) -> None:
    view, _ = await RunService(store, settings).create_run(run_body())
    started = time.monotonic()
    record = await hub.until(view.record.id, SETTLED, 0.3, scope=Scope.ALL)
    elapsed = time.monotonic() - started
    assert record is not None and record.status == RunStatus.QUEUED
    assert 0.3 <= elapsed < 3, elapsed
    # timeout 0: one look, no wait
    record = await hub.until(view.record.id, SETTLED, 0, scope=Scope.ALL)
    assert record is not None and record.status == RunStatus.QUEUED


async def test_many_waits_and_a_stream_on_one_run_share_each_read(
    store: RunStore, settings: Settings, hub: EventHub, monkeypatch: pytest.MonkeyPatch
) -> None:
    service = RunService(store, settings)
    view, _ = await service.create_run(run_body())
    run_id = view.record.id
    waits = [
        asyncio.ensure_future(hub.until(run_id, SETTLED, 60, scope=Scope.ALL)) for _ in range(50)
    ]
    stream = hub.stream(run_id, after=0)
    assert (await anext(stream)).type == "run.created"
    await waiting(hub, store, run_id, 51)
    reads = 0
    real_get = store.get

    async def counted_get(*args: Any, **kwargs: Any) -> Any:
        nonlocal reads
        reads += 1
        return await real_get(*args, **kwargs)

    monkeypatch.setattr(store, "get", counted_get)
    await service.cancel(run_id, scope=Scope.ALL)
    records = await asyncio.wait_for(asyncio.gather(*waits), 30)
    assert {r.status for r in records if r is not None} == {RunStatus.CANCELLED}
    assert len(records) == 50
    assert (await anext(stream)).type == "run.cancelled"
    await stream.aclose()
    # One read for the wake-up (a few more on SQLite, where each poll reads once for all).
    assert reads <= (2 if store.notifies else 10), reads


@POSTGRES
async def test_waits_arriving_together_write_their_watches_in_a_few_statements(
    store: RunStore, settings: Settings, hub: EventHub, monkeypatch: pytest.MonkeyPatch
) -> None:
    service = RunService(store, settings)
    ids = [(await service.create_run(run_body()))[0].record.id for _ in range(200)]
    statements = 0
    real_watch = store.watch

    async def counted_watch(*args: Any, **kwargs: Any) -> None:
        nonlocal statements
        statements += 1
        await real_watch(*args, **kwargs)

    monkeypatch.setattr(store, "watch", counted_watch)
    waits = [
        asyncio.ensure_future(hub.until(run_id, SETTLED, 60, scope=Scope.ALL)) for run_id in ids
    ]
    await wait_for(store.watched, lambda w: len(w) == len(ids))
    assert statements <= 20, statements  # not one per wait
    for run_id in ids:
        await service.cancel(run_id, scope=Scope.ALL)
    records = await asyncio.wait_for(asyncio.gather(*waits), 30)
    assert [r.status for r in records if r is not None] == [RunStatus.CANCELLED] * len(ids)
    await wait_for(store.watched, lambda w: w == [])


async def test_release_ends_every_wait_with_the_run_as_last_read(
    store: RunStore, settings: Settings, hub: EventHub
) -> None:
    view, _ = await RunService(store, settings).create_run(run_body())
    run_id = view.record.id
    pending = asyncio.ensure_future(hub.until(run_id, SETTLED, 60, scope=Scope.ALL))
    stream = hub.stream(run_id, after=0)
    assert (await anext(stream)).type == "run.created"
    await waiting(hub, store, run_id, 2)
    hub.release()
    record = await asyncio.wait_for(pending, 5)
    assert record is not None and record.status == RunStatus.QUEUED
    assert hub.subscribers(run_id) == 1  # the stream is not a wait: it goes on
    await stream.aclose()
    # A wait that starts after the release answers at once.
    again = await asyncio.wait_for(hub.until(run_id, SETTLED, 60, scope=Scope.ALL), 5)
    assert again is not None and again.status == RunStatus.QUEUED
