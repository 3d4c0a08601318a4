"""Responses codec: request encoding and response decoding from real payload shapes
(platform.openai.com/docs/api-reference/responses/object, .../responses/create,
guides/reasoning: encrypted reasoning items with `store: false`)."""

from __future__ import annotations

import copy
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
from app.providers.base import ProviderError
from app.providers.openai_responses import encode_request
from app.providers.openai_responses_decode import decode_response
from tests.providers.helpers import ADD, WEATHER, request

USAGE = {
    "input_tokens": 2048,
    "input_tokens_details": {"cached_tokens": 1024},
    "output_tokens": 300,
    "output_tokens_details": {"reasoning_tokens": 256},
    "total_tokens": 2348,
}

RESPONSE: dict[str, Any] = {
    "id": "resp_67ccd2bed1ec8190b14f964abc0542670bb6a6b452d3795b",
    "object": "response",
    "created_at": 1741476542,
    "status": "completed",
    "error": None,
    "incomplete_details": None,
    "instructions": None,
    "model": "o4-mini-2025-04-16",
    "output": [
        {
            "type": "reasoning",
            "id": "rs_6820f383d7c08191846711c5df8233bc0ac5ba57aafcbac7",
            "summary": [{"type": "summary_text", "text": "**Adding numbers** The user asks..."}],
            "encrypted_content": "gAAAAABoISQ24OyVRYbkYfukn9T6...",
        },
        {
            "type": "message",
            "id": "msg_67ccd2bf17f0819081ff3bb2cf6508e60bb6a6b452d3795b",
            "status": "completed",
            "role": "assistant",
            "content": [
                {
                    "type": "output_text",
                    "text": "In a peaceful grove beneath a silver moon...",
                    "annotations": [],
                }
            ],
        },
    ],
    "parallel_tool_calls": True,
    "store": False,
    "tool_choice": "auto",
    "tools": [],
    "usage": USAGE,
}

FUNCTION_CALLS: dict[str, Any] = {
    **RESPONSE,
    "output": [
        {
            "type": "function_call",
            "id": "fc_12345xyz",
            "call_id": "call_12345xyz",
            "name": "get_weather",
            "arguments": '{"city":"Paris"}',
            "status": "completed",
        },
        {
            "type": "function_call",
            "id": "fc_67890abc",
            "call_id": "call_67890abc",
            "name": "add",
            "arguments": '{"x":2,"y":3}',
            "status": "completed",
        },
    ],
}


def test_decode_reasoning_and_text() -> None:
    turn = decode_response(RESPONSE, request_id="req_1")
    assert turn.choice == (
        Reasoning(
            (
                ReasoningBlock("summary", "**Adding numbers** The user asks..."),
                ReasoningBlock("encrypted", "gAAAAABoISQ24OyVRYbkYfukn9T6..."),
            ),
            "rs_6820f383d7c08191846711c5df8233bc0ac5ba57aafcbac7",
        ),
        Text("In a peaceful grove beneath a silver moon..."),
    )
    assert turn.message_id == "msg_67ccd2bf17f0819081ff3bb2cf6508e60bb6a6b452d3795b"
    assert turn.response_id == RESPONSE["id"]
    assert turn.provider_request_id == "req_1"
    assert turn.finish_reason == "stop"
    assert turn.usage == Usage(
        input_tokens=2048,
        output_tokens=300,
        total_tokens=2348,
        cached_input_tokens=1024,
        reasoning_tokens=256,
    )
    assert turn.raw is RESPONSE


def test_decode_parallel_function_calls_keep_call_id_and_item_id() -> None:
    turn = decode_response(FUNCTION_CALLS)
    assert turn.choice == (
        ToolCall(
            "call_12345xyz",
            "get_weather",
            {"city": "Paris"},
            provider_call_id="call_12345xyz",
            provider_item_id="fc_12345xyz",
        ),
        ToolCall(
            "call_67890abc",
            "add",
            {"x": 2, "y": 3},
            provider_call_id="call_67890abc",
            provider_item_id="fc_67890abc",
        ),
    )
    assert turn.finish_reason == "tool_calls"
    assert turn.message_id is None


@pytest.mark.parametrize(
    ("status", "details", "expected"),
    [
        ("completed", None, "stop"),
        ("incomplete", {"reason": "max_output_tokens"}, "length"),
        ("incomplete", {"reason": "content_filter"}, "content_filter"),
        ("incomplete", {"reason": "something_new"}, "something_new"),
        ("incomplete", None, "incomplete"),
        ("in_progress", None, "in_progress"),
        ("cancelled", None, "cancelled"),
    ],
)
def test_finish_reasons(status: str, details: Any, expected: str) -> None:
    body = {**RESPONSE, "status": status, "incomplete_details": details}
    assert decode_response(body).finish_reason == expected


