"""Chat Completions codec: request encoding and response decoding from real payload shapes
(platform.openai.com/docs/api-reference/chat/object and .../chat/create)."""

from __future__ import annotations

import copy
from typing import Any

import orjson
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
from app.providers.base import ProviderError
from app.providers.openai_chat import decode_response, encode_request
from tests.providers.helpers import ADD, WEATHER, request

# --- fixtures written from the API reference -------------------------------------------------

TEXT_RESPONSE: dict[str, Any] = {
    "id": "chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT",
    "object": "chat.completion",
    "created": 1741569952,
    "model": "gpt-4.1-2025-04-14",
    "choices": [
        {
            "index": 0,
            "message": {
                "role": "assistant",
                "content": "Hello! How can I assist you today?",
                "refusal": None,
                "annotations": [],
            },
            "logprobs": None,
            "finish_reason": "stop",
        }
    ],
    "usage": {
        "prompt_tokens": 19,
        "completion_tokens": 10,
        "total_tokens": 29,
        "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": 0,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    },
    "service_tier": "default",
}

PARALLEL_TOOL_CALLS: dict[str, Any] = {
    "id": "chatcmpl-abc123",
    "object": "chat.completion",
    "created": 1699896916,
    "model": "gpt-4o-mini",
    "choices": [
        {
            "index": 0,
            "message": {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_abc123",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
                    },
                    {
                        "id": "call_def456",
                        "type": "function",
                        "function": {"name": "add", "arguments": '{"x": 2, "y": 3}'},
                    },
                ],
            },
            "logprobs": None,
            "finish_reason": "tool_calls",
        }
    ],
    "usage": {
        "prompt_tokens": 1082,
        "completion_tokens": 44,
        "total_tokens": 1126,
        "prompt_tokens_details": {"cached_tokens": 1024},
        "completion_tokens_details": {"reasoning_tokens": 32},
    },
}


def with_message(**message: Any) -> dict[str, Any]:
    body = copy.deepcopy(TEXT_RESPONSE)
    body["choices"][0]["message"] = {"role": "assistant", **message}
    return body


# --- decoding ------------------------------------------------------------------------------


def test_decode_text_usage_ids() -> None:
    turn = decode_response(TEXT_RESPONSE, request_id="req_123")
    assert turn.choice == (Text("Hello! How can I assist you today?"),)
    assert turn.finish_reason == "stop"
    assert turn.response_id == "chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT"
    assert turn.message_id is None
    assert turn.provider_request_id == "req_123"
    assert turn.usage == Usage(input_tokens=19, output_tokens=10, total_tokens=29)
    assert turn.raw is TEXT_RESPONSE


def test_decode_parallel_tool_calls_with_cached_and_reasoning_usage() -> None:
    turn = decode_response(PARALLEL_TOOL_CALLS)
    assert turn.choice == (
        ToolCall("call_abc123", "get_weather", {"city": "Paris"}, provider_call_id="call_abc123"),
        ToolCall("call_def456", "add", {"x": 2, "y": 3}, provider_call_id="call_def456"),
    )
    assert turn.finish_reason == "tool_calls"
    assert turn.usage == Usage(
        input_tokens=1082,
        output_tokens=44,
        total_tokens=1126,
        cached_input_tokens=1024,
        reasoning_tokens=32,
    )


def test_decode_text_and_tool_call_order() -> None:
    body = with_message(
        content="Let me add.",
        tool_calls=[
            {"id": "call_1", "type": "function", "function": {"name": "add", "arguments": "{}"}}
        ],
    )
    turn = decode_response(body)
    assert [type(c) for c in turn.choice] == [Text, ToolCall]


@pytest.mark.parametrize(
    ("wire", "expected"),
    [
        ("stop", "stop"),
        ("length", "length"),
        ("tool_calls", "tool_calls"),
        ("content_filter", "content_filter"),
        ("function_call", "tool_calls"),
        ("insufficient_system_resource", "insufficient_system_resource"),
        (None, None),
    ],
)
def test_finish_reasons(wire: str | None, expected: str | None) -> None:
    body = copy.deepcopy(TEXT_RESPONSE)
    body["choices"][0]["finish_reason"] = wire
    assert decode_response(body).finish_reason == expected


