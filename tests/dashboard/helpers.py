"""Runs in each interesting state, made through the service (and one worker step)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from app.core.lifecycle import RunStatus
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
    parked = await service.get_run(view.record.id)
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
    failed = await service.get_run(view.record.id)
    assert failed.record.status == RunStatus.FAILED, failed.record
    return failed


async def expired_run(service: RunService, **overrides: Any) -> RunView:
    view = await suspended_run(service, **overrides)
    later = datetime.now(UTC) + timedelta(days=30)
    assert view.record.id in await service.store.expire_suspended(later)
    return await service.get_run(view.record.id)


async def completed_run(service: RunService) -> RunView:
    view, _ = await service.create_run(run_body(model={"provider": "scripted", "name": "demo"}))
    await drive_once(service.store, service.settings)
    done = await service.get_run(view.record.id)
    if done.record.status == RunStatus.REQUIRES_ACTION:
        from tests.helpers import results_for

        await service.submit_tool_results(results_for(done), run_id=done.record.id)
        await drive_once(service.store, service.settings)
        done = await service.get_run(view.record.id)
    assert done.record.status == RunStatus.COMPLETED, done.record
    return done
