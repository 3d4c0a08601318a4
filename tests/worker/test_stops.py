"""Stop signals (app.worker.stops) on both databases: a signal makes the lease heartbeat at
once (a false alarm changes nothing; a cancelled run's call is cancelled and `LeaseLost`
raised), the SQLite poll reads only while a call is held, and a cancel sends the NOTIFY
the workers listen for."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import pytest

from app.clock import SYSTEM_CLOCK
from app.core.lifecycle import RunStatus
from app.core.scope import Scope
from app.service.runs import RunService
from app.settings import Settings
from app.store import changes
from app.store.runs import STOP_CHANNEL, RunStore
from app.worker.lease import Claim, Lease, LeaseLost
from app.worker.stops import EARLY_KEPT, Stops
from tests.conftest import make_settings
from tests.helpers import run_body, running_worker, wait_for
from tests.mocks.gate import Gate


async def claimed(service: RunService) -> Claim:
    view, _ = await service.create_run(run_body())
    now = datetime.now(UTC)
    record = await service.store.claim("w1", now, now + timedelta(seconds=30))
    assert record is not None and record.id == view.record.id
    return Claim(record, record.version, [])


@pytest.fixture
def service(store: RunStore, settings: Settings) -> RunService:
    return RunService(store, settings)


async def test_a_false_alarm_costs_a_heartbeat_and_the_call_goes_on(service: RunService) -> None:
    claim = await claimed(service)
    stops = Stops()
    lease = Lease(service.store, 30.0, "w1", SYSTEM_CLOCK, stops)
    answer: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    held = asyncio.create_task(lease.hold(claim, answer))
    while claim.record.id not in stops.held:
        await asyncio.sleep(0)
    before = (await service.store.get(claim.record.id, scope=Scope.ALL)).lease_expires_at  # type: ignore[union-attr]
    stops.signal(claim.record.id)
    stops.signal("run_not_held")  # (ignored)

    async def extended() -> None:
        while (
            await service.store.get(claim.record.id, scope=Scope.ALL)
        ).lease_expires_at == before:  # type: ignore[union-attr]
            await asyncio.sleep(0.01)

    await asyncio.wait_for(extended(), 5)  # the heartbeat happened, and was accepted
    assert not held.done()
    answer.set_result("the answer")
    assert await asyncio.wait_for(held, 5) == "the answer"
    assert stops.held == {}


async def test_a_signal_after_a_cancel_cancels_the_call(service: RunService) -> None:
    claim = await claimed(service)
    stops = Stops()
    lease = Lease(service.store, 30.0, "w1", SYSTEM_CLOCK, stops)
    unwound = asyncio.Event()

    async def call() -> str:
        try:
            await asyncio.Event().wait()  # a model that never answers
        finally:
            unwound.set()  # (where the connection closes)
        return "never"

    held = asyncio.create_task(lease.hold(claim, call()))
    while claim.record.id not in stops.held:
        await asyncio.sleep(0)
    await service.cancel(claim.record.id, scope=Scope.ALL)
    stops.signal(claim.record.id)
    with pytest.raises(LeaseLost):
        await asyncio.wait_for(held, 5)
    assert unwound.is_set(), "LeaseLost comes once the call has unwound"
    assert stops.held == {}


async def test_a_signal_before_the_call_is_kept_for_it() -> None:
    """A NOTIFY for a run claimed but not calling the model yet: its first call asks at
    once. Only the last EARLY_KEPT such signals are kept."""
    stops = Stops()
    stops.signal("run_a")
    with stops.watch("run_a", 3) as early, stops.watch("run_b", 3) as other:
        assert early.signalled.done() and not other.signalled.done()
    with stops.watch("run_a", 3) as again:  # (used once)
        assert not again.signalled.done()
    for i in range(EARLY_KEPT + 1):
        stops.signal(f"run_{i}")
    with stops.watch("run_0", 1) as oldest, stops.watch(f"run_{EARLY_KEPT}", 1) as newest:
        assert not oldest.signalled.done() and newest.signalled.done()


async def test_the_poll_signals_a_cancelled_run_and_reads_only_while_a_call_is_held(
    service: RunService,
) -> None:
    claim = await claimed(service)
    other = await claimed(service)
    stops = Stops()
    reads: list[list[str]] = []

    async def fences(ids: Sequence[str]) -> dict[str, int]:
        reads.append(sorted(ids))
        return await service.store.fences(ids)

    poll = asyncio.create_task(stops.poll(fences, 0.01))
    try:
        with (
            stops.watch(claim.record.id, claim.version) as a,
            stops.watch(other.record.id, other.version) as b,
        ):
            while len(reads) < 2:  # still running, the same token: no signal
                await asyncio.sleep(0.01)
            assert not a.signalled.done() and not b.signalled.done()
            await service.cancel(claim.record.id, scope=Scope.ALL)
            await asyncio.wait_for(asyncio.shield(a.signalled), 5)
            assert not b.signalled.done()
        assert reads[0] == sorted([claim.record.id, other.record.id])  # one read for both
        assert stops._busy is not None and not stops._busy.is_set()  # idle: it waits
        count = stops.polls
        with stops.watch(other.record.id, other.version - 1) as stale:  # a token moved on
            await asyncio.wait_for(asyncio.shield(stale.signalled), 5)
        assert stops.polls > count
    finally:
        poll.cancel()


async def test_fences_answer_running_runs_only(service: RunService) -> None:
    claim = await claimed(service)
    queued, _ = await service.create_run(run_body())
    fences = await service.store.fences([claim.record.id, queued.record.id, "run_missing"])
    assert fences == {claim.record.id: claim.version}
    assert await service.store.fences([]) == {}


def test_changes_that_take_a_run_from_its_worker_stop_it() -> None:
    now = datetime.now(UTC)
    assert changes.cancel(None).stops and changes.lease_lost(now).stops
    assert not changes.heartbeat(1, "w", now).stops
    assert not changes.release(1, "w", now).stops  # (its own worker gives it back)


@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)  # (SQLite: the poll)
async def test_a_cancel_notifies_the_stop_channel_with_the_run_id(
    postgres_url: str, service: RunService
) -> None:
    import psycopg

    claim = await claimed(service)
    async with await psycopg.AsyncConnection.connect(postgres_url, autocommit=True) as conn:
        await conn.execute(f"LISTEN {STOP_CHANNEL}")
        await service.cancel(claim.record.id, scope=Scope.ALL)
        await service.store.flush_wakeups()
        notes = [n async for n in conn.notifies(timeout=5, stop_after=1)]
    assert [(n.channel, n.payload) for n in notes] == [(STOP_CHANNEL, claim.record.id)]
    assert (
        await service.get_run(claim.record.id, scope=Scope.ALL)
    ).record.status == RunStatus.CANCELLED


@pytest.mark.parametrize("streamed", [False, True], ids=["blocking", "streamed"])
async def test_a_run_the_reaper_takes_back_stops_its_old_workers_call(
    database_url: str, store: RunStore, streamed: bool
) -> None:
    """A worker that is alive but was reaped (its lease lapsed, say, under a long pause)
    stops its call at once rather than at its next heartbeat (20 s here)."""
    settings = make_settings(database_url, lease_seconds=60.0, reap_interval=3600.0)
    service = RunService(store, settings)
    model = {"provider": "scripted", "name": "demo", "script": [{"text": "x"}]}
    view, _ = await service.create_run(run_body(model=model, tools=[], stream=streamed))
    run_id = view.record.id
    gate = Gate()  # (a model that never answers: the calls are only ever stopped)
    async with running_worker(store, settings, providers=gate.providers(settings)) as worker:
        await gate.holding(1)
        await wait_for(lambda: asyncio.sleep(0, worker.stops.held), lambda held: run_id in held)
        later = datetime.now(UTC) + timedelta(seconds=120)
        # (The reaper skips a row another transaction holds at that moment, as it must:
        # the next reap takes it. Seen twice under a loaded suite: reap until it does.)
        reaped = await wait_for(
            lambda: store.reap_expired_leases(later), lambda got: run_id in got, timeout=20
        )
        assert reaped == [run_id]
        events = await wait_for(
            lambda: store.events(run_id),
            lambda got: any(e.type == "model.aborted" for e in got),
            timeout=5,
        )
        await service.cancel(run_id, scope=Scope.ALL)  # (the worker has claimed it again meanwhile)
    types = [e.type for e in events]
    assert types.index("run.lease_lost") < types.index("model.aborted")
