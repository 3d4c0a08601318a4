"""The service layer on both back ends: every operation and every refusal."""

from __future__ import annotations

import asyncio
import base64

import pytest

from app.core.lifecycle import RunStatus
from app.core.scope import Scope
from app.service.errors import (
    CallbackTokenInvalid,
    IdempotencyKeyReused,
    InvalidRequest,
    RunNotFound,
    RunStateConflict,
    ToolCallNotPending,
    ToolResultConflict,
)
from app.service.runs import RunService
from app.service.schemas import ResolutionIn, ToolResultsIn
from app.settings import Settings
from app.store.runs import RunStore
from tests.helpers import drive_once, results_for, run_body, snapshot, suspended_run


@pytest.fixture
def service(store: RunStore, settings: Settings) -> RunService:
    return RunService(store, settings)


def results(*pairs: tuple[str, object]) -> ToolResultsIn:
    return ToolResultsIn.model_validate(
        {"results": [{"tool_call_id": i, "output": o} for i, o in pairs]}
    )


async def test_create_and_get(service: RunService) -> None:
    view, created = await service.create_run(run_body(metadata={"team": "a"}))
    assert created
    got = await service.get_run(view.record.id, scope=Scope.ALL)
    assert got.record.status == RunStatus.QUEUED
    assert got.record.metadata == {"team": "a"}
    assert got.record.max_turns == 4
    assert got.record.waiting_reason == {"type": "queued"}
    assert got.record.id.startswith("run_")


async def test_default_max_turns_comes_from_settings(service: RunService) -> None:
    view, _ = await service.create_run(run_body(max_turns=None))
    assert view.record.max_turns == service.settings.default_max_turns


async def test_get_unknown_run_is_refused(service: RunService) -> None:
    with pytest.raises(RunNotFound):
        await service.get_run("run_missing", scope=Scope.ALL)


async def test_tool_choice_must_name_a_defined_tool(service: RunService) -> None:
    with pytest.raises(InvalidRequest, match="not defined: nope"):
        await service.create_run(run_body(tool_choice={"name": "nope"}))
    assert await service.store.count_by_status(scope=Scope.ALL) == {}


async def test_repair_target_must_be_a_defined_tool(service: RunService) -> None:
    with pytest.raises(InvalidRequest, match="undefined tool: nope"):
        await service.create_run(
            run_body(invalid_tool_call={"action": "repair", "repair_to": {"x": "nope"}})
        )


async def test_idempotent_replay_returns_the_same_run(service: RunService) -> None:
    first, created = await service.create_run(run_body(), idempotency_key="k1")
    again, created_again = await service.create_run(run_body(), idempotency_key="k1")
    assert created and not created_again
    assert again.record.id == first.record.id
    assert await service.store.count_by_status(scope=Scope.ALL) == {"queued": 1}


async def test_idempotency_key_with_another_body_is_refused(service: RunService) -> None:
    await service.create_run(run_body(), idempotency_key="k1")
    with pytest.raises(IdempotencyKeyReused):
        await service.create_run(run_body(prompt="something else"), idempotency_key="k1")
    assert await service.store.count_by_status(scope=Scope.ALL) == {"queued": 1}


async def test_concurrent_duplicates_create_exactly_one_run(service: RunService) -> None:
    outcomes = await asyncio.gather(
        *[service.create_run(run_body(), idempotency_key="same") for _ in range(8)]
    )
    assert len({view.record.id for view, _ in outcomes}) == 1
    assert sum(created for _, created in outcomes) == 1
    assert await service.store.count_by_status(scope=Scope.ALL) == {"queued": 1}


