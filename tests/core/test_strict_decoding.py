"""`from_json` refuses what it cannot read exactly: every corrupt field is a StateDecodeError
naming the field, never a coercion ("false" → True, 2.9 → 2) and never a RecursionError."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from app.core import (
    MAX_JSON_DEPTH,
    SCHEMA_VERSION,
    AgentRun,
    CallTools,
    StateDecodeError,
    ToolCall,
)
from tests.core.v1_states import STATES

FIXTURES = Path(__file__).parent / "fixtures"
DELETE = object()


def fixture(state: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((FIXTURES / f"v1_{state}.json").read_text())
    return doc


class Raw(str):
    """JSON text to splice in as is (json.dumps itself cannot write very deep values)."""


def corrupted(state: str, path: tuple[Any, ...], value: Any) -> str:
    doc = fixture(state)
    target: Any = doc
    for key in path[:-1]:
        target = target[key]
    if value is DELETE:
        del target[path[-1]]
    else:
        target[path[-1]] = "__RAW__" if isinstance(value, Raw) else value
    text = json.dumps(doc)
    return text.replace('"__RAW__"', value) if isinstance(value, Raw) else text


def deep(levels: int) -> Raw:
    """A JSON array nested `levels` deep."""
    return Raw("[" * levels + "1" + "]" * levels)


# (fixture, path to the field, corrupt value, the field as the error names it)
CORRUPT: list[tuple[str, tuple[Any, ...], Any, str]] = [
    ("AwaitingModel", ("rollback_pending",), "false", "rollback_pending"),
    ("AwaitingModel", ("streamed_completion_call_recorded",), 1, "streamed_completion_call"),
    ("AwaitingModel", ("max_turns",), "3", "max_turns"),
    ("AwaitingModel", ("max_turns",), 2.9, "max_turns"),
    ("AwaitingModel", ("max_turns",), 3.0, "max_turns"),
    ("AwaitingModel", ("max_turns",), True, "max_turns"),
    ("AwaitingModel", ("max_turns",), None, "max_turns"),
    ("AwaitingModel", ("max_turns",), -1, "max_turns"),
    ("AwaitingModel", ("max_turns",), DELETE, "max_turns"),
    ("AwaitingModel", ("current_turn",), -1, "current_turn"),
    ("AwaitingModel", ("max_invalid_tool_call_retries",), "1", "max_invalid_tool_call_retries"),
    ("AwaitingModel", ("invalid_tool_call_retries",), -2, "invalid_tool_call_retries"),
    ("AwaitingModel", ("completion_call_index",), 0.5, "completion_call_index"),
    ("AwaitingModel", ("max_output_retries",), False, "max_output_retries"),
    ("AwaitingModel", ("output_retries",), "0", "output_retries"),
    ("AwaitingModel", ("usage", "input_tokens"), -5, "usage.input_tokens"),
    ("AwaitingModel", ("usage", "output_tokens"), "5", "usage.output_tokens"),
    ("AwaitingModel", ("usage", "total_tokens"), DELETE, "usage.total_tokens"),
    ("AwaitingModel", ("usage",), None, "usage"),
    ("AwaitingModel", ("tool_choice",), "any", "tool_choice"),
    ("AwaitingModel", ("tool_choice",), {"specific": {"function_names": "add"}}, "tool_choice"),
    ("AwaitingModel", ("tool_choice",), {"specific": {"function_names": [1]}}, "tool_choice"),
    ("AwaitingModel", ("output_tool_name",), 5, "output_tool_name"),
    ("AwaitingModel", ("output_schema",), deep(MAX_JSON_DEPTH + 1), "output_schema"),
    ("AwaitingModel", ("chat_history",), "be brief", "chat_history"),
    ("AwaitingModel", ("chat_history", 0, "content"), ["be brief"], "chat_history[0].content"),
    ("AwaitingModel", ("chat_history", 0, "role"), "robot", "chat_history[0].role"),
    ("AwaitingModel", ("new_messages", 0, "content", 0, "text"), 5, "new_messages[0].content"),
    ("AwaitingModel", ("new_messages", 0, "content", 0, "type"), "audio", "new_messages[0]"),
    ("AwaitingModel", ("new_messages",), {"0": None}, "new_messages"),
    ("AwaitingModel", ("state",), "Sleeping", "state"),
    ("AwaitingModel", ("state",), ["AwaitingModel"], "state"),
    ("AwaitingAdvance", ("completion_calls", 0, "call_index"), True, "completion_calls[0]"),
    ("AwaitingAdvance", ("completion_calls", 0, "finish_reason"), "weird", "finish_reason"),
    ("AwaitingAdvance", ("completion_calls", 0, "finish_reason"), {"other": 1}, "finish_reason"),
    ("AwaitingAdvance", ("completion_calls", 0, "message_id"), 1, "completion_calls[0]"),
    ("AwaitingAdvance", ("completion_calls", 0, "raw"), deep(500), "completion_calls[0].raw"),
    ("AwaitingAdvance", ("state", "AwaitingAdvance", "has_tool_calls"), "true", "has_tool_calls"),
    ("AwaitingAdvance", ("state", "AwaitingAdvance", "internal_call_ids"), [["a"]], "internal"),
    ("AwaitingAdvance", ("state", "AwaitingAdvance", "skipped"), [], "skipped"),
    ("AwaitingAdvance", ("state", "AwaitingAdvance", "items", 0, "id"), 3, "items[0].id"),
    (
        "AwaitingAdvance",
        ("state", "AwaitingAdvance", "items", 0, "content", 0, "type"),
        "thought",
        "items[0].content[0].type",
    ),
    ("ResolvingToolCalls", ("state", "ResolvingToolCalls", "allowed_tool_names"), "add", "allowed"),
    ("ResolvingToolCalls", ("state", "ResolvingToolCalls", "executable_tool_names"), [1], "exec"),
    ("ResolvingToolCalls", ("state", "ResolvingToolCalls", "recovered"), "false", "recovered"),
    ("ResolvingToolCalls", ("state", "ResolvingToolCalls", "any_skipped"), 0, "any_skipped"),
    ("ResolvingToolCalls", ("state", "ResolvingToolCalls", "next_index"), 99, "next_index"),
    ("ResolvingToolCalls", ("state", "ResolvingToolCalls", "next_index"), "1", "next_index"),
    ("ResolvingToolCalls", ("state", "ResolvingToolCalls", "skipped"), {"x": None}, "skipped.x"),
    ("ResolvingToolCalls", ("state", "ResolvingToolCalls", "skipped"), {"7": None}, "skipped.7"),
    ("ResolvingToolCalls", ("state", "ResolvingToolCalls", "original_choice"), None, "original"),
    ("ExecutingTools", ("state", "ExecutingTools"), {"0": None}, "ExecutingTools"),
    ("ExecutingTools", ("state", "ExecutingTools", 0, "tool_call", "id"), "", "tool_call.id"),
    ("ExecutingTools", ("state", "ExecutingTools", 0, "tool_call", "id"), 1, "tool_call.id"),
    (
        "ExecutingTools",
        ("state", "ExecutingTools", 0, "tool_call", "function", "name"),
        None,
        "name",
    ),
    (
        "ExecutingTools",
        ("state", "ExecutingTools", 0, "tool_call", "function", "arguments"),
        DELETE,
        "function.arguments",
    ),
    ("ExecutingTools", ("state", "ExecutingTools", 0, "tool_call", "provider"), "c", "provider"),
    (
        "ExecutingTools",
        ("state", "ExecutingTools", 0, "tool_call", "provider", "call_id"),
        "",
        "provider.call_id",
    ),
    ("ExecutingTools", ("state", "ExecutingTools", 0, "tool_call", "signature"), 1, "signature"),
    ("ExecutingTools", ("state", "ExecutingTools", 0, "internal_call_id"), 5, "internal_call_id"),
    (
        "ExecutingTools",
        ("state", "ExecutingTools", 0, "preresolved_result"),
        {"type": "text", "text": "not a result"},
        "preresolved_result.type",
    ),
    (
        "ExecutingTools",
        ("state", "ExecutingTools", 0, "preresolved_result", "call"),
        "",
        "preresolved_result.call",
    ),
    (
        "ExecutingTools",
        ("state", "ExecutingTools", 0, "preresolved_result", "content", 0, "additional_params"),
        ["not an object"],
        "additional_params",
    ),
    ("Done", ("state", "Done", "output"), 5, "state.Done.output"),
    ("Done", ("state", "Done", "content"), DELETE, "state.Done.content"),
    ("Done", ("state", "Done", "messages"), "all of them", "state.Done.messages"),
]


@pytest.mark.parametrize(
    ("state", "path", "value", "field"),
    CORRUPT,
    ids=[f"{c[0]}:{'.'.join(map(str, c[1]))}={c[2]!r:.20}" for c in CORRUPT],
)
def test_corrupt_fields_are_refused_naming_the_field(
    state: str, path: tuple[Any, ...], value: Any, field: str
) -> None:
    with pytest.raises(StateDecodeError) as info:
        AgentRun.from_json(corrupted(state, path, value))
    message = str(info.value)
    assert message.startswith("field `"), message
    assert field in message, message


def test_a_corrupt_field_is_refused_inside_a_version_0_document_too() -> None:
    doc = json.loads((FIXTURES / "upstream_s64_executing_tools.json").read_text())
    doc["rollback_pending"] = "false"
    with pytest.raises(StateDecodeError, match="`rollback_pending` must be a boolean"):
        AgentRun.from_json(json.dumps(doc))


@pytest.mark.parametrize(
    "key",
    [
        "output_tool_name",
        "output_schema",
        "max_output_retries",
        "output_retries",
        "rollback_pending",
        "streamed_completion_call_recorded",
        "tool_choice",
        "chat_history",
    ],
)
def test_fields_upstream_defaults_may_be_absent(key: str) -> None:
    run = AgentRun.from_json(corrupted("ExecutingTools", (key,), DELETE))
    assert isinstance(run.next_step(), CallTools)


def test_optional_parts_of_records_may_be_absent_or_null() -> None:
    doc = fixture("AwaitingAdvance")
    call = doc["completion_calls"][0]
    del call["raw"], call["finish_reason"], call["message_id"]
    call["usage"] = None  # upstream's pre-monoid tolerance
    del doc["state"]["AwaitingAdvance"]["internal_call_ids"]
    run = AgentRun.from_json(json.dumps(doc))
    assert run.completion_calls()[0].raw is None
    assert run.completion_calls()[0].usage.total_tokens == 0


def test_additional_params_null_and_empty_load_as_absent() -> None:
    for spelling in (None, {}):
        data = corrupted(
            "AwaitingModel", ("new_messages", 0, "content", 0, "additional_params"), spelling
        )
        run = AgentRun.from_json(data)
        assert run.messages()[0].content[0].additional_params is None  # type: ignore[union-attr]


def test_unknown_keys_are_ignored_as_upstream_does() -> None:
    doc = fixture("ExecutingTools")
    doc["future_field"] = {"anything": [1]}
    doc["state"]["ExecutingTools"][0]["tool_call"]["call_id"] = "call_legacy"
    run = AgentRun.from_json(json.dumps(doc))
    assert run.pending_tool_calls()[0].tool_call.provider_call_id == "call_1"


# --- nesting: never a RecursionError -------------------------------------------------------


@pytest.mark.parametrize("levels", [MAX_JSON_DEPTH + 1, 300, 1000, 1020])
@pytest.mark.parametrize(
    "path",
    [
        ("output_schema",),
        ("state", "ExecutingTools", 0, "tool_call", "function", "arguments"),
        ("new_messages",),
        ("state",),
        ("schema_version",),
    ],
)
def test_deep_nesting_is_a_decode_error_never_a_recursion_error(
    levels: int, path: tuple[Any, ...]
) -> None:
    with pytest.raises(StateDecodeError):
        AgentRun.from_json(corrupted("ExecutingTools", path, deep(levels)))


def test_nesting_beyond_the_json_parser_is_a_decode_error() -> None:
    data = corrupted("ExecutingTools", ("output_schema",), deep(5000))
    with pytest.raises(StateDecodeError, match="not valid JSON"):
        AgentRun.from_json(data)


def test_values_at_the_depth_limit_load() -> None:
    data = corrupted("ExecutingTools", ("output_schema",), deep(MAX_JSON_DEPTH))
    run = AgentRun.from_json(data)
    assert run.to_json() == AgentRun.from_json(run.to_json()).to_json()


# --- item 12: version 0's legacy `call_id` key is ignored, not lifted ---------------------


def version_0(tool_call: dict[str, Any]) -> str:
    doc = json.loads((FIXTURES / "upstream_s64_executing_tools.json").read_text())
    doc["new_messages"][1]["content"] = [tool_call]
    doc["state"]["ExecutingTools"][0]["tool_call"] = dict(tool_call)
    return json.dumps(doc)


def test_legacy_call_id_key_is_ignored_not_lifted() -> None:
    """rig-core's test of the same name: `id` is rig's handle, `provider` stays absent."""
    legacy = {"id": "fc_123", "call_id": "call_abc", "function": {"name": "add", "arguments": {}}}
    run = AgentRun.from_json(version_0(legacy))
    expected = ToolCall("fc_123", "add", {})
    assert run.pending_tool_calls()[0].tool_call == expected
    assert run.messages()[1].content == (expected,)
    written = json.loads(run.to_json())
    assert written["schema_version"] == SCHEMA_VERSION
    assert "provider" not in written["state"]["ExecutingTools"][0]["tool_call"]


def test_a_version_0_provider_object_is_kept() -> None:
    call = {
        "id": "fc_1",
        "call_id": "ignored",
        "provider": {"call_id": "call_1", "item_id": "fc_1"},
        "function": {"name": "add", "arguments": {}},
    }
    pending = AgentRun.from_json(version_0(call)).pending_tool_calls()[0].tool_call
    assert (pending.id, pending.provider_call_id, pending.provider_item_id) == (
        "fc_1",
        "call_1",
        "fc_1",
    )


@pytest.mark.parametrize("state", sorted(STATES))
def test_what_this_release_writes_it_reads_back_identically(state: str) -> None:
    run = STATES[state]()
    assert AgentRun.from_json(run.to_json()).to_json() == run.to_json()