def test_failed_response_is_an_error() -> None:
    body = {
        **RESPONSE,
        "status": "failed",
        "error": {"code": "server_error", "message": "The model failed to respond."},
        "output": [],
    }
    with pytest.raises(ProviderError, match=r"The model failed to respond\.") as info:
        decode_response(body)
    assert info.value.retryable is True
    body["error"] = {"code": "invalid_prompt", "message": "Invalid prompt."}
    with pytest.raises(ProviderError) as info:
        decode_response(body)
    assert info.value.retryable is False


def test_malformed_arguments_and_refusal() -> None:
    body = copy.deepcopy(FUNCTION_CALLS)
    body["output"][0]["arguments"] = '{"city": "Par'
    body["output"].append(
        {
            "type": "message",
            "id": "msg_1",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "refusal", "refusal": "I can't."}],
        }
    )
    choice = decode_response(body).choice
    assert isinstance(choice[0], ToolCall)
    assert choice[0].arguments == '{"city": "Par'
    assert choice[2] == Text("I can't.", {"type": "refusal"})


def test_unknown_output_item_is_a_clear_error() -> None:
    body = {**RESPONSE, "output": [{"type": "web_search_call", "id": "ws_1", "status": "done"}]}
    with pytest.raises(ProviderError, match="unsupported output item type 'web_search_call'"):
        decode_response(body)
    with pytest.raises(ProviderError, match="malformed openai_responses response"):
        decode_response({**RESPONSE, "output": [{"type": "function_call"}]})


def test_annotations_are_kept() -> None:
    body = copy.deepcopy(RESPONSE)
    ann = [{"type": "url_citation", "url": "https://example.com", "start_index": 0, "end_index": 2}]
    body["output"][1]["content"][0]["annotations"] = ann
    text = decode_response(body).choice[1]
    assert isinstance(text, Text)
    assert text.additional_params == {"annotations": ann}
    out = encode_request(request("next", AssistantMessage([text], id="msg_a")))
    assert out["input"][0]["content"][0]["annotations"] == ann


# --- encoding ------------------------------------------------------------------------------


def test_encode_is_stateless_with_full_input() -> None:
    turn1 = decode_response(RESPONSE)
    turn2 = decode_response(FUNCTION_CALLS)
    c1, c2 = turn2.choice
    assert isinstance(c1, ToolCall) and isinstance(c2, ToolCall)
    history = (
        SystemMessage("Be terse."),
        UserMessage("tell a story"),
        AssistantMessage(turn1.choice, id=turn1.message_id),
        UserMessage("now tools"),
        AssistantMessage(turn2.choice, id=turn2.message_id),
    )
    prompt = UserMessage(
        [ToolResult.for_call(c1, [Json({"temp": 4})]), ToolResult.for_call(c2, [Text("5")])]
    )
    body = encode_request(
        request(
            prompt,
            *history,
            preamble="You are helpful.",
            tools=(ADD, WEATHER),
            tool_choice=ToolChoice.auto(),
            params={"reasoning": {"effort": "low"}, "store": True},
        )
    )
    assert body["store"] is False
    assert body["include"] == ["reasoning.encrypted_content"]
    assert body["instructions"] == "You are helpful."
    assert body["reasoning"] == {"effort": "low"}
    assert body["tool_choice"] == "auto"
    assert body["tools"][0] == {
        "type": "function",
        "name": "add",
        "description": ADD.description,
        "parameters": ADD.parameters,
        "strict": False,
    }
    assert body["input"] == [
        {"type": "message", "role": "system", "content": "Be terse."},
        {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": "tell a story"}],
        },
        {
            "type": "reasoning",
            "id": "rs_6820f383d7c08191846711c5df8233bc0ac5ba57aafcbac7",
            "summary": [{"type": "summary_text", "text": "**Adding numbers** The user asks..."}],
            "encrypted_content": "gAAAAABoISQ24OyVRYbkYfukn9T6...",
        },
        {
            "type": "message",
            "role": "assistant",
            "id": "msg_67ccd2bf17f0819081ff3bb2cf6508e60bb6a6b452d3795b",
            "status": "completed",
            "content": [
                {
                    "type": "output_text",
                    "text": "In a peaceful grove beneath a silver moon...",
                    "annotations": [],
                }
            ],
        },
        {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": "now tools"}],
        },
        {
            "type": "function_call",
            "id": "fc_12345xyz",
            "call_id": "call_12345xyz",
            "name": "get_weather",
            "arguments": '{"city":"Paris"}',
            "status": "completed",
        },
        {
            "type": "function_call",
            "id": "fc_67890abc",
            "call_id": "call_67890abc",
            "name": "add",
            "arguments": '{"x":2,"y":3}',
            "status": "completed",
        },
        {"type": "function_call_output", "call_id": "call_12345xyz", "output": '{"temp":4}'},
        {"type": "function_call_output", "call_id": "call_67890abc", "output": "5"},
    ]