def test_malformed_arguments_become_the_raw_string() -> None:
    body = with_message(
        content=None,
        tool_calls=[
            {
                "id": "call_bad",
                "type": "function",
                "function": {"name": "add", "arguments": '{"x": 2, "y":'},
            }
        ],
    )
    (call,) = decode_response(body).choice
    assert isinstance(call, ToolCall)
    assert call.arguments == '{"x": 2, "y":'
    # and it goes back to the provider exactly as the model produced it
    history = (UserMessage("hi"), AssistantMessage([call]))
    result = UserMessage([ToolResult.text(call, "bad arguments")])
    sent = encode_request(request(result, *history))
    assert sent["messages"][1]["tool_calls"][0]["function"]["arguments"] == '{"x": 2, "y":'


def test_empty_arguments_are_an_empty_object_and_empty_id_mints() -> None:
    body = with_message(
        content=None,
        tool_calls=[{"id": "", "type": "function", "function": {"name": "now", "arguments": ""}}],
    )
    (call,) = decode_response(body).choice
    assert isinstance(call, ToolCall)
    assert call.arguments == {}
    assert len(call.id) == 21
    assert call.provider_call_id is None


def test_reasoning_content_from_compatible_servers_and_refusal() -> None:
    turn = decode_response(with_message(content="4", reasoning_content="2+2 is 4"))
    assert turn.choice == (Reasoning.of_text("2+2 is 4"), Text("4"))
    turn = decode_response(with_message(content=None, refusal="I can't help with that."))
    assert turn.choice == (Text("I can't help with that.", {"type": "refusal"}),)


def test_missing_usage_is_zero() -> None:
    body = copy.deepcopy(TEXT_RESPONSE)
    del body["usage"]
    assert decode_response(body).usage == Usage()


@pytest.mark.parametrize(
    "body",
    [{"id": "x", "choices": []}, {"id": "x"}, {"choices": [{"message": None}]}],
)
def test_malformed_bodies_are_a_clear_error(body: dict[str, Any]) -> None:
    with pytest.raises(ProviderError) as info:
        decode_response(body)
    assert info.value.retryable is False
    assert "malformed openai chat completion" in info.value.message


def test_error_body_in_a_200() -> None:
    body = {"error": {"message": "The server had an error", "type": "server_error"}}
    with pytest.raises(ProviderError, match="The server had an error"):
        decode_response(body)


# --- encoding ------------------------------------------------------------------------------


def test_encode_full_history_keeps_ids_and_pairing() -> None:
    c1 = ToolCall.from_wire("call_1", "add", {"x": 1, "y": 2})
    c2 = ToolCall.from_wire("call_2", "get_weather", {"city": "Oslo"})
    history = (
        SystemMessage("Be terse."),
        UserMessage("add and weather"),
        AssistantMessage([Reasoning.of_text("think"), Text("On it."), c1, c2], id=None),
        UserMessage(
            [
                ToolResult.for_call(c1, [Text("3")]),
                ToolResult.for_call(c2, [Json({"temp": 4, "sky": "clear"})]),
                Text("also this"),
            ]
        ),
    )
    body = encode_request(
        request("thanks", *history, preamble="You are helpful.", tools=(ADD, WEATHER))
    )
    assert body["messages"] == [
        {"role": "system", "content": "You are helpful."},
        {"role": "system", "content": "Be terse."},
        {"role": "user", "content": "add and weather"},
        {
            "role": "assistant",
            "content": "On it.",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "add", "arguments": '{"x":1,"y":2}'},
                },
                {
                    "id": "call_2",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city":"Oslo"}'},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "3"},
        {"role": "tool", "tool_call_id": "call_2", "content": '{"temp":4,"sky":"clear"}'},
        {"role": "user", "content": "also this"},
        {"role": "user", "content": "thanks"},
    ]
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "add",
                "description": ADD.description,
                "parameters": ADD.parameters,
            },
        },
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": WEATHER.description,
                "parameters": WEATHER.parameters,
            },
        },
    ]
    assert "tool_choice" not in body
    assert "stream" not in body
    orjson.dumps(body)  # the body is plain JSON


