"""Shared builders and waiters for store, service, worker and e2e tests."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

import pytest

from app.clock import SYSTEM_CLOCK
from app.core.lifecycle import RunStatus
from app.core.scope import Scope
from app.service.runs import RunService, RunView
from app.service.schemas import RunCreate, ToolResultsIn
from app.settings import Settings
from app.store.runs import RunStore
from app.store.schema import RUN_ROWS, run_configs, runs
from app.worker.worker import Worker

T = TypeVar("T")

ADD_TOOL = {
    "name": "add",
    "description": "Add two numbers",
    "parameters": {
        "type": "object",
        "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
        "required": ["a", "b"],
    },
}


def run_body(**overrides: Any) -> RunCreate:
    """A scripted run: one parallel round of two `add` calls, then a final text."""
    body: dict[str, Any] = {
        "prompt": "add 1+2 and 3+4",
        "model": {
            "provider": "scripted",
            "name": "demo",
            "script": [
                {
                    "tool_calls": [
                        {"name": "add", "arguments": {"a": 1, "b": 2}},
                        {"name": "add", "arguments": {"a": 3, "b": 4}},
                    ]
                },
                {"text": "the sums are 3 and 7"},
            ],
        },
        "tools": [ADD_TOOL],
        "max_turns": 4,
    }
    body.update(overrides)
    return RunCreate.model_validate(body)


def results_for(view: RunView, outputs: list[Any] | None = None) -> ToolResultsIn:
    calls = view.pending
    outputs = outputs or [str(sum(c.arguments.values())) for c in calls]
    pairs = zip(calls, outputs, strict=True)
    return ToolResultsIn.model_validate(
        {"results": [{"tool_call_id": c.call_id, "output": o} for c, o in pairs]}
    )


async def wait_for(
    fn: Callable[[], Awaitable[T]], ok: Callable[[T], bool], timeout: float = 20.0
) -> T:
    deadline = time.monotonic() + timeout
    while True:
        value = await fn()
        if ok(value):
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met in {timeout}s; last value: {value!r}")
        await asyncio.sleep(0.02)


async def wait_status(
    service: RunService, run_id: str, *statuses: RunStatus, timeout: float = 20.0
) -> RunView:
    return await wait_for(
        lambda: service.get_run(run_id, scope=Scope.ALL),
        lambda v: v.record.status in statuses,
        timeout,
    )


@asynccontextmanager
async def running_worker(store: RunStore, settings: Settings, **kw: Any) -> AsyncIterator[Worker]:
    worker = Worker(store, settings, **{"clock": SYSTEM_CLOCK, **kw})
    task = asyncio.create_task(worker.run(grace=2.0))
    try:
        yield worker
    finally:
        worker.stop()
        # A worker that does not stop is a failure with its stack, not a hung test.
        await asyncio.wait_for(task, 30)


async def _test_driver(store: RunStore, settings: Settings, worker_id: str) -> Any:
    from app.service.tokens import new_key
    from app.worker.driver import RunDriver
    from app.worker.providers import make_provider

    key = await store.secret("callback_key", new_key)
    return RunDriver(
        store,
        settings,
        worker_id,
        lambda s: make_provider(s, settings, clock=SYSTEM_CLOCK),
        key,
        clock=SYSTEM_CLOCK,
    )


async def _claim_due(store: RunStore, settings: Settings, worker_id: str) -> Any:
    from datetime import UTC, datetime, timedelta

    now = datetime.now(UTC)
    return await store.claim(worker_id, now, now + timedelta(seconds=settings.lease_seconds))


async def drive_once(store: RunStore, settings: Settings, worker_id: str = "test-worker") -> Any:
    """Claim the next due run and drive it until it suspends or ends (no background)."""
    driver = await _test_driver(store, settings, worker_id)
    record = await _claim_due(store, settings, worker_id)
    assert record is not None, "no due run to claim"
    return await driver.drive(record)


async def drive_due(store: RunStore, settings: Settings, worker_id: str = "test-worker") -> int:
    """Claim and drive due runs, one at a time, until none is due; how many were driven
    (a run resumed or created meanwhile, a child run, is driven too)."""
    driver = await _test_driver(store, settings, worker_id)
    driven = 0
    while (record := await _claim_due(store, settings, worker_id)) is not None:
        await driver.drive(record)
        driven += 1
    return driven


async def heard(listener: Any, count: int, quiet: float = 0.5) -> list[tuple[str, str]]:
    """The notifications a LISTENing psycopg connection receives: the first `count`
    waited for however late they come (up to 30 s), then any more within `quiet` seconds
    (that nothing more comes can only be watched for a while; that these came is sure)."""
    notes = [n async for n in listener.notifies(timeout=30, stop_after=count)]
    if len(notes) == count:
        notes += [n async for n in listener.notifies(timeout=quiet)]
    return [(n.channel, n.payload) for n in notes]


async def suspended_run(service: RunService, **overrides: Any) -> RunView:
    view, _ = await service.create_run(run_body(**overrides))
    await drive_once(service.store, service.settings)
    suspended = await service.get_run(view.record.id, scope=Scope.ALL)
    assert suspended.record.status == RunStatus.REQUIRES_ACTION, suspended.record
    return suspended


async def snapshot(store: RunStore, run_id: str) -> tuple[Any, ...]:
    """Everything stored about a run, to prove a refused request changed nothing."""
    return (
        await store.get(run_id, scope=Scope.ALL),
        await store.tool_calls(run_id),
        await store.events(run_id),
    )


@asynccontextmanager
async def api_client(settings: Settings, key: str) -> AsyncIterator[Any]:
    """An in-process API (lifespan run) and an httpx client holding `key`; the app is
    the client's `.app`."""
    import httpx

    from app.main import create_app

    app = create_app(settings)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app),
            base_url="http://test",
            headers={"Authorization": f"Bearer {key}"},
        ) as client,
    ):
        client.app = app  # type: ignore[attr-defined]
        yield client


