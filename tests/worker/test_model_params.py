"""Model parameters on the wire: what create accepted reaches the provider (`extra_body`
merged verbatim), and runs stored before parameters were validated still run."""

from __future__ import annotations

from typing import Any

from app.core.lifecycle import RunStatus
from app.core.scope import Scope
from app.service.runs import RunService
from app.service.schemas import ModelSpec, RunCreate
from app.settings import Settings
from app.store.runs import RunStore
from tests.helpers import drive_once
from tests.mocks.replies import Reply
from tests.mocks.server import MockProviderServer


def wire_settings(settings: Settings, mock: MockProviderServer) -> Settings:
    """`settings`, with the providers pointed at the mock."""
    return settings.model_copy(
        update={
            "openai_base_url": mock.openai_base_url,
            "openai_api_key": "sk-test",
            "anthropic_base_url": mock.anthropic_base_url,
            "anthropic_api_key": "sk-ant-test",
        }
    )


async def test_parameters_and_extra_body_reach_the_provider(
    store: RunStore, settings: Settings, mock: MockProviderServer
) -> None:
    service = RunService(store, wire_settings(settings, mock))
    mock.script(Reply(text="ok"))
    body = RunCreate.model_validate(
        {
            "prompt": "hi",
            "model": {
                "provider": "anthropic",
                "name": "claude-test",
                "max_tokens": 2000,
                "thinking": {"type": "enabled", "budget_tokens": 1024},
                "extra_body": {"temperature": 0.3, "top_k": 5},
            },
        }
    )
    view, _ = await service.create_run(body)
    assert await drive_once(store, service.settings) == RunStatus.COMPLETED
    [sent] = mock.requests
    assert sent.body["max_tokens"] == 2000
    assert sent.body["thinking"] == {"type": "enabled", "budget_tokens": 1024}
    assert sent.body["temperature"] == 0.3 and sent.body["top_k"] == 5
    assert "extra_body" not in sent.body
    assert (await service.get_run(view.record.id, scope=Scope.ALL)).record.output == "ok"


async def test_a_run_stored_with_parameters_create_now_refuses_still_runs(
    store: RunStore, settings: Settings, mock: MockProviderServer
) -> None:
    """Validation is at create only: an old run's parameters go out as they were stored."""
    service = RunService(store, wire_settings(settings, mock))
    mock.script(Reply(text="still fine"))
    legacy: dict[str, Any] = {"temperature": 0.1, "legacy_knob": "x"}  # no longer valid
    spec = ModelSpec.model_construct(provider="anthropic", name="claude-test", **legacy)
    valid = RunCreate.model_validate(
        {"prompt": "hi", "model": {"provider": "anthropic", "name": "x"}}
    )
    body = valid.model_copy(update={"model": spec})  # as if created before validation
    view, _ = await service.create_run(body)
    assert view.record.config["model"]["legacy_knob"] == "x"
    assert await drive_once(store, service.settings) == RunStatus.COMPLETED
    [sent] = mock.requests
    assert sent.body["legacy_knob"] == "x" and sent.body["temperature"] == 0.1
