"""app.service.operator_actions: extend expiry and retry, their events, and their refusals."""

from __future__ import annotations

from datetime import timedelta

import pytest

from app.core.lifecycle import RunStatus
from app.core.scope import Scope
from app.service import operator_actions as operator
from app.service.errors import InvalidRequest, RunNotFound, RunStateConflict
from app.service.runs import RunService
from app.service.schemas import ToolResultsIn
from app.settings import Settings
from app.store.runs import RunStore
from tests.dashboard.helpers import completed_run, expired_run, failed_run
from tests.helpers import drive_once, results_for, run_body, snapshot, suspended_run


@pytest.fixture
def service(store: RunStore, settings: Settings) -> RunService:
    return RunService(store, settings)


async def test_extend_expiry_moves_expires_at_and_records_the_actor(service: RunService) -> None:
    view = await suspended_run(service)
    before = view.record.expires_at
    assert before is not None
    updated = await operator.extend_expiry(
        service, view.record.id, 3600, "key:abc", scope=Scope.ALL
    )
    assert updated.status == RunStatus.REQUIRES_ACTION
    assert updated.expires_at == before + timedelta(seconds=3600)
    events = await service.store.events(view.record.id)
    assert events[-1].type == "run.expiry_extended"
    assert events[-1].actor == "key:abc"
    assert events[-1].data["seconds"] == 3600
    # Still answerable: the pending calls and the callback are untouched.
    after = await service.get_run(view.record.id, scope=Scope.ALL)
    assert [c.call_id for c in after.pending] == [c.call_id for c in view.pending]
    outcome = await service.submit_tool_results(
        results_for(after), run_id=view.record.id, scope=Scope.ALL
    )
    assert outcome.resumed


async def test_extend_a_non_suspended_run_is_refused_and_changes_nothing(
    service: RunService,
) -> None:
    done = await completed_run(service)
    with pytest.raises(RunStateConflict) as err:
        await operator.extend_expiry(service, done.record.id, 60, "key:abc", scope=Scope.ALL)
    assert err.value.current == "completed"
    queued, _ = await service.create_run(run_body())
    before = await snapshot(service.store, queued.record.id)
    with pytest.raises(RunStateConflict) as err:
        await operator.extend_expiry(service, queued.record.id, 60, "key:abc", scope=Scope.ALL)
    assert err.value.current == "queued"
    assert "queued" in err.value.detail
    assert await snapshot(service.store, queued.record.id) == before


async def test_extend_refuses_bad_durations_and_unknown_runs(service: RunService) -> None:
    view = await suspended_run(service)
    for seconds in (0, -5, 10**9):
        with pytest.raises(InvalidRequest):
            await operator.extend_expiry(
                service, view.record.id, seconds, "key:abc", scope=Scope.ALL
            )
    with pytest.raises(RunNotFound):
        await operator.extend_expiry(service, "run_missing", 60, "key:abc", scope=Scope.ALL)


async def test_retry_an_expired_run_resumes_from_its_last_durable_state(
    service: RunService,
) -> None:
    expired = await expired_run(service)
    assert expired.record.status == RunStatus.EXPIRED
    retried = await operator.retry_run(service, expired.record.id, "key:abc", scope=Scope.ALL)
    assert retried.status == RunStatus.QUEUED
    assert retried.error is None
    assert retried.waiting_reason == {"type": "queued"}
    events = await service.store.events(expired.record.id)
    assert events[-1].type == "run.retried"
    assert events[-1].actor == "key:abc"
    assert events[-1].data["from_status"] == "expired"
    # The worker picks it up from the stored state: the same tool calls are asked again.
    await drive_once(service.store, service.settings)
    again = await service.get_run(expired.record.id, scope=Scope.ALL)
    assert again.record.status == RunStatus.REQUIRES_ACTION
    assert [(c.name, c.arguments) for c in again.pending] == [
        ("add", {"a": 1, "b": 2}),
        ("add", {"a": 3, "b": 4}),
    ]
    await service.submit_tool_results(results_for(again), run_id=again.record.id, scope=Scope.ALL)
    await drive_once(service.store, service.settings)
    assert (
        await service.get_run(again.record.id, scope=Scope.ALL)
    ).record.status == RunStatus.COMPLETED


async def test_retry_a_failed_run_queues_it(service: RunService) -> None:
    failed = await failed_run(service)
    retried = await operator.retry_run(service, failed.record.id, "key:abc", scope=Scope.ALL)
    assert retried.status == RunStatus.QUEUED
    assert retried.model_attempts == 0


async def test_retry_a_completed_run_is_refused_and_changes_nothing(
    service: RunService,
) -> None:
    done = await completed_run(service)
    before = await snapshot(service.store, done.record.id)
    with pytest.raises(RunStateConflict) as err:
        await operator.retry_run(service, done.record.id, "key:abc", scope=Scope.ALL)
    assert err.value.current == "completed"
    assert "completed" in err.value.detail
    assert await snapshot(service.store, done.record.id) == before
    suspended = await suspended_run(service)
    with pytest.raises(RunStateConflict) as err:
        await operator.retry_run(service, suspended.record.id, "key:abc", scope=Scope.ALL)
    assert err.value.current == "requires_action"
    with pytest.raises(RunNotFound):
        await operator.retry_run(service, "run_missing", "key:abc", scope=Scope.ALL)


async def test_retry_race_has_one_winner(service: RunService) -> None:
    import asyncio

    expired = await expired_run(service)
    outcomes = await asyncio.gather(
        *(
            operator.retry_run(service, expired.record.id, f"key:{i}", scope=Scope.ALL)
            for i in range(4)
        ),
        return_exceptions=True,
    )
    wins = [o for o in outcomes if not isinstance(o, BaseException)]
    losses = [o for o in outcomes if isinstance(o, RunStateConflict)]
    assert len(wins) == 1 and len(losses) == 3
    events = await service.store.events(expired.record.id)
    assert [e.type for e in events].count("run.retried") == 1


async def test_note_records_an_event_on_a_suspended_run_only(service: RunService) -> None:
    view = await suspended_run(service)
    await operator.note(service, view.record.id, "operator.note", {"x": 1}, "key:abc")
    events = await service.store.events(view.record.id)
    assert (events[-1].type, events[-1].actor, events[-1].data) == (
        "operator.note",
        "key:abc",
        {"x": 1},
    )
    await service.cancel(view.record.id, scope=Scope.ALL)
    with pytest.raises(RunStateConflict):
        await operator.note(service, view.record.id, "operator.note", {}, "key:abc")


async def test_submit_tool_results_names_the_operator_of_a_partial_submission(
    service: RunService,
) -> None:
    view = await suspended_run(service)
    first, second = results_for(view).results
    partial = await operator.submit_tool_results(
        service, view.record.id, ToolResultsIn(results=[first]), "key:abc", scope=Scope.ALL
    )
    assert partial.accepted == [first.tool_call_id] and not partial.resumed
    events = await service.store.events(view.record.id)
    assert (events[-1].type, events[-1].actor, events[-1].data) == (
        "tool_result.submitted_by_operator",
        "key:abc",
        {"tool_call_ids": [first.tool_call_id]},
    )
    rest = await operator.submit_tool_results(
        service, view.record.id, ToolResultsIn(results=[second]), "key:def", scope=Scope.ALL
    )
    assert rest.resumed
    events = await service.store.events(view.record.id)
    assert (events[-1].type, events[-1].actor) == ("run.resumed", "key:def")
    assert [e.type for e in events].count("tool_result.submitted_by_operator") == 1