def test_minted_ids_travel_when_the_wire_gave_none() -> None:
    call = ToolCall("", "add", {})  # minted rig id, no provider id
    body = encode_request(
        request(UserMessage([ToolResult.text(call, "0")]), AssistantMessage([call]))
    )
    assert body["messages"][0]["tool_calls"][0]["id"] == call.id
    assert body["messages"][1]["tool_call_id"] == call.id


def test_tool_result_with_several_items_and_images() -> None:
    call = ToolCall.from_wire("call_9", "add", {})
    result = ToolResult.for_call(call, [Text("a"), Json([1, 2])])
    body = encode_request(request(UserMessage([result]), AssistantMessage([call])))
    assert body["messages"][1]["content"] == [
        {"type": "text", "text": "a"},
        {"type": "text", "text": "[1,2]"},
    ]
    bad = ToolResult.for_call(call, [Image("aGVsbG8=", "image/png")])
    with pytest.raises(ProviderError, match="images in tool results"):
        encode_request(request(UserMessage([bad]), AssistantMessage([call])))


def test_user_images() -> None:
    prompt = UserMessage(
        [
            Text("what is this?"),
            Image("aGVsbG8=", "image/jpeg", detail="low"),
            Image("https://example.com/cat.png"),
        ]
    )
    body = encode_request(request(prompt))
    assert body["messages"][0]["content"] == [
        {"type": "text", "text": "what is this?"},
        {
            "type": "image_url",
            "image_url": {"url": "data:image/jpeg;base64,aGVsbG8=", "detail": "low"},
        },
        {"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}},
    ]


def test_refusal_round_trip_and_tool_only_assistant() -> None:
    refusal = Text("no", {"type": "refusal"})
    body = encode_request(request("ok", UserMessage("x"), AssistantMessage([refusal])))
    assert body["messages"][1] == {
        "role": "assistant",
        "content": [{"type": "refusal", "refusal": "no"}],
    }
    call = ToolCall.from_wire("call_1", "add", {"x": 1})
    body = encode_request(request("ok", AssistantMessage([call])))
    assert body["messages"][0]["content"] is None


@pytest.mark.parametrize(
    ("choice", "wire"),
    [
        (ToolChoice.auto(), "auto"),
        (ToolChoice.none(), "none"),
        (ToolChoice.required(), "required"),
        (ToolChoice.specific(["add"]), {"type": "function", "function": {"name": "add"}}),
        (
            ToolChoice.specific(["add", "get_weather"]),
            {
                "type": "allowed_tools",
                "allowed_tools": {
                    "mode": "required",
                    "tools": [
                        {"type": "function", "function": {"name": "add"}},
                        {"type": "function", "function": {"name": "get_weather"}},
                    ],
                },
            },
        ),
    ],
)
def test_tool_choice(choice: ToolChoice, wire: Any) -> None:
    body = encode_request(request(tools=(ADD, WEATHER), tool_choice=choice))
    assert body["tool_choice"] == wire


def test_tool_choice_is_omitted_without_tools() -> None:
    assert "tool_choice" not in encode_request(request(tool_choice=ToolChoice.required()))


def test_params_merge_but_never_override_codec_keys() -> None:
    body = encode_request(
        request(
            params={"temperature": 0.2, "max_tokens": 50, "model": "evil", "messages": []},
        ),
        stream=True,
    )
    assert body["model"] == "test-model"
    assert body["temperature"] == 0.2
    assert body["max_tokens"] == 50
    assert body["messages"] == [{"role": "user", "content": "What is 2+3?"}]
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}


def test_assistant_image_is_refused() -> None:
    with pytest.raises(ProviderError, match="assistant images"):
        encode_request(request("x", AssistantMessage([Image("aGk=")])))
