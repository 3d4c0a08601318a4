"""A run enqueued behind its conversation's active run (`if_busy: enqueue`) starts when
that run ends, with a running worker: the ending write wakes it, nothing polls for it."""

from __future__ import annotations

import time
from datetime import UTC, datetime

import pytest

from app.conversations.service import start_orphans
from app.core.lifecycle import RunStatus
from app.core.scope import Scope
from app.service.runs import RunService
from app.service.schemas import RunCreate
from app.settings import Settings
from app.store import changes
from app.store.runs import RunStore
from app.store.waiting import Conversation
from tests.conftest import make_settings
from tests.helpers import drive_once, run_body, running_worker, wait_status
from tests.mocks.gate import Gate

ONE = {"provider": "scripted", "name": "demo", "script": [{"text": "one"}]}


async def enqueued_behind_a_held_run(service: RunService, gate: Gate) -> tuple[str, str]:
    """The first run's model call held at `gate` (the first call only), a second run
    enqueued behind it; the gate is released once the second is seen waiting."""
    first, _ = await service.create_run(run_body(tools=[], model=ONE))
    await gate.holding(1)
    body = RunCreate(prompt="and then?", previous_run_id=first.record.id, if_busy="enqueue")
    second, _ = await service.create_run(body)
    assert second.record.waiting == Conversation(first.record.id)
    assert (
        await service.get_run(first.record.id, scope=Scope.ALL)
    ).record.status == RunStatus.RUNNING
    gate.release()
    return first.record.id, second.record.id


async def test_the_waiting_run_starts_when_the_active_one_ends(
    store: RunStore, settings: Settings
) -> None:
    service = RunService(store, settings)
    gate = Gate(holds=1)
    async with running_worker(store, settings, concurrency=2, providers=gate.providers(settings)):
        first, second = await enqueued_behind_a_held_run(service, gate)
        done = await wait_status(service, second, RunStatus.COMPLETED, timeout=20)
    before = await service.load_run(first, scope=Scope.ALL)
    after = await service.load_run(done.record.id, scope=Scope.ALL)
    assert after.full_history()[: len(before.full_history())] == before.full_history()
    assert len(after.full_history()) == len(before.full_history()) + 2  # its prompt, answer


@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
async def test_the_start_is_a_wake_up_not_a_poll(store: RunStore, database_url: str) -> None:
    """With a poll interval of a minute, only the NOTIFY of the restart can start it soon."""
    settings = make_settings(database_url, poll_interval=60.0)
    service = RunService(store, settings)
    gate = Gate(holds=1)
    async with running_worker(store, settings, concurrency=2, providers=gate.providers(settings)):
        first, second = await enqueued_behind_a_held_run(service, gate)
        await wait_status(service, first, RunStatus.COMPLETED, timeout=10)
        started = time.monotonic()
        await wait_status(service, second, RunStatus.COMPLETED, timeout=10)
        assert time.monotonic() - started < 5


async def test_an_expired_run_starts_its_waiting_run(store: RunStore, settings: Settings) -> None:
    """The expiry sweep ends runs too: it starts their waiting runs as the worker does."""
    service = RunService(store, settings)
    first, _ = await service.create_run(run_body(expires_in=2.0))
    await drive_once(store, settings)  # suspended, for tool results nobody sends
    body = RunCreate(prompt="and then?", previous_run_id=first.record.id, if_busy="enqueue")
    second, _ = await service.create_run(body)
    assert second.record.waiting == Conversation(first.record.id)
    async with running_worker(store, settings):
        await wait_status(service, first.record.id, RunStatus.EXPIRED, timeout=10)
        started = await wait_status(
            service, second.record.id, RunStatus.REQUIRES_ACTION, RunStatus.COMPLETED, timeout=10
        )
    assert started.record.turn == 1


async def test_a_run_whose_ender_stopped_before_starting_it_is_started_by_the_sweep(
    store: RunStore, settings: Settings
) -> None:
    """The ending write returns `awaited_by`, and the store's `run_ended` hook starts the
    waiting run right after its commit; an ender killed in between leaves it parked. The
    reaper's sweep starts it."""
    service = RunService(store, settings)
    first, _ = await service.create_run(run_body())
    await drive_once(store, settings)  # suspended, for tool results nobody sends
    body = RunCreate(prompt="and then?", previous_run_id=first.record.id, if_busy="enqueue")
    second, _ = await service.create_run(body)
    # The ending write alone, as an ender killed before its hooks ran would have left it
    # (a store with no features installed: no hook runs): nothing started.
    bare = RunStore(store.engine)
    now = datetime.now(UTC)
    ended, _ = await bare.apply(first.record.id, changes.cancel("test"), now, scope=Scope.ALL)
    assert ended is not None and ended.awaited_by == second.record.id
    assert (
        await service.get_run(second.record.id, scope=Scope.ALL)
    ).record.waiting == Conversation(first.record.id)
    async with running_worker(store, settings):  # (its reaper sweeps at once)
        started = await wait_status(
            service, second.record.id, RunStatus.REQUIRES_ACTION, RunStatus.COMPLETED, timeout=10
        )
    assert started.record.turn == 1
    assert await start_orphans(store, datetime.now(UTC)) == []  # (done once)
