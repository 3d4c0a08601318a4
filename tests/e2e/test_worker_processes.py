"""Two real `agentrun worker` processes on PostgreSQL, results through the service layer;
then the same while one worker is killed with SIGKILL in the middle of model calls (held
at the mock provider, over HTTP, until the kill)."""

from __future__ import annotations

import asyncio
import signal
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from app.core.lifecycle import RunStatus
from app.core.scope import Scope
from app.service.runs import RunService
from app.store.backend.engines import create_engine
from app.store.runs import RunStore
from tests.conftest import make_settings
from tests.e2e.checks import assert_all_completed_once
from tests.e2e.model_wire import MODEL, RUN_BODY
from tests.e2e.processes import spawn, stop, wait_until
from tests.helpers import CLEAN_TABLES, results_for, run_body
from tests.mocks.server import MockProviderServer

RUNS = 200
SLOTS = 8


@pytest.fixture
async def pg_service(postgres_url: str) -> AsyncIterator[RunService]:
    engine = create_engine(postgres_url)
    async with engine.begin() as conn:
        for table in CLEAN_TABLES:
            await conn.exec_driver_sql(f"DELETE FROM {table}")
    store = RunStore(engine)
    yield RunService(store, make_settings(postgres_url))
    await store.aclose()


async def answer_until_done(
    service: RunService, run_ids: list[str], timeout: float, on_progress: object = None
) -> None:
    """Act as the tool executor: answer every suspended run until all have completed."""
    deadline = time.monotonic() + timeout
    pending = set(run_ids)
    while pending:
        assert time.monotonic() < deadline, f"{len(pending)} runs not completed in time"
        waiting, _ = await service.list_runs(
            status=RunStatus.REQUIRES_ACTION, limit=500, cursor=None, scope=Scope.ALL
        )
        for view in waiting:
            await service.submit_tool_results(
                results_for(view), run_id=view.record.id, scope=Scope.ALL
            )
        done, _ = await service.list_runs(
            status=RunStatus.COMPLETED, limit=1000, cursor=None, scope=Scope.ALL
        )
        pending -= {v.record.id for v in done}
        if on_progress is not None:
            await on_progress(len(run_ids) - len(pending))  # type: ignore[operator]
        await asyncio.sleep(0.05)


async def test_two_worker_processes_complete_every_run_once(
    pg_service: RunService, postgres_url: str, tmp_path: Path
) -> None:
    logs = [tmp_path / f"w{i}.log" for i in range(2)]
    workers = [spawn(["worker", "--concurrency", "8"], postgres_url, log) for log in logs]
    try:
        # Both ready before the first run (on a busy machine one could otherwise take all).
        for log in logs:
            wait_until(lambda log=log: "worker started" in log.read_text(), 30, f"{log.name}")
        ids = [(await pg_service.create_run(run_body()))[0].record.id for _ in range(RUNS)]
        await answer_until_done(pg_service, ids, timeout=120)
    finally:
        codes = [stop(w) for w in workers]
    assert codes == [0, 0], "SIGTERM must end a worker cleanly"
    await assert_all_completed_once(pg_service.store, ids, turns=2)
    claimers = {
        e.data["worker"]
        for run_id in ids[:50]
        for e in await pg_service.store.events(run_id)
        if e.type == "run.claimed"
    }
    assert len(claimers) == 2, "both worker processes took part"


async def test_a_worker_killed_mid_model_call_loses_nothing(
    pg_service: RunService, postgres_url: str, tmp_path: Path, mock: MockProviderServer
) -> None:
    """Every model call is held at the mock until both workers have one in each of their
    slots: the victim is killed with its calls provably in flight, then they are let go."""
    mock.responder = RUN_BODY
    mock.hold()
    args = ["worker", "--concurrency", str(SLOTS)]
    victim = spawn(args, postgres_url, tmp_path / "victim.log", **mock.env())
    survivor = spawn(args, postgres_url, tmp_path / "survivor.log", **mock.env())
    try:
        model = run_body(model=MODEL)
        ids = [(await pg_service.create_run(model))[0].record.id for _ in range(RUNS)]
        await asyncio.to_thread(mock.wait_held, 2 * SLOTS, 60)  # every slot of both
        running, _ = await pg_service.list_runs(
            status=RunStatus.RUNNING, limit=100, cursor=None, scope=Scope.ALL
        )
        owner = f":{victim.pid}"
        stranded = {v.record.id for v in running if (v.record.lease_owner or "").endswith(owner)}
        assert stranded, "the victim holds no run while its calls are held"
        victim.send_signal(signal.SIGKILL)
        victim.wait(10)
        mock.release()
        await answer_until_done(pg_service, ids, timeout=180)
    finally:
        stop(victim, signal.SIGKILL)
        code = stop(survivor)
    assert code == 0
    await assert_all_completed_once(pg_service.store, ids, turns=2)
    lost = {
        run_id
        for run_id in ids
        if any(e.type == "run.lease_lost" for e in await pg_service.store.events(run_id))
    }
    assert stranded <= lost, "each run the kill stranded is re-queued by the reaper"


async def test_a_run_suspended_by_one_process_is_resumed_by_another(
    pg_service: RunService, postgres_url: str, tmp_path: Path
) -> None:
    first = spawn(["worker", "--concurrency", "1"], postgres_url, tmp_path / "first.log")
    try:
        view, _ = await pg_service.create_run(run_body())
        deadline = time.monotonic() + 30
        while (
            await pg_service.get_run(view.record.id, scope=Scope.ALL)
        ).record.status != RunStatus.REQUIRES_ACTION:
            assert time.monotonic() < deadline
            await asyncio.sleep(0.05)
    finally:
        assert stop(first) == 0
    suspended = await pg_service.get_run(view.record.id, scope=Scope.ALL)
    await pg_service.submit_tool_results(
        results_for(suspended), run_id=view.record.id, scope=Scope.ALL
    )
    second = spawn(["worker", "--concurrency", "1"], postgres_url, tmp_path / "second.log")
    try:
        await answer_until_done(pg_service, [view.record.id], timeout=30)
    finally:
        assert stop(second) == 0
    claimers = [
        e.data["worker"]
        for e in await pg_service.store.events(view.record.id)
        if e.type == "run.claimed"
    ]
    assert len(claimers) == 2 and claimers[0] != claimers[1]
    await assert_all_completed_once(pg_service.store, [view.record.id], turns=2)
