"""The worker process's loop: dispatching claims to slots, and a clean stop."""

from __future__ import annotations

import asyncio

import pytest

from app.clock import SYSTEM_CLOCK
from app.core.lifecycle import RunStatus
from app.core.scope import Scope
from app.service.runs import RunService
from app.settings import Settings
from app.store.backend.engines import create_engine
from app.store.runs import RunStore
from app.worker.worker import Worker
from tests.helpers import run_body, running_worker, wait_for, wait_status
from tests.mocks.gate import Gate

ONE = {"provider": "scripted", "name": "demo", "script": [{"text": "x"}]}


async def statuses(service: RunService, ids: list[str]) -> list[RunStatus]:
    return [(await service.get_run(i, scope=Scope.ALL)).record.status for i in ids]


async def test_one_worker_drives_more_runs_than_slots(store: RunStore, settings: Settings) -> None:
    service = RunService(store, settings)
    ids = [
        (await service.create_run(run_body(tools=[], model={**ONE, "delay_ms": 10})))[0].record.id
        for _ in range(9)
    ]
    async with running_worker(store, settings, concurrency=2):
        await wait_for(lambda: statuses(service, ids), lambda s: set(s) == {RunStatus.COMPLETED})


async def test_a_stop_past_the_grace_releases_every_held_run(
    store: RunStore, settings: Settings
) -> None:
    service = RunService(store, settings)
    ids = [(await service.create_run(run_body(tools=[], model=ONE)))[0].record.id for _ in range(6)]
    gate = Gate()  # every model call held, never released: the runs stay running
    providers = gate.providers(settings)
    worker = Worker(
        store,
        settings,
        concurrency=3,
        worker_id="stopping",
        providers=providers,
        clock=SYSTEM_CLOCK,
    )
    task = asyncio.create_task(worker.run(grace=0.05))
    await gate.holding(3)
    await wait_for(lambda: statuses(service, ids), lambda s: s.count(RunStatus.RUNNING) == 3)
    worker.stop()
    await task
    after = await statuses(service, ids)
    assert RunStatus.RUNNING not in after, "a run was left held by a stopped worker"
    assert after.count(RunStatus.QUEUED) == 6
    released = [e for i in ids for e in await store.events(i) if e.type == "run.released"]
    assert len(released) == 3 and {e.data["worker"] for e in released} == {"stopping"}


@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
async def test_a_lost_wake_up_costs_a_poll_not_the_run(
    store: RunStore, settings: Settings, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Wake-ups are sent after the commit: a process that dies in between leaves the run
    queued with nobody told; an idle worker still finds it on its own."""
    async with running_worker(store, settings):
        await asyncio.sleep(0.3)  # listening and idle
        client = RunStore(create_engine(database_url))
        monkeypatch.setattr(client.backend, "wake", lambda wakes: None)
        try:
            service = RunService(client, settings)
            view, _ = await service.create_run(run_body())
            await wait_status(service, view.record.id, RunStatus.REQUIRES_ACTION, timeout=10)
        finally:
            await client.aclose()


async def test_a_background_loop_that_will_not_end_does_not_hold_the_stop(
    store: RunStore, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cancelled background loop that hangs (psycopg's notifies() once did, on a LISTEN
    connection gone bad) is left behind after `BACKGROUND_STOP_SECONDS`."""
    monkeypatch.setattr("app.worker.worker.BACKGROUND_STOP_SECONDS", 0.2)
    release, started = asyncio.Event(), asyncio.Event()

    async def stubborn(self: Worker) -> None:
        started.set()
        while not release.is_set():
            try:
                await release.wait()
            except asyncio.CancelledError:
                continue  # (ignores its cancel, as the hung cancel did)

    monkeypatch.setattr(Worker, "_fold", stubborn)
    worker = Worker(store, settings, clock=SYSTEM_CLOCK)
    task = asyncio.create_task(worker.run(grace=0.1))
    await asyncio.wait_for(started.wait(), 5)
    worker.stop()
    try:
        await asyncio.wait_for(task, 5)  # (it would wait for the loop for ever)
    finally:
        release.set()