#: Every table of runs' rows and the runs (children first), to empty between tests.
RUN_TABLES = (*(t.name for t in RUN_ROWS), "runs")
#: What a clean database holds none of: the runs, their rows, the fold's rollups, and API
#: keys (a key left by one test would end open mode for the next).
CLEAN_TABLES = (
    *RUN_TABLES,
    "unfolded_runs",
    "usage_hourly",
    "latency_hourly",
    "gauge_samples",
    "run_counts",
    "run_endings",
    "api_keys",
    "fair_ranks",
    "agents",
    "schedules",
    "schedule_ticks",
)


async def cancel_inside(
    target: object, name: str, caller: Awaitable[Any], monkeypatch: pytest.MonkeyPatch
) -> list[object]:
    """Cancels `caller` while it is inside its call of `target.<name>`, checks that the
    caller is cancelled at once and the call is not (it finishes once let go on), and
    returns what the call returned."""
    started, go_on = asyncio.Event(), asyncio.Event()
    finished: list[object] = []
    call = getattr(target, name)

    async def held(*args: Any, **kwargs: Any) -> Any:
        started.set()
        await go_on.wait()
        finished.append(await call(*args, **kwargs))
        return finished[-1]

    monkeypatch.setattr(target, name, held)
    task = asyncio.ensure_future(caller)
    await asyncio.wait_for(started.wait(), 5)
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        pass
    else:
        raise AssertionError("the caller was not cancelled")
    assert finished == [], "the call finished before it was let go on"
    go_on.set()
    return await wait_for(lambda: asyncio.sleep(0, finished), lambda got: len(got) == 1)


def counts_at_once(script: str, args: list[str], processes: int) -> list[int]:
    """Start `processes` Python processes running `script` with `args`, each with its own
    pool; once every one printed `ready`, tell all of them `go` together, and return the
    count each printed (concurrency tests across real processes)."""
    root = Path(__file__).resolve().parents[1]
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", script, *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=root,
        )
        for _ in range(processes)
    ]
    try:
        for p in procs:
            assert p.stdout is not None and p.stdout.readline().strip() == "ready"
        for p in procs:
            assert p.stdin is not None
            p.stdin.write("go\n")
            p.stdin.flush()
        return [int(p.communicate(timeout=30)[0].strip()) for p in procs]
    finally:
        for p in procs:
            p.kill() if p.poll() is None else None


async def bare_run(
    conn: Any,
    run_id: str,
    at: datetime,
    *,
    status: str = "queued",
    tenant: str = "default",
    config: dict[str, Any] | None = None,
) -> None:
    """A run's two rows (`runs`, `run_configs`) written directly, created and last changed
    at `at`: for tests of reads across runs that need ids, times and tenants of their own."""
    await conn.execute(
        runs.insert().values(
            id=run_id,
            status=status,
            state="{}",
            schema_version=2,
            available_at=at,
            max_turns=5,
            created_at=at,
            updated_at=at,
            tenant_id=tenant,
        )
    )
    await conn.execute(
        run_configs.insert().values(
            run_id=run_id, config=config or {}, metadata={}, created_at=at, tenant_id=tenant
        )
    )