async def test_list_is_newest_first_with_a_cursor(service: RunService) -> None:
    ids = [(await service.create_run(run_body()))[0].record.id for _ in range(5)]
    page, cursor = await service.list_runs(status=None, limit=2, cursor=None, scope=Scope.ALL)
    assert [v.record.id for v in page] == ids[::-1][:2]
    seen = [v.record.id for v in page]
    while cursor:
        page, cursor = await service.list_runs(status=None, limit=2, cursor=cursor, scope=Scope.ALL)
        seen += [v.record.id for v in page]
    assert seen == ids[::-1]
    only, _ = await service.list_runs(
        status=RunStatus.COMPLETED, limit=10, cursor=None, scope=Scope.ALL
    )
    assert only == []


@pytest.mark.parametrize(
    "created",
    [
        "!!not-a-cursor",
        "2026-12-05T10:00:00",  # (no time zone)
        "0001-01-01T00:00:00+14:00",  # (before year 1 in UTC)
        "9999-12-31T23:59:59-14:00",  # (after year 9999 in UTC)
    ],
)
async def test_malformed_cursor_is_refused(service: RunService, created: str) -> None:
    cursor = base64.urlsafe_b64encode(f"{created}|run_a".encode()).decode()
    if created.startswith("!!"):
        cursor = created
    for listing in (
        service.list_runs(status=None, limit=2, cursor=cursor, scope=Scope.ALL),
        service.children("run_a", limit=2, cursor=cursor, scope=Scope.ALL),
    ):
        with pytest.raises(InvalidRequest, match="cursor"):
            await listing


async def test_results_may_arrive_in_several_posts(service: RunService) -> None:
    view = await suspended_run(service)
    first, second = view.pending
    out = await service.submit_tool_results(
        results((first.call_id, "3")), run_id=view.record.id, scope=Scope.ALL
    )
    assert out.accepted == [first.call_id] and not out.resumed
    assert out.record.status == RunStatus.REQUIRES_ACTION
    assert out.record.waiting_reason["call_ids"] == [second.call_id]  # type: ignore[index]
    out = await service.submit_tool_results(
        results((second.call_id, "7")), run_id=view.record.id, scope=Scope.ALL
    )
    assert out.resumed and out.record.status == RunStatus.QUEUED
    await drive_once(service.store, service.settings)
    done = await service.get_run(view.record.id, scope=Scope.ALL)
    assert done.record.status == RunStatus.COMPLETED


async def test_identical_resend_is_a_no_op(service: RunService) -> None:
    view = await suspended_run(service)
    first = view.pending[0]
    await service.submit_tool_results(
        results((first.call_id, "3")), run_id=view.record.id, scope=Scope.ALL
    )
    before = await snapshot(service.store, view.record.id)
    out = await service.submit_tool_results(
        results((first.call_id, "3")), run_id=view.record.id, scope=Scope.ALL
    )
    assert out.accepted == [] and not out.resumed
    assert await snapshot(service.store, view.record.id) == before


async def test_different_result_for_an_answered_call_is_refused(service: RunService) -> None:
    view = await suspended_run(service)
    first = view.pending[0]
    await service.submit_tool_results(
        results((first.call_id, "3")), run_id=view.record.id, scope=Scope.ALL
    )
    before = await snapshot(service.store, view.record.id)
    with pytest.raises(ToolResultConflict):
        await service.submit_tool_results(
            results((first.call_id, "4")), run_id=view.record.id, scope=Scope.ALL
        )
    assert await snapshot(service.store, view.record.id) == before


async def test_unknown_call_id_is_refused_and_nothing_changes(service: RunService) -> None:
    view = await suspended_run(service)
    before = await snapshot(service.store, view.record.id)
    with pytest.raises(ToolCallNotPending):
        await service.submit_tool_results(
            results((view.pending[0].call_id, "3"), ("call_nope", "1")),
            run_id=view.record.id,
            scope=Scope.ALL,
        )
    assert await snapshot(service.store, view.record.id) == before


async def test_results_for_a_run_not_waiting_are_refused(service: RunService) -> None:
    view, _ = await service.create_run(run_body())
    with pytest.raises(RunStateConflict) as refused:
        await service.submit_tool_results(
            results(("call_1", "3")), run_id=view.record.id, scope=Scope.ALL
        )
    assert refused.value.current == "queued"
    with pytest.raises(RunNotFound):
        await service.submit_tool_results(
            results(("call_1", "3")), run_id="run_missing", scope=Scope.ALL
        )


