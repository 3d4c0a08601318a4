"""The run page shows each open call's queue and lease (both back ends)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import httpx

from app.service.runs import RunService
from app.toolqueue.sql import ToolCallQueue
from tests.helpers import suspended_run


async def test_the_run_page_shows_each_calls_queue_and_lease(
    admin: httpx.AsyncClient, service: RunService
) -> None:
    view = await suspended_run(service, tool_queue="gpu")
    page = (await admin.get(f"/admin/runs/{view.record.id}")).text
    assert "Queue <code>gpu</code>: waiting for an executor." in page
    now = datetime.now(UTC)
    store = service.store
    queue = ToolCallQueue(store.backend)
    await queue.lease_calls("gpu", "box-1:77", now, now + timedelta(seconds=60), 1)
    await queue.lease_calls("gpu", "box-2:78", now, now - timedelta(seconds=1), 1)
    page = (await admin.get(f"/admin/runs/{view.record.id}")).text
    first = page.split('id="lease-0"')[1].split("</p>")[0]
    second = page.split('id="lease-1"')[1].split("</p>")[0]
    assert "leased by <code>box-1:77</code> until" in first and "(lease 1)" in first
    assert "the lease of <code>box-2:78</code> lapsed at" in second
