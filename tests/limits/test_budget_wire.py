"""The budget's output cap on the wire: what each provider is sent when a limit bounds
the call (over the mock provider server, both databases)."""

from __future__ import annotations

from typing import Any

from app.core.lifecycle import RunStatus
from app.core.scope import Scope
from app.service.runs import RunService
from app.service.schemas import RunCreate
from app.settings import Settings
from app.store.runs import RunStore
from tests.helpers import drive_once
from tests.mocks.replies import Reply
from tests.mocks.server import MockProviderServer
from tests.worker.test_model_params import wire_settings

PRICES = {
    "anthropic:claude-test": {"input": 3.0, "output": 15.0},
    "openai:gpt-test": {"input": 1.0, "output": 4.0},
    "openai_responses:gpt-test": {"input": 1.0, "output": 4.0},
}


async def sent_for(
    store: RunStore, settings: Settings, mock: MockProviderServer, model: dict[str, Any],
    limits: dict[str, Any],
) -> dict[str, Any]:  # fmt: skip
    service = RunService(store, wire_settings(settings, mock).model_copy(update={"prices": PRICES}))
    mock.script(Reply(text="ok"))
    body = RunCreate.model_validate({"prompt": "hi", "model": model, "limits": limits})
    view, _ = await service.create_run(body)
    assert await drive_once(store, service.settings) == RunStatus.COMPLETED
    usage = (await service.get_run(view.record.id, scope=Scope.ALL)).record.usage or {}
    assert usage["model_calls"] == 1 and usage["cost_usd"] > 0
    return mock.requests[-1].body  # type: ignore[no-any-return]


async def test_each_wire_gets_the_cap_the_budget_leaves(
    store: RunStore, settings: Settings, mock: MockProviderServer
) -> None:
    # 0.01 USD at $15 per 1M output tokens, after the input: about 660 tokens
    thinking = {"type": "enabled", "budget_tokens": 1024}
    anthropic = await sent_for(
        store, settings, mock,
        {"provider": "anthropic", "name": "claude-test", "max_tokens": 8000},
        {"max_cost_usd": 0.01},
    )  # fmt: skip
    assert 600 < anthropic["max_tokens"] < 667
    roomy = await sent_for(
        store, settings, mock,
        {"provider": "anthropic", "name": "claude-test", "max_tokens": 8000, "thinking": thinking},
        {"max_cost_usd": 0.05},
    )  # fmt: skip
    assert 3000 < roomy["max_tokens"] < 3334
    assert roomy["thinking"] == thinking  # (below the cap already)
    chat = await sent_for(
        store, settings, mock, {"provider": "openai", "name": "gpt-test"},
        {"max_total_tokens": 500},
    )  # fmt: skip
    assert 300 < chat["max_completion_tokens"] < 500 and "max_tokens" not in chat
    legacy = await sent_for(
        store, settings, mock, {"provider": "openai", "name": "gpt-test", "max_tokens": 100},
        {"max_total_tokens": 100_000},
    )  # fmt: skip
    assert legacy["max_tokens"] == 100 and "max_completion_tokens" not in legacy
    responses = await sent_for(
        store, settings, mock, {"provider": "openai_responses", "name": "gpt-test"},
        {"max_cost_usd": 1.0},
    )  # fmt: skip
    assert responses["max_output_tokens"] == 4096  # (AGENTRUN_DEFAULT_MAX_OUTPUT_TOKENS)
