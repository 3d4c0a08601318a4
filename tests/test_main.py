"""The composition root: one store under the service, its reads, the hub and the worker,
started together and stopped in order; the app factory serves the API and the dashboard."""

from __future__ import annotations

import contextlib

import httpx

from app.core.lifecycle import RunStatus
from app.core.scope import Scope
from app.main import create_app, running
from app.settings import Settings
from app.store.runs import RunStore
from tests.helpers import run_body, wait_status


async def test_a_process_with_workers_drives_what_its_service_creates(
    store: RunStore, settings: Settings
) -> None:
    async with running(settings, pool_size=4, worker_slots=2) as c:
        assert c.hub is None and c.worker is not None and c.worker_task is not None
        view, _ = await c.service.create_run(run_body())
        await wait_status(c.service, view.record.id, RunStatus.REQUIRES_ACTION)
        record = await c.reads.run(view.record.id, scope=Scope.ALL)
        assert record is not None
        assert len((await c.reads.pending_calls([record]))[record.id]) == 2
    # Stopped on the way out, cleanly.
    assert c.worker_task.done() and c.worker_task.exception() is None


async def test_an_api_process_streams_what_its_service_writes(
    store: RunStore, settings: Settings
) -> None:
    async with running(settings, pool_size=2, hub=True) as c:
        assert c.worker is None and c.worker_task is None and c.hub is not None
        view, _ = await c.service.create_run(run_body())
        async with contextlib.aclosing(c.hub.stream(view.record.id, 0)) as stream:
            first = await anext(stream)
        assert (first.run_id, first.type) == (view.record.id, "run.created")


async def test_the_app_serves_the_api_and_the_dashboard(
    store: RunStore, settings: Settings
) -> None:
    app = create_app(settings)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as client,
    ):
        assert (await client.get("/readyz")).json() == {"status": "ok"}
        assert (await client.get("/v1/runs")).status_code == 200  # open mode: no keys
        assert (await client.get("/admin/login")).status_code == 200
        assert "agentrun_runs" in (await client.get("/metrics")).text
