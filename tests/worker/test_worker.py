"""The worker process's loop: dispatching claims to slots, and a clean stop."""

from __future__ import annotations

import asyncio

from app.core.lifecycle import RunStatus
from app.service.runs import RunService
from app.settings import Settings
from app.store.runs import RunStore
from app.worker.worker import Worker
from tests.helpers import run_body, running_worker, wait_for

SLOW = {"provider": "scripted", "name": "demo", "delay_ms": 400, "script": [{"text": "x"}]}


async def statuses(service: RunService, ids: list[str]) -> list[RunStatus]:
    return [(await service.get_run(i)).record.status for i in ids]


async def test_one_worker_drives_more_runs_than_slots(store: RunStore, settings: Settings) -> None:
    service = RunService(store, settings)
    ids = [
        (await service.create_run(run_body(tools=[], model={**SLOW, "delay_ms": 10})))[0].record.id
        for _ in range(9)
    ]
    async with running_worker(store, settings, concurrency=2):
        await wait_for(lambda: statuses(service, ids), lambda s: set(s) == {RunStatus.COMPLETED})


async def test_a_stop_past_the_grace_releases_every_held_run(
    store: RunStore, settings: Settings
) -> None:
    service = RunService(store, settings)
    ids = [
        (await service.create_run(run_body(tools=[], model=SLOW)))[0].record.id for _ in range(6)
    ]
    worker = Worker(store, settings, concurrency=3, worker_id="stopping")
    task = asyncio.create_task(worker.run(grace=0.05))
    await wait_for(lambda: statuses(service, ids), lambda s: s.count(RunStatus.RUNNING) == 3)
    worker.stop()
    await task
    after = await statuses(service, ids)
    assert RunStatus.RUNNING not in after, "a run was left held by a stopped worker"
    assert after.count(RunStatus.QUEUED) == 6
    released = [e for i in ids for e in await store.events(i) if e.type == "run.released"]
    assert len(released) == 3 and {e.data["worker"] for e in released} == {"stopping"}
