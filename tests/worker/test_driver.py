"""A worker drives runs with the scripted provider: suspend, resume, complete."""

from __future__ import annotations

from app.core.lifecycle import RunStatus
from app.core.scope import Scope
from app.service.runs import RunService
from app.settings import Settings
from app.store.runs import RunStore
from tests.helpers import results_for, run_body, running_worker, wait_status


async def test_run_suspends_on_tools_and_completes_after_results(
    store: RunStore, settings: Settings
) -> None:
    service = RunService(store, settings)
    view, created = await service.create_run(run_body())
    assert created and view.record.status == RunStatus.QUEUED
    async with running_worker(store, settings, concurrency=2):
        suspended = await wait_status(service, view.record.id, RunStatus.REQUIRES_ACTION)
        assert [c.name for c in suspended.pending] == ["add", "add"]
        assert suspended.record.waiting_reason == {
            "type": "tool_results",
            "round": 1,
            "call_ids": [c.call_id for c in suspended.pending],
        }
        assert suspended.callback_url and "/v1/callbacks/" in suspended.callback_url
        state = await service.load_run(suspended.record.id, scope=Scope.ALL)
        assert state.status == "ExecutingTools"
        outcome = await service.submit_tool_results(
            results_for(suspended), run_id=view.record.id, scope=Scope.ALL
        )
        assert outcome.resumed
        done = await wait_status(service, view.record.id, RunStatus.COMPLETED)
    assert done.record.output == "the sums are 3 and 7"
    assert done.record.turn == 2
    assert done.record.usage and done.record.usage["input_tokens"] == 20
    events = [e.type for e in await store.events(view.record.id)]
    assert events == [
        "run.created",
        "run.claimed",
        "model.called",
        "run.requires_action",
        "tool_result.received",
        "tool_result.received",
        "run.resumed",
        "run.claimed",
        "model.called",
        "run.completed",
    ]
    final = await service.load_run(done.record.id, scope=Scope.ALL)
    assert final.is_done()
    assert len(final.messages()) == 4
