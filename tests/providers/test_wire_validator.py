"""The conformance checks can fail: `check_request` rejects each kind of defect (a form the
SDK does not accept, an unknown or misnamed key at any depth, a missing required key, a
wrong scalar type), including the Responses assistant item this adapter used to send. And
the decoders read every SDK-built answer the same, blocking or streamed."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from app.core import AgentRun, AssistantMessage, Text, ToolCall, ToolResult, UserMessage
from app.providers.base import ModelRequest
from tests.providers.helpers import ADD, request
from tests.providers.sdk_wire import (
    CODECS,
    WIRES,
    Answer,
    Call,
    WireViolation,
    check_request,
    decode,
    sdk_answer,
)
from tests.providers.test_wire_conformance import tool_results

CALL = ToolCall("call_1", "add", {"x": 1, "y": 2}, provider_call_id="call_1")


def body(wire: str, *history: Any, prompt: Any = "next", **kw: Any) -> dict[str, Any]:
    built: dict[str, Any] = CODECS[wire].encode_request(
        request(prompt, *history, model="gpt-4.1", tools=(ADD,), **kw)
    )
    return built


def rejected(wire: str, doc: dict[str, Any], *, stream: bool = False) -> str:
    with pytest.raises(WireViolation) as info:
        check_request(wire, doc, stream=stream)
    return str(info.value)


@pytest.mark.parametrize("wire", WIRES)
def test_the_unmodified_bodies_pass(wire: str) -> None:
    result = UserMessage([ToolResult.for_call(CALL, [Text("3")], is_error=True)])
    history = (UserMessage("1+2?"), AssistantMessage([CALL]))
    check_request(wire, body(wire, *history, prompt=result), stream=False)


def test_the_old_id_less_responses_assistant_item_is_rejected() -> None:
    """What the adapter sent before: an output message without its required id."""
    doc = body("responses", AssistantMessage("4."))
    assert doc["input"][0] == {"type": "message", "role": "assistant", "content": "4."}
    old = copy.deepcopy(doc)
    old["input"][0] = {
        "type": "message",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": "4.", "annotations": []}],
    }
    assert "ResponseOutputMessageParam.id: missing" in rejected("responses", old)
    old["input"][0]["id"] = "msg_1"  # with an id it is a valid output message
    check_request("responses", old, stream=False)


def test_unknown_and_misnamed_keys_are_rejected_at_any_depth() -> None:
    failed = UserMessage([ToolResult.for_call(CALL, [Text("boom")], is_error=True)])
    claude = body("anthropic", AssistantMessage([CALL]), prompt=failed)
    block = claude["messages"][-1]["content"][0]
    assert block["is_error"] is True
    block["is_eror"] = block.pop("is_error")
    assert "ToolResultBlockParam.is_eror: extra_forbidden" in rejected("anthropic", claude)
    # the OpenAI wires have no error flag: that is why the text carries the marker
    chat = body("chat", AssistantMessage([CALL]), prompt=failed)
    chat["messages"][-1]["is_error"] = True  # inside `messages`, validated lazily
    assert "ChatCompletionToolMessageParam.is_error: extra_forbidden" in rejected("chat", chat)
    responses = body("responses", AssistantMessage([CALL]), prompt=failed)
    responses["input"][-1]["is_error"] = True
    assert "FunctionCallOutput.is_error: extra_forbidden" in rejected("responses", responses)
    top = body("chat")
    top["max_tokens_to_sample"] = 5
    assert "max_tokens_to_sample: extra_forbidden" in rejected("chat", top)


def test_missing_required_keys_and_wrong_types_are_rejected() -> None:
    responses = body("responses", AssistantMessage([CALL]), prompt="next")
    del responses["input"][0]["call_id"]
    assert "ResponseFunctionToolCallParam.call_id: missing" in rejected("responses", responses)
    claude = body("anthropic")
    del claude["max_tokens"]
    assert "max_tokens: missing" in rejected("anthropic", claude)
    claude = body("anthropic")
    claude["max_tokens"] = "4096"
    assert "max_tokens: int_type" in rejected("anthropic", claude)
    chat = body("chat", params={"temperature": "0.2"})
    assert "temperature: float_type" in rejected("chat", chat)
    chat = body("chat")
    chat["stream"] = True  # a streaming body is not a non-streaming request
    assert "stream: literal_error" in rejected("chat", chat)
    check_request("chat", chat, stream=True)


def test_a_text_block_with_an_extra_key_is_not_passed_by_a_response_model() -> None:
    claude = body("anthropic", AssistantMessage("4."))
    claude["messages"][0]["content"][0]["cache"] = True
    assert "response model TextBlock" in rejected("anthropic", claude)


def test_legacy_stored_error_results_are_sent_flagged() -> None:
    """A run stored before schema 2 kept a client's `is_error` as the text's annotation:
    loaded, its results reach every wire flagged."""
    fixtures = Path(__file__).parents[1] / "core" / "fixtures"
    doc = json.loads((fixtures / "v1_Done.json").read_text())
    for message in doc["new_messages"]:
        for item in message["content"] if message["role"] == "user" else ():
            if item.get("type") == "toolresult":
                item["content"][0]["additional_params"] = {"is_error": True}
    run = AgentRun.from_json(json.dumps(doc))
    req = ModelRequest(model="gpt-4.1", prompt=UserMessage("next"), history=run.messages())
    for wire in WIRES:
        sent = CODECS[wire].encode_request(req)
        check_request(wire, sent, stream=False)
        assert [flag for _, _, flag in tool_results(wire, sent)] == [True, True], wire


ANSWERS = {
    "text": Answer(text="naïve café — 你好"),
    "empty": Answer(text=""),
    "calls": Answer(calls=(Call("c1", "add", '{"x": 1, "y": 2}'), Call("c2", "add", "{}"))),
    "all": Answer(reasoning="thinking", text="Doing it.", calls=(Call("c1", "add", '{"x": 1}'),)),
}


@pytest.mark.parametrize("wire", WIRES)
@pytest.mark.parametrize("name", list(ANSWERS))
def test_sdk_built_answers_decode_the_same_blocking_and_streamed(wire: str, name: str) -> None:
    answer = ANSWERS[name]
    blocking = decode(wire, answer, 7, "m", stream=False)
    streamed = decode(wire, answer, 7, "m", stream=True)
    assert streamed.choice == blocking.choice
    assert (streamed.usage, streamed.finish_reason, streamed.message_id) == (
        blocking.usage,
        blocking.finish_reason,
        blocking.message_id,
    )
    texts = [i.text for i in blocking.choice if isinstance(i, Text)]
    assert "".join(texts) == (answer.text or "")
    calls = [i for i in blocking.choice if isinstance(i, ToolCall)]
    assert [(c.provider_call_id, c.name, c.arguments) for c in calls] == [
        (c.id, c.name, json.loads(c.arguments)) for c in answer.calls
    ]
    assert blocking.finish_reason == answer.finish
    assert blocking.usage.input_tokens == answer.usage[0]


@pytest.mark.parametrize(
    ("wire", "update", "finish"),
    [
        (
            "chat",
            lambda a: {"choices": [{**a.choices[0].model_dump(), "finish_reason": "length"}]},
            "length",
        ),
        (
            "responses",
            lambda a: {
                "status": "incomplete",
                "incomplete_details": {"reason": "max_output_tokens"},
            },
            "length",
        ),
        ("anthropic", lambda a: {"stop_reason": "max_tokens"}, "length"),
        ("anthropic", lambda a: {"stop_reason": "refusal"}, "content_filter"),
    ],
)
def test_sdk_built_truncations_decode(wire: str, update: Any, finish: str) -> None:
    answer = sdk_answer(wire, Answer(text="partial"), 1, "m")
    changed = {**answer.model_dump(mode="json"), **update(answer)}
    dumped = type(answer).model_validate(changed).model_dump(mode="json")
    assert CODECS[wire].decode_response(dumped).finish_reason == finish
