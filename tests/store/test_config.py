"""A run's configuration is parsed once into a typed value (what the worker reads)."""

from __future__ import annotations

from app.core import ToolChoice
from app.core.scope import Scope
from app.service.runs import RunService
from app.settings import Settings
from app.store.config import RunConfig
from app.store.runs import RunStore
from tests.helpers import ADD_TOOL, run_body


def test_the_typed_configuration_of_a_stored_document() -> None:
    config = RunConfig.parse(
        {
            "model": {"provider": "openai", "name": "gpt-x", "temperature": 0.2},
            "tools": [ADD_TOOL, {**ADD_TOOL, "name": "sub", "queue": "math"}],
            "tool_choice": {"name": "add"},
            "preamble": "be brief",
            "stream": True,
            "invalid_tool_call": {"action": "retry"},
            "expires_in": 60,
            "tool_queue": "default-q",
        }
    )
    assert (config.model.provider, config.model.name) == ("openai", "gpt-x")
    assert config.model.params == {"temperature": 0.2}
    assert [t.name for t in config.tools] == ["add", "sub"]
    assert config.tools[0].description == "Add two numbers"
    assert config.tool_choice == ToolChoice.specific(["add"])
    assert (config.preamble, config.stream, config.expires_in) == ("be brief", True, 60)
    assert config.invalid_tool_call == {"action": "retry"}
    assert config.queue_of("sub") == "math" and config.queue_of("add") == "default-q"


def test_the_defaults_of_what_a_document_leaves_out() -> None:
    config = RunConfig.parse({"model": {"provider": "scripted", "name": "demo"}})
    assert config.tools == () and config.tool_choice is None and config.preamble is None
    assert config.stream is False and config.invalid_tool_call == {}
    assert config.expires_in is None and config.queue_of("any") is None


async def test_a_stored_run_carries_its_typed_configuration(
    store: RunStore, settings: Settings
) -> None:
    service = RunService(store, settings)
    view, _ = await service.create_run(run_body())
    await service.cancel(
        view.record.id, scope=Scope.ALL
    )  # (nothing left due for other tests' workers)
    record = await store.get(view.record.id, scope=Scope.ALL)
    assert record is not None
    assert record.run_config.model.name == "demo"
    assert [t.name for t in record.run_config.tools] == ["add"]
    assert record.run_config is record.run_config  # parsed once
