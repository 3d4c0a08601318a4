"""A failed model call through the worker, against the mock provider on 127.0.0.1: the
run waits as long as the provider said (or its own backoff), and `waiting_reason` says
which attempt failed, how, until when, and why that long."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from typing import Any

from app.clock import SYSTEM_CLOCK
from app.core.lifecycle import RunStatus
from app.core.scope import Scope
from app.service.runs import RunService
from app.service.schemas import RunCreate
from app.service.tokens import new_key
from app.settings import Settings
from app.store.runs import RunStore
from app.worker.driver import RunDriver
from app.worker.providers import make_provider
from tests.helpers import running_worker, wait_status
from tests.mocks.replies import MockToolCall, MockUsage, Reply
from tests.mocks.server import MockProviderServer
from tests.worker.test_model_params import wire_settings


async def backoff_after(
    store: RunStore, settings: Settings, mock: MockProviderServer, provider: str, fault: Reply
) -> dict[str, Any]:
    """Create a run, let the provider answer `fault`, return the run's waiting reason."""
    settings = wire_settings(settings, mock)
    service = RunService(store, settings)
    mock.script(fault)
    body = RunCreate.model_validate({"prompt": "hi", "model": {"provider": provider, "name": "m"}})
    view, _ = await service.create_run(body)
    key = await store.secret("callback_key", new_key)
    factory = lambda spec: make_provider(spec, settings, clock=SYSTEM_CLOCK)  # noqa: E731
    driver = RunDriver(store, settings, "w", factory, key, rng=random.Random(3), clock=SYSTEM_CLOCK)
    now = datetime.now(UTC)
    record = await store.claim("w", now, now + timedelta(seconds=5))
    assert record is not None
    assert await driver.drive(record) == RunStatus.QUEUED
    waiting = (await service.get_run(view.record.id, scope=Scope.ALL)).record
    reason = waiting.waiting_reason
    assert reason is not None and reason["type"] == "backoff"
    # the run is due exactly when its reason says, that long after the failure was written
    assert reason["until"].endswith("Z")
    until = datetime.fromisoformat(reason["until"])
    assert abs((waiting.available_at - until).total_seconds()) < 1e-3
    assert abs((until - waiting.updated_at).total_seconds() - reason["delay_seconds"]) < 0.01
    assert (reason["attempt"], reason["max_attempts"]) == (1, settings.provider_max_attempts)
    assert reason["status"] == reason["error"]["status"] == fault.status
    return reason


async def test_retry_after_sets_the_wait(
    store: RunStore, settings: Settings, mock: MockProviderServer
) -> None:
    fault = Reply.fault(429, "Rate limit reached", retry_after="7")
    reason = await backoff_after(store, settings, mock, "openai", fault)
    assert reason["reason"] == "retry_after"
    assert (reason["delay_seconds"], reason["provider_hint_seconds"]) == (7.0, 7.0)
    assert reason["header"] == "retry-after"
    assert reason["error"]["message"] == "Rate limit reached"


async def test_openai_rate_limit_reset_without_retry_after(
    store: RunStore, settings: Settings, mock: MockProviderServer
) -> None:
    fault = Reply.fault(429, "Rate limit reached for requests")
    fault.headers = {
        "x-ratelimit-remaining-requests": "0",
        "x-ratelimit-reset-requests": "6m0s",
        "x-ratelimit-remaining-tokens": "9000",
        "x-ratelimit-reset-tokens": "20ms",
    }
    settings = settings.model_copy(update={"provider_max_backoff_seconds": 900.0})
    reason = await backoff_after(store, settings, mock, "openai_responses", fault)
    assert reason["reason"] == "rate_limit_reset"
    assert reason["header"] == "x-ratelimit-reset-requests"
    assert reason["delay_seconds"] == reason["provider_hint_seconds"] == 360.0


async def test_anthropic_rate_limit_reset_without_retry_after(
    store: RunStore, settings: Settings, mock: MockProviderServer
) -> None:
    reset = (datetime.now(UTC) + timedelta(seconds=40)).isoformat().replace("+00:00", "Z")
    fault = Reply.fault(429, "Number of request tokens has exceeded your per-minute limit")
    fault.headers = {
        "anthropic-ratelimit-input-tokens-remaining": "0",
        "anthropic-ratelimit-input-tokens-reset": reset,
        "anthropic-ratelimit-requests-remaining": "49",
        "anthropic-ratelimit-requests-reset": reset,
    }
    reason = await backoff_after(store, settings, mock, "anthropic", fault)
    assert reason["reason"] == "rate_limit_reset"
    assert reason["header"] == "anthropic-ratelimit-input-tokens-reset"
    assert 38.0 < reason["delay_seconds"] <= 40.0


async def test_without_a_hint_the_exponential_backoff_decides(
    store: RunStore, settings: Settings, mock: MockProviderServer
) -> None:
    reason = await backoff_after(store, settings, mock, "anthropic", Reply.fault(529, "Overloaded"))
    assert reason["reason"] == "backoff"
    assert "header" not in reason and "provider_hint_seconds" not in reason
    base = settings.provider_backoff_base_seconds  # first retry: [base/2, base)
    assert base / 2 <= reason["delay_seconds"] < base


async def test_a_billed_answer_discarded_by_a_backoff_still_counts_in_usage(
    store: RunStore, settings: Settings, mock: MockProviderServer
) -> None:
    """Call 1 is answered (billed) with an invalid call, the policy asks the model again in
    the same claim, call 2 fails with 503: the run backs off from its last durable state,
    so call 1's answer is dropped and asked again (call 3). All of it was billed."""
    settings = wire_settings(settings, mock)
    service = RunService(store, settings)
    mock.script(
        Reply(tool_calls=[MockToolCall("not_a_tool")], usage=MockUsage(input=100, output=10)),
        Reply.fault(503, "unavailable"),
        Reply(text="done", usage=MockUsage(input=40, output=4)),
    )
    body = RunCreate.model_validate(
        {
            "prompt": "hi",
            "model": {"provider": "openai", "name": "m"},
            "tools": [{"name": "add"}],
            "invalid_tool_call": {"action": "retry", "max_retries": 1},
        }
    )
    view, _ = await service.create_run(body)
    factory = lambda spec: make_provider(spec, settings, clock=SYSTEM_CLOCK)  # noqa: E731
    async with running_worker(store, settings, providers=factory):
        done = await wait_status(service, view.record.id, RunStatus.COMPLETED, RunStatus.FAILED)
    assert done.record.status == RunStatus.COMPLETED and done.record.output == "done"
    assert len(mock.requests) == 3
    day = timedelta(days=1)
    totals = await store.usage_totals(
        datetime.now(UTC) - day, datetime.now(UTC) + day, scope=Scope.ALL
    )
    assert (totals["input_tokens"], totals["output_tokens"]) == (140, 14)
    assert done.record.usage is not None
    assert (done.record.usage["input_tokens"], done.record.usage["output_tokens"]) == (140, 14)