def test_reasoning_is_sent_only_with_its_id_and_encrypted_content() -> None:
    foreign = Reasoning.of_text("claude thought", signature="sig")
    body = encode_request(request("next", AssistantMessage([foreign, Text("hi")])))
    assert [item["type"] for item in body["input"]] == ["message", "message"]
    blocks = (ReasoningBlock("text", "step 1"), ReasoningBlock("encrypted", "gAAA"))
    body = encode_request(request("next", AssistantMessage([Reasoning(blocks, id="rs_1")])))
    assert body["input"][0] == {
        "type": "reasoning",
        "id": "rs_1",
        "summary": [],
        "content": [{"type": "reasoning_text", "text": "step 1"}],
        "encrypted_content": "gAAA",
    }
    # no id: the SDK's reasoning item requires one
    body = encode_request(request("next", AssistantMessage([Reasoning(blocks)])))
    assert [item["type"] for item in body["input"]] == ["message"]


def test_a_turn_whose_reasoning_has_no_encrypted_content_is_sent_detached() -> None:
    """With `store: false` an id-only reasoning item is a 404 ("Items are not persisted"):
    it is left out, and so are the ids of that turn's items, which would point at it."""
    visible = Reasoning((ReasoningBlock("summary", "thinking"),), id="rs_1")
    call = ToolCall("call_1", "add", {"x": 1}, provider_call_id="call_1", provider_item_id="fc_1")
    turn = AssistantMessage([visible, Text("Adding."), call], id="msg_1")
    body = encode_request(request(UserMessage([ToolResult.for_call(call, [Text("2")])]), turn))
    assert body["input"] == [
        {"type": "message", "role": "assistant", "content": "Adding."},
        {
            "type": "function_call",
            "call_id": "call_1",
            "name": "add",
            "arguments": '{"x":1}',
            "status": "completed",
        },
        {"type": "function_call_output", "call_id": "call_1", "output": "2"},
    ]


def test_tool_results_with_images_and_minted_ids() -> None:
    call = ToolCall("", "snap", {})
    result = ToolResult.for_call(call, [Text("here"), Image("aGk=", "image/png")])
    body = encode_request(request(UserMessage([result]), AssistantMessage([call])))
    assert body["input"][0] == {
        "type": "function_call",
        "call_id": call.id,
        "name": "snap",
        "arguments": "{}",
        "status": "completed",
    }
    assert body["input"][1] == {
        "type": "function_call_output",
        "call_id": call.id,
        "output": [
            {"type": "input_text", "text": "here"},
            {"type": "input_image", "image_url": "data:image/png;base64,aGk=", "detail": "auto"},
        ],
    }


@pytest.mark.parametrize(
    ("choice", "wire"),
    [
        (ToolChoice.auto(), "auto"),
        (ToolChoice.none(), "none"),
        (ToolChoice.required(), "required"),
        (ToolChoice.specific(["add"]), {"type": "function", "name": "add"}),
        (
            ToolChoice.specific(["add", "get_weather"]),
            {
                "type": "allowed_tools",
                "mode": "required",
                "tools": [
                    {"type": "function", "name": "add"},
                    {"type": "function", "name": "get_weather"},
                ],
            },
        ),
    ],
)
def test_tool_choice(choice: ToolChoice, wire: Any) -> None:
    assert encode_request(request(tools=(ADD, WEATHER), tool_choice=choice))["tool_choice"] == wire


def test_stream_flag_and_user_image() -> None:
    prompt = UserMessage([Text("see"), Image("https://example.com/a.png", detail="high")])
    body = encode_request(request(prompt), stream=True)
    assert body["stream"] is True
    assert body["input"] == [
        {
            "type": "message",
            "role": "user",
            "content": [
                {"type": "input_text", "text": "see"},
                {"type": "input_image", "image_url": "https://example.com/a.png", "detail": "high"},
            ],
        }
    ]
