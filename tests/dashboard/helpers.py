"""Runs in each interesting state, made through the service (and one worker step), and
the action route's form posts."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import httpx

from app.core.lifecycle import RunStatus
from app.core.scope import Scope
from app.service.runs import RunService, RunView
from tests.helpers import drive_once, run_body, suspended_run


async def parked_run(service: RunService) -> RunView:
    """Suspended waiting for a resolution: the model called a tool that does not exist."""
    body = run_body(
        model={
            "provider": "scripted",
            "name": "demo",
            "script": [
                {"tool_calls": [{"name": "sub", "arguments": {"a": 1}}]},
                {"text": "done"},
            ],
        },
        invalid_tool_call={"action": "ask"},
    )
    view, _ = await service.create_run(body)
    await drive_once(service.store, service.settings)
    parked = await service.get_run(view.record.id, scope=Scope.ALL)
    assert parked.resolution is not None
    return parked


async def failed_run(service: RunService) -> RunView:
    """Failed: an invalid tool call under the default `fail` policy."""
    body = run_body(
        model={
            "provider": "scripted",
            "name": "demo",
            "script": [{"tool_calls": [{"name": "nope", "arguments": {}}]}],
        },
    )
    view, _ = await service.create_run(body)
    await drive_once(service.store, service.settings)
    failed = await service.get_run(view.record.id, scope=Scope.ALL)
    assert failed.record.status == RunStatus.FAILED, failed.record
    return failed


async def expired_run(service: RunService, **overrides: Any) -> RunView:
    view = await suspended_run(service, **overrides)
    later = datetime.now(UTC) + timedelta(days=30)
    assert view.record.id in await service.store.expire_suspended(later)
    return await service.get_run(view.record.id, scope=Scope.ALL)


async def completed_run(service: RunService) -> RunView:
    view, _ = await service.create_run(run_body(model={"provider": "scripted", "name": "demo"}))
    await drive_once(service.store, service.settings)
    done = await service.get_run(view.record.id, scope=Scope.ALL)
    if done.record.status == RunStatus.REQUIRES_ACTION:
        from tests.helpers import results_for

        await service.submit_tool_results(results_for(done), run_id=done.record.id, scope=Scope.ALL)
        await drive_once(service.store, service.settings)
        done = await service.get_run(view.record.id, scope=Scope.ALL)
    assert done.record.status == RunStatus.COMPLETED, done.record
    return done


def csrf(client: httpx.AsyncClient) -> str:
    token: str = client.csrf  # type: ignore[attr-defined]
    return token


async def act(
    client: httpx.AsyncClient, run_id: str, verb: str, confirmed: bool = True, **fields: Any
) -> httpx.Response:
    """POST the action `verb` (its form fields as keywords) with the session's token."""
    data = {"csrf_token": csrf(client), **{k: str(v) for k, v in fields.items()}}
    if confirmed:
        data["confirmed"] = "yes"
    return await client.post(f"/admin/runs/{run_id}/{verb}", data=data)
