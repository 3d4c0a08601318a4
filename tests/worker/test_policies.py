"""Worker behaviour: invalid-call policies, provider errors and backoff, reaping, expiry."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from app.clock import SYSTEM_CLOCK
from app.core.lifecycle import RunStatus
from app.core.scope import Scope
from app.providers.base import ModelRequest, ProviderError, ProviderTurn
from app.service.runs import RunService
from app.service.tokens import new_key
from app.settings import Settings
from app.store.runs import RunStore
from app.worker.driver import RunDriver
from tests.helpers import (
    drive_once,
    results_for,
    run_body,
    running_worker,
    wait_for,
    wait_status,
)
from tests.mocks.gate import Gate


@pytest.fixture
def service(store: RunStore, settings: Settings) -> RunService:
    return RunService(store, settings)


def bad_call_body(policy: dict[str, Any]) -> Any:
    return run_body(
        model={
            "provider": "scripted",
            "name": "demo",
            "script": [
                {"tool_calls": [{"name": "sub", "arguments": {"a": 1, "b": 2}}]},
                {"text": "recovered"},
            ],
        },
        invalid_tool_call=policy,
    )


async def test_fail_policy_fails_the_run(service: RunService) -> None:
    view, _ = await service.create_run(bad_call_body({"action": "fail"}))
    assert await drive_once(service.store, service.settings) == RunStatus.FAILED
    run = await service.get_run(view.record.id, scope=Scope.ALL)
    assert run.record.error is not None
    assert run.record.error["type"] == "UnknownToolCall"
    assert "`sub`" in run.record.error["message"]


async def test_retry_policy_tells_the_model_and_continues(service: RunService) -> None:
    view, _ = await service.create_run(
        bad_call_body({"action": "retry", "feedback": "use add", "max_retries": 1})
    )
    assert await drive_once(service.store, service.settings) == RunStatus.COMPLETED
    run = await service.get_run(view.record.id, scope=Scope.ALL)
    assert run.record.output == "recovered"
    state = await service.load_run(run.record.id, scope=Scope.ALL)
    assert len(state.messages()) == 4  # prompt, rejected turn, feedback results, answer


async def test_repair_policy_renames_and_suspends_for_the_repaired_tool(
    service: RunService,
) -> None:
    view, _ = await service.create_run(
        bad_call_body({"action": "repair", "repair_to": {"sub": "add"}})
    )
    assert await drive_once(service.store, service.settings) == RunStatus.REQUIRES_ACTION
    run = await service.get_run(view.record.id, scope=Scope.ALL)
    assert [c.name for c in run.pending] == ["add"]


async def test_skip_policy_answers_without_suspending(service: RunService) -> None:
    view, _ = await service.create_run(bad_call_body({"action": "skip", "reason": "no sub"}))
    assert await drive_once(service.store, service.settings) == RunStatus.COMPLETED
    state = await service.load_run(view.record.id, scope=Scope.ALL)
    results = state.messages()[2].content  # the preresolved answer, never executed
    assert results[0].content[0].text == "no sub"  # type: ignore[union-attr]


async def test_stop_policy_cancels_with_the_reason(service: RunService) -> None:
    view, _ = await service.create_run(bad_call_body({"action": "stop", "reason": "halt"}))
    assert await drive_once(service.store, service.settings) == RunStatus.FAILED
    run = await service.get_run(view.record.id, scope=Scope.ALL)
    error = run.record.error
    assert error is not None
    assert error["type"] == "PromptCancelled" and error["message"] == "PromptCancelled: halt"
    assert error["history_length"] == 2  # the prompt and the rejected assistant turn
    last = error["last_message"]
    assert last["role"] == "assistant"
    assert [c["function"]["name"] for c in last["content"]] == ["sub"]


async def test_max_turns_exhaustion_fails_with_the_upstream_text(service: RunService) -> None:
    view, _ = await service.create_run(run_body(max_turns=1))
    await drive_once(service.store, service.settings)
    run = await service.get_run(view.record.id, scope=Scope.ALL)
    await service.submit_tool_results(results_for(run), run_id=view.record.id, scope=Scope.ALL)
    assert await drive_once(service.store, service.settings) == RunStatus.FAILED
    failed = await service.get_run(view.record.id, scope=Scope.ALL)
    assert failed.record.error["message"] == "MaxTurnsError: reached max turns limit: 1"  # type: ignore[index]
    # The stored state is the last durable one, so an operator can retry from it.
    assert (await service.load_run(failed.record.id, scope=Scope.ALL)).status == "PreparingRequest"


async def test_retryable_provider_error_backs_off_visibly(service: RunService) -> None:
    body = run_body(model={"provider": "scripted", "name": "demo", "fail_times": 2})
    view, _ = await service.create_run(body)
    assert await drive_once(service.store, service.settings) == RunStatus.QUEUED
    waiting = (await service.get_run(view.record.id, scope=Scope.ALL)).record
    assert waiting.waiting_reason is not None
    assert waiting.waiting_reason["type"] == "backoff"
    assert waiting.waiting_reason["attempt"] == 1
    assert waiting.waiting_reason["error"]["status"] == 503
    assert waiting.model_attempts == 1
    async with running_worker(service.store, service.settings):
        done = await wait_status(service, view.record.id, RunStatus.REQUIRES_ACTION)
    assert done.record.model_attempts == 0
    types = [e.type for e in await service.store.events(view.record.id)]
    assert types.count("model.failed") == 2


class Refusing:
    name = "refusing"

    async def complete(self, request: ModelRequest) -> ProviderTurn:
        raise ProviderError("invalid api key", status=401, retryable=False, provider="openai")

    def stream(self, request: ModelRequest) -> Any:
        raise NotImplementedError


async def test_non_retryable_provider_error_fails_with_status_and_message(
    service: RunService,
) -> None:
    view, _ = await service.create_run(run_body())
    key = await service.store.secret("callback_key", new_key)
    driver = RunDriver(
        service.store, service.settings, "w", lambda s: Refusing(), key, clock=SYSTEM_CLOCK
    )
    now = datetime.now(UTC)
    record = await service.store.claim("w", now, now + timedelta(seconds=5))
    assert record is not None
    assert await driver.drive(record) == RunStatus.FAILED
    failed = (await service.get_run(view.record.id, scope=Scope.ALL)).record
    assert failed.error == {
        "type": "provider_error",
        "provider": "openai",
        "status": 401,
        "message": "invalid api key",
        "retryable": False,
    }


async def test_retryable_errors_fail_after_the_attempt_budget(
    store: RunStore, database_url: str
) -> None:
    from tests.conftest import make_settings

    settings = make_settings(database_url, provider_max_attempts=2)
    service = RunService(store, settings)
    body = run_body(model={"provider": "scripted", "name": "demo", "fail_times": 5})
    view, _ = await service.create_run(body)
    async with running_worker(store, settings):
        failed = await wait_status(service, view.record.id, RunStatus.FAILED)
    assert failed.record.error is not None and failed.record.error["status"] == 503


async def test_reaper_requeues_a_run_whose_worker_vanished(
    store: RunStore, database_url: str
) -> None:
    from tests.conftest import make_settings

    # The ghost's lease has lapsed already (it never heartbeats); the rescuer's own lease
    # is the usual one, so a slow machine cannot make it lapse too (attempts 3, seen).
    settings = make_settings(database_url)
    service = RunService(store, settings)
    view, _ = await service.create_run(run_body())
    now = datetime.now(UTC)
    assert await store.claim("ghost", now, now - timedelta(seconds=1))
    async with running_worker(store, settings, worker_id="rescuer"):
        done = await wait_status(service, view.record.id, RunStatus.REQUIRES_ACTION)
    types = [e.type for e in await store.events(view.record.id)]
    assert "run.lease_lost" in types
    assert done.record.attempts == 2


async def test_suspended_runs_expire(store: RunStore, database_url: str) -> None:
    from tests.conftest import make_settings

    settings = make_settings(database_url, default_expires_in=0.2)
    service = RunService(store, settings)
    view, _ = await service.create_run(run_body())
    async with running_worker(store, settings):
        expired = await wait_status(service, view.record.id, RunStatus.EXPIRED)
    assert expired.callback_url is None
    assert expired.record.error == {"type": "expired", "message": "the run waited past expires_at"}


async def test_a_run_s_own_expires_in_applies(store: RunStore, settings: Settings) -> None:
    service = RunService(store, settings)
    view, _ = await service.create_run(run_body(expires_in=0.3))
    async with running_worker(store, settings):
        expired = await wait_status(service, view.record.id, RunStatus.EXPIRED)
    assert expired.record.status == RunStatus.EXPIRED


async def test_model_calls_of_a_cancelled_claim_stay_on_the_usage_ledger(
    store: RunStore, settings: Settings
) -> None:
    service = RunService(store, settings)
    start = datetime.now(UTC) - timedelta(seconds=1)
    # (An answer that never comes: the abort, not the answer, ends the call.)
    model = {"provider": "scripted", "name": "demo", "script": [{"text": "x"}]}
    view, _ = await service.create_run(run_body(model=model, tools=[]))

    async def types_now() -> list[str]:
        return [e.type for e in await store.events(view.record.id)]

    gate = Gate()
    async with running_worker(store, settings, providers=gate.providers(settings)):
        await gate.holding(1)  # (the call is under way)
        await service.cancel(view.record.id, scope=Scope.ALL)
        # The model call is aborted (app.worker.stops) and billed as such.
        await wait_for(types_now, lambda types: "model.aborted" in types, timeout=10)
    record = (await service.get_run(view.record.id, scope=Scope.ALL)).record
    assert record.status == RunStatus.CANCELLED and record.output is None
    totals = await store.usage_totals(
        start, datetime.now(UTC) + timedelta(seconds=1), scope=Scope.ALL
    )
    # On the ledger, with what the provider reported before the abort (a blocking call:
    # nothing).
    assert totals["calls"] == 1 and totals["input_tokens"] == 0
    assert totals["failed_calls"] == 0  # (aborted, not failed)
    events = await store.events(view.record.id)
    types = [e.type for e in events]
    assert types[-1] == "model.aborted" and "run.completed" not in types
    assert events[-1].data["usage_reported"] is False and events[-1].data["turn"] == 1
