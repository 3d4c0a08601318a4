"""Anthropic Messages codec: request encoding and response decoding from real payload shapes
(docs.anthropic.com/en/api/messages, .../build-with-claude/extended-thinking,
.../tool-use)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from app.core import (
    AssistantMessage,
    Image,
    Json,
    Reasoning,
    SystemMessage,
    Text,
    ToolCall,
    ToolChoice,
    ToolResult,
    Usage,
    UserMessage,
)
from app.core.content import ReasoningBlock
from app.providers.anthropic import decode_response, encode_request
from app.providers.base import ProviderError
from tests.providers.helpers import ADD, WEATHER, request

MESSAGE: dict[str, Any] = {
    "id": "msg_013Zva2CMHLNnXjNJJKqJ2EF",
    "type": "message",
    "role": "assistant",
    "model": "claude-sonnet-4-20250514",
    "content": [
        {
            "type": "thinking",
            "thinking": "Let me analyze this step by step...",
            "signature": "WaUjzkypQ2mUEVM36O2TxuC06KN8xyfbJwyem2dw3URve/op91XWHOEB",
        },
        {
            "type": "redacted_thinking",
            "data": "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP",
        },
        {"type": "text", "text": "I'll check the weather and add."},
        {
            "type": "tool_use",
            "id": "toolu_01A09q90qw90lq917835lq9",
            "name": "get_weather",
            "input": {"city": "San Francisco"},
        },
        {
            "type": "tool_use",
            "id": "toolu_01B09q90qw90lq917835lq8",
            "name": "add",
            "input": {"x": 2, "y": 3},
        },
    ],
    "stop_reason": "tool_use",
    "stop_sequence": None,
    "usage": {
        "input_tokens": 472,
        "cache_creation_input_tokens": 100,
        "cache_read_input_tokens": 2048,
        "output_tokens": 91,
        "service_tier": "standard",
    },
}


def test_decode_thinking_redacted_text_parallel_tool_use_and_usage() -> None:
    turn = decode_response(MESSAGE, request_id="req_018EeWyXxfu5pfWkrYcMdjWG")
    assert turn.choice == (
        Reasoning.of_text(
            "Let me analyze this step by step...",
            "WaUjzkypQ2mUEVM36O2TxuC06KN8xyfbJwyem2dw3URve/op91XWHOEB",
        ),
        Reasoning(
            (
                ReasoningBlock(
                    "redacted", "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP"
                ),
            )
        ),
        Text("I'll check the weather and add."),
        ToolCall.from_wire(
            "toolu_01A09q90qw90lq917835lq9", "get_weather", {"city": "San Francisco"}
        ),
        ToolCall.from_wire("toolu_01B09q90qw90lq917835lq8", "add", {"x": 2, "y": 3}),
    )
    assert turn.message_id == "msg_013Zva2CMHLNnXjNJJKqJ2EF"
    assert turn.response_id == "msg_013Zva2CMHLNnXjNJJKqJ2EF"
    assert turn.provider_request_id == "req_018EeWyXxfu5pfWkrYcMdjWG"
    assert turn.finish_reason == "tool_calls"
    assert turn.usage == Usage(
        input_tokens=472 + 100 + 2048,
        output_tokens=91,
        total_tokens=472 + 100 + 2048 + 91,
        cached_input_tokens=2048,
        cache_creation_input_tokens=100,
    )


@pytest.mark.parametrize(
    ("wire", "expected"),
    [
        ("end_turn", "stop"),
        ("stop_sequence", "stop"),
        ("max_tokens", "length"),
        ("tool_use", "tool_calls"),
        ("refusal", "content_filter"),
        ("model_context_window_exceeded", "length"),
        ("pause_turn", "pause_turn"),
        (None, None),
    ],
)
def test_stop_reasons(wire: str | None, expected: str | None) -> None:
    assert decode_response({**MESSAGE, "stop_reason": wire}).finish_reason == expected


def test_unknown_block_and_missing_content_are_clear_errors() -> None:
    body = {**MESSAGE, "content": [{"type": "server_tool_use", "id": "srvtoolu_1"}]}
    with pytest.raises(ProviderError, match="unsupported content block type 'server_tool_use'"):
        decode_response(body)
    with pytest.raises(ProviderError, match="malformed anthropic message"):
        decode_response({"id": "msg_1", "type": "message"})


def test_error_body_in_a_200() -> None:
    body = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    with pytest.raises(ProviderError, match="Overloaded") as info:
        decode_response(body)
    assert info.value.retryable is True


def test_encode_history_keeps_thinking_signatures_and_pairing() -> None:
    turn = decode_response(MESSAGE)
    calls = [c for c in turn.choice if isinstance(c, ToolCall)]
    history = (
        SystemMessage("Be terse."),
        UserMessage("weather and sum"),
        AssistantMessage(turn.choice, id=turn.message_id),
    )
    prompt = UserMessage(
        [
            Text("and then?"),  # a user text after results: results still go first
            ToolResult.for_call(calls[0], [Json({"temp": 15})]),
            ToolResult.for_call(calls[1], [Text("5"), Image("aGk=", "image/png")]),
        ]
    )
    body = encode_request(
        request(prompt, *history, preamble="You are helpful.", tools=(ADD, WEATHER))
    )
    assert body["max_tokens"] == 4096
    assert body["system"] == [
        {"type": "text", "text": "You are helpful."},
        {"type": "text", "text": "Be terse."},
    ]
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "weather and sum"}]},
        {"role": "assistant", "content": MESSAGE["content"]},
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_01A09q90qw90lq917835lq9",
                    "content": [{"type": "text", "text": '{"temp":15}'}],
                },
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_01B09q90qw90lq917835lq8",
                    "content": [
                        {"type": "text", "text": "5"},
                        {
                            "type": "image",
                            "source": {"type": "base64", "media_type": "image/png", "data": "aGk="},
                        },
                    ],
                },
                {"type": "text", "text": "and then?"},
            ],
        },
    ]
    assert body["tools"] == [
        {"name": "add", "description": ADD.description, "input_schema": ADD.parameters},
        {
            "name": "get_weather",
            "description": WEATHER.description,
            "input_schema": WEATHER.parameters,
        },
    ]


def test_consecutive_same_role_messages_merge_and_empty_text_is_dropped() -> None:
    body = encode_request(
        request("second", UserMessage("first"), AssistantMessage([Text("")]), preamble="P")
    )
    assert body["system"] == "P"
    assert body["messages"] == [
        {
            "role": "user",
            "content": [{"type": "text", "text": "first"}, {"type": "text", "text": "second"}],
        }
    ]


def test_foreign_reasoning_is_dropped_and_raw_arguments_are_wrapped() -> None:
    foreign = Reasoning(
        (
            ReasoningBlock("summary", "s"),
            ReasoningBlock("encrypted", "e"),
            ReasoningBlock("text", "t"),
        ),
        id="rs_1",
    )
    bad = ToolCall.from_wire("toolu_1", "add", '{"x": 1')
    body = encode_request(request("next", AssistantMessage([foreign, bad])))
    assert body["messages"][0]["content"] == [
        {"type": "tool_use", "id": "toolu_1", "name": "add", "input": {"_raw_arguments": '{"x": 1'}}
    ]


def test_images_url_and_data_url() -> None:
    prompt = UserMessage([Image("https://example.com/a.png"), Image("data:image/gif;base64,R0lG")])
    body = encode_request(request(prompt))
    assert body["messages"][0]["content"] == [
        {"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}},
        {"type": "image", "source": {"type": "base64", "media_type": "image/gif", "data": "R0lG"}},
    ]


@pytest.mark.parametrize(
    ("choice", "wire", "tool_names"),
    [
        (ToolChoice.auto(), {"type": "auto"}, ["add", "get_weather"]),
        (ToolChoice.none(), {"type": "none"}, ["add", "get_weather"]),
        (ToolChoice.required(), {"type": "any"}, ["add", "get_weather"]),
        (ToolChoice.specific(["add"]), {"type": "tool", "name": "add"}, ["add", "get_weather"]),
        (ToolChoice.specific(["get_weather", "add"]), {"type": "any"}, ["add", "get_weather"]),
    ],
)
def test_tool_choice(choice: ToolChoice, wire: Any, tool_names: list[str]) -> None:
    body = encode_request(request(tools=(ADD, WEATHER), tool_choice=choice))
    assert body["tool_choice"] == wire
    assert [t["name"] for t in body["tools"]] == tool_names


def test_several_specific_tools_narrow_the_tool_list() -> None:
    tools = (ADD, WEATHER, dataclasses.replace(ADD, name="mul"))
    body = encode_request(
        request(tools=tools, tool_choice=ToolChoice.specific(["add", "get_weather"]))
    )
    assert [t["name"] for t in body["tools"]] == ["add", "get_weather"]


def test_params_and_stream() -> None:
    body = encode_request(
        request(params={"max_tokens": 1024, "thinking": {"type": "enabled", "budget_tokens": 512}}),
        stream=True,
    )
    assert body["max_tokens"] == 1024
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 512}
    assert body["stream"] is True
