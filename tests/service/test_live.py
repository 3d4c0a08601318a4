"""The live-event hub: on PostgreSQL a stream is woken by NOTIFY, which only watched runs'
commits send, so the hub must watch what it streams and stop watching when it ends."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest

from app.clock import SYSTEM_CLOCK
from app.core.scope import Scope
from app.service.live import EventHub
from app.service.runs import RunService
from app.settings import Settings
from app.store.run_records import NewEvent
from app.store.runs import RunStore
from tests.helpers import cancel_inside, run_body, wait_for

POSTGRES = pytest.mark.parametrize("database_url", ["postgres"], indirect=True)


@POSTGRES
async def test_a_stream_is_woken_by_its_runs_commits_and_watches_only_while_open(
    store: RunStore, settings: Settings
) -> None:
    # No fallback look at the log within the test: only a NOTIFY can wake the stream.
    hub = EventHub(
        store,
        settings.database_url,
        0.05,
        fallback_seconds=600,
        first_look_seconds=600,
        clock=SYSTEM_CLOCK,
    )
    view, _ = await RunService(store, settings).create_run(run_body())
    run_id = view.record.id
    stream = hub.stream(run_id, after=0)
    try:
        first = await anext(stream)
        assert first.type == "run.created"
        assert (run_id, hub.watcher) in await store.watched()
        pending = asyncio.ensure_future(anext(stream))
        await asyncio.sleep(0.1)  # the stream is now waiting for a wake-up
        assert await store.append_events(run_id, None, [NewEvent("note", {})], datetime.now(UTC))
        woken = await asyncio.wait_for(pending, 30)
        assert woken.type == "note"
    finally:
        await stream.aclose()
    for _ in range(100):  # the watch is dropped in the background
        if (run_id, hub.watcher) not in await store.watched():
            break
        await asyncio.sleep(0.05)
    else:
        raise AssertionError("the watch outlived its last stream")
    await hub.close()


@POSTGRES
async def test_closing_the_hub_drops_its_watches(store: RunStore, settings: Settings) -> None:
    hub = EventHub(store, settings.database_url, 0.05, clock=SYSTEM_CLOCK)
    view, _ = await RunService(store, settings).create_run(run_body())
    stream = hub.stream(view.record.id, after=0)
    await anext(stream)
    assert (view.record.id, hub.watcher) in await store.watched()
    await hub.close()
    assert [w for w in await store.watched() if w[1] == hub.watcher] == []
    await stream.aclose()


@POSTGRES
async def test_a_commit_that_missed_its_notify_reaches_the_stream_by_the_log(
    store: RunStore, settings: Settings, postgres_url: str
) -> None:
    """A cancel whose statement began before the stream watched the run (it waited on the
    run's row lock, held by another session) sends no NOTIFY; the stream's look at the log
    after its first wait and its periodic re-check must deliver it anyway."""
    import psycopg

    service = RunService(store, settings)
    hub = EventHub(
        store,
        settings.database_url,
        0.05,
        fallback_seconds=1.0,
        first_look_seconds=0.3,
        clock=SYSTEM_CLOCK,
    )
    view, _ = await service.create_run(run_body())
    run_id = view.record.id
    dsn = postgres_url.replace("postgresql+psycopg://", "postgresql://")
    async with await psycopg.AsyncConnection.connect(dsn) as locker:
        await locker.execute("SELECT 1 FROM runs WHERE id = %s FOR UPDATE", (run_id,))
        cancel = asyncio.ensure_future(service.cancel(run_id, actor="test", scope=Scope.ALL))

        async def lock_waits() -> int:
            # (Inside the locker's transaction pg_stat_activity is read once and kept:
            # drop that snapshot, or a first look before the cancel waits sees 0 forever.)
            await locker.execute("SELECT pg_stat_clear_snapshot()")
            cursor = await locker.execute(
                "SELECT count(*) FROM pg_stat_activity"
                " WHERE datname = current_database() AND wait_event_type = 'Lock'"
            )
            row = await cursor.fetchone()
            return int(row[0]) if row else 0

        # The cancel's statement has begun and waits on the lock.
        await wait_for(lock_waits, lambda n: n >= 1, timeout=30)
        assert not cancel.done()
        stream = hub.stream(run_id, after=0)
        try:
            assert (await anext(stream)).type == "run.created"
            assert (run_id, hub.watcher) in await store.watched()
            pending = asyncio.ensure_future(anext(stream))
            await asyncio.sleep(0.5)  # past the first look: only the re-check is left
            await locker.commit()  # the cancel commits now, without a NOTIFY for us
            await asyncio.wait_for(cancel, 10)
            delivered = await asyncio.wait_for(pending, 5)
            assert delivered.type == "run.cancelled"
        finally:
            await stream.aclose()
            await hub.close()


@pytest.mark.parametrize("reader", ["stream", "wait"])
async def test_a_stream_or_wait_cancelled_inside_its_read_lets_the_read_finish(
    store: RunStore, settings: Settings, monkeypatch: pytest.MonkeyPatch, reader: str
) -> None:
    """A live stream or a wait is cancelled when its client goes away; its read of the
    store, perhaps inside a transaction, is not cut off (on SQLite, where reads take the
    write lock too, that could leave the lock held): the caller is cancelled at once,
    the read completes."""
    hub = EventHub(store, settings.database_url, 0.05, clock=SYSTEM_CLOCK)
    view, _ = await RunService(store, settings).create_run(run_body())
    stream = hub.stream(view.record.id, after=0)
    try:
        if reader == "stream":
            finished = await cancel_inside(store, "events", anext(stream), monkeypatch)
        else:
            wait = hub.until(view.record.id, set(), 5, scope=Scope.ALL)
            finished = await cancel_inside(store, "get", wait, monkeypatch)
        assert len(finished) == 1
    finally:
        await stream.aclose()
        await hub.close()