async def test_callback_token_works_for_its_run_only_and_stops_after_resume(
    service: RunService,
) -> None:
    view = await suspended_run(service)
    other = await suspended_run(service)
    assert view.callback_url and other.callback_url
    token = view.callback_url.split("/v1/callbacks/")[1].split("/")[0]
    with pytest.raises(ToolCallNotPending):  # the token selects its own run, not `other`
        await service.submit_tool_results(
            results((other.pending[0].call_id + "x", "1")), token=token, scope=Scope.ALL
        )
    out = await service.submit_tool_results(results_for(view), token=token, scope=Scope.ALL)
    assert out.resumed and out.record.id == view.record.id
    with pytest.raises(CallbackTokenInvalid):
        await service.submit_tool_results(results_for(view), token=token, scope=Scope.ALL)
    with pytest.raises(CallbackTokenInvalid):
        await service.submit_tool_results(results_for(view), token="guessed-token", scope=Scope.ALL)


async def test_cancel_from_each_live_status(service: RunService) -> None:
    queued, _ = await service.create_run(run_body())
    assert (
        await service.cancel(queued.record.id, scope=Scope.ALL)
    ).record.status == RunStatus.CANCELLED
    suspended = await suspended_run(service)
    cancelled = await service.cancel(suspended.record.id, scope=Scope.ALL)
    assert cancelled.record.status == RunStatus.CANCELLED
    assert cancelled.callback_url is None
    with pytest.raises(RunStateConflict) as refused:
        await service.cancel(suspended.record.id, scope=Scope.ALL)
    assert refused.value.current == "cancelled"
    with pytest.raises(RunStateConflict):
        await service.submit_tool_results(
            results_for(suspended), run_id=suspended.record.id, scope=Scope.ALL
        )
    with pytest.raises(RunNotFound):
        await service.cancel("run_missing", scope=Scope.ALL)


async def test_ask_policy_suspends_for_a_resolution(service: RunService) -> None:
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
    assert parked.record.status == RunStatus.REQUIRES_ACTION
    assert parked.resolution is not None and parked.resolution.tool_name == "sub"
    with pytest.raises(RunStateConflict):  # waiting for a resolution, not for results
        await service.submit_tool_results(
            results(("x", "1")), run_id=view.record.id, scope=Scope.ALL
        )
    with pytest.raises(InvalidRequest):
        await service.resolve(view.record.id, ResolutionIn(action="repair"), scope=Scope.ALL)
    resolved = await service.resolve(
        view.record.id, ResolutionIn(action="repair", tool_name="add"), scope=Scope.ALL
    )
    assert resolved.record.status == RunStatus.QUEUED
    with pytest.raises(RunStateConflict):
        await service.resolve(view.record.id, ResolutionIn(action="fail"), scope=Scope.ALL)
    await drive_once(service.store, service.settings)
    waiting = await service.get_run(view.record.id, scope=Scope.ALL)
    assert waiting.record.status == RunStatus.REQUIRES_ACTION  # now waiting for the tool
    assert [c.name for c in waiting.pending] == ["add"]


async def test_failed_resolution_fails_the_run(service: RunService) -> None:
    body = run_body(
        model={
            "provider": "scripted",
            "name": "demo",
            "script": [{"tool_calls": [{"name": "sub", "arguments": {}}]}],
        },
        invalid_tool_call={"action": "ask"},
    )
    view, _ = await service.create_run(body)
    await drive_once(service.store, service.settings)
    failed = await service.resolve(view.record.id, ResolutionIn(action="fail"), scope=Scope.ALL)
    assert failed.record.status == RunStatus.FAILED
    assert failed.record.error and failed.record.error["type"] == "UnknownToolCall"
