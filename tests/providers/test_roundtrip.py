"""Round trips through the real state machine: AgentRun's history → request → scripted
provider response → ProviderTurn → ModelTurn → tool results → next request. Every id the
provider issued comes back, and every tool call is answered, in order, right after it."""

from __future__ import annotations

from typing import Any

import pytest

from app.core import (
    AgentRun,
    CallModel,
    CallTools,
    Done,
    ModelTurn,
    Reasoning,
    Text,
    ToolCall,
    ToolResult,
)
from app.providers import anthropic, openai_chat, openai_responses
from app.providers.base import ModelRequest, ProviderTurn
from tests.mocks.replies import (
    CHAT_PATH,
    MESSAGES_PATH,
    RENDER_BODY,
    RESPONSES_PATH,
    MockReasoning,
    MockToolCall,
    Reply,
)
from tests.providers.helpers import ADD, WEATHER

CODECS: dict[str, Any] = {
    CHAT_PATH: openai_chat,
    RESPONSES_PATH: openai_responses,
    MESSAGES_PATH: anthropic,
}
TOOLS = frozenset({"add", "get_weather"})

SCRIPT = [
    Reply(
        text="Let me look.",
        reasoning=[MockReasoning("thinking 1", signature="sig1", encrypted="enc1", id="rs_a")],
        tool_calls=[
            MockToolCall("get_weather", '{"city": "Oslo"}', id="call_w", item_id="fc_w"),
            MockToolCall("add", '{"x": 1, "y": 2}', id="call_x", item_id="fc_x"),
        ],
    ),
    Reply(
        reasoning=[MockReasoning(redacted="opaque", encrypted="enc2", id="rs_b")],
        tool_calls=[MockToolCall("add", '{"x": 3, "y": 4}', id="call_y", item_id="fc_y")],
    ),
    Reply(text="Oslo is 4°C; 1+2=3 and 3+4=7."),
]


def execute(call: ToolCall) -> ToolResult:
    args = call.arguments
    if call.name == "add":
        return ToolResult.for_call(call, [Text(str(args["x"] + args["y"]))])
    return ToolResult.for_call(call, [Text('{"temp": 4}')])


def drive(path: str) -> tuple[list[dict[str, Any]], list[ProviderTurn], AgentRun]:
    codec = CODECS[path]
    run = AgentRun("weather in Oslo, then sums", max_turns=len(SCRIPT))
    bodies: list[dict[str, Any]] = []
    turns: list[ProviderTurn] = []
    for seq, reply in enumerate(SCRIPT, start=1):
        step = run.next_step()
        assert isinstance(step, CallModel), step
        request = ModelRequest(
            model="m",
            prompt=step.prompt,
            history=step.history,
            preamble="Use tools.",
            tools=(ADD, WEATHER),
        )
        bodies.append(codec.encode_request(request))
        turn: ProviderTurn = codec.decode_response(RENDER_BODY[path](reply, "m", seq))
        turns.append(turn)
        run.model_response(
            ModelTurn(
                choice=turn.choice,
                usage=turn.usage,
                executable_tool_names=TOOLS,
                allowed_tool_names=TOOLS,
                message_id=turn.message_id,
                response_id=turn.response_id,
                finish_reason=turn.finish_reason,
                raw=turn.raw,
            )
        )
        step2 = run.next_step()
        if isinstance(step2, CallTools):
            run.tool_results([execute(p.tool_call) for p in step2.calls])
        else:
            assert isinstance(step2, Done)
    return bodies, turns, run


def test_chat_round_trip_pairs_every_call_in_order() -> None:
    bodies, _, run = drive(CHAT_PATH)
    assert run.is_done()
    messages = bodies[-1]["messages"]
    assert [m["role"] for m in messages] == [
        "system", "user", "assistant", "tool", "tool", "assistant", "tool",
    ]  # fmt: skip
    assert [c["id"] for c in messages[2]["tool_calls"]] == ["call_w", "call_x"]
    assert [m["tool_call_id"] for m in messages[3:5]] == ["call_w", "call_x"]
    assert messages[3]["content"] == '{"temp": 4}'
    assert messages[4]["content"] == "3"
    assert [c["id"] for c in messages[5]["tool_calls"]] == ["call_y"]
    assert messages[6] == {"role": "tool", "tool_call_id": "call_y", "content": "7"}
    # each request extends the previous one
    assert bodies[1]["messages"] == messages[:5]


def test_responses_round_trip_keeps_call_ids_item_ids_and_reasoning() -> None:
    bodies, turns, run = drive(RESPONSES_PATH)
    assert run.is_done()
    items = bodies[-1]["input"]
    assert [(i["type"], i.get("id") or i.get("call_id")) for i in items] == [
        ("message", None),
        ("reasoning", "rs_a"),
        ("message", "msg_mock1"),
        ("function_call", "fc_w"),
        ("function_call", "fc_x"),
        ("function_call_output", "call_w"),
        ("function_call_output", "call_x"),
        ("reasoning", "rs_b"),
        ("function_call", "fc_y"),
        ("function_call_output", "call_y"),
    ]
    assert [i["call_id"] for i in items if i["type"] == "function_call"] == [
        "call_w", "call_x", "call_y",
    ]  # fmt: skip
    assert items[1]["encrypted_content"] == "enc1"
    assert items[7]["encrypted_content"] == "enc2"
    assert all(b["store"] is False for b in bodies)
    assert turns[0].message_id == "msg_mock1"
    assert run.messages()[1].id == "msg_mock1"  # type: ignore[union-attr]


def test_anthropic_round_trip_keeps_thinking_signatures_and_tool_use_ids() -> None:
    bodies, _, run = drive(MESSAGES_PATH)
    assert run.is_done()
    messages = bodies[-1]["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user", "assistant", "user"]
    assert messages[1]["content"] == [
        {"type": "thinking", "thinking": "thinking 1", "signature": "sig1"},
        {"type": "text", "text": "Let me look."},
        {"type": "tool_use", "id": "call_w", "name": "get_weather", "input": {"city": "Oslo"}},
        {"type": "tool_use", "id": "call_x", "name": "add", "input": {"x": 1, "y": 2}},
    ]
    assert [b["tool_use_id"] for b in messages[2]["content"]] == ["call_w", "call_x"]
    assert messages[3]["content"][0] == {"type": "redacted_thinking", "data": "opaque"}
    assert messages[4]["content"] == [
        {"type": "tool_result", "tool_use_id": "call_y", "content": [{"type": "text", "text": "7"}]}
    ]
    assert bodies[-1]["system"] == "Use tools."


@pytest.mark.parametrize("path", list(CODECS))
def test_usage_and_completion_calls_are_recorded(path: str) -> None:
    _, turns, run = drive(path)
    assert [c.finish_reason for c in run.completion_calls()] == ["tool_calls", "tool_calls", "stop"]
    assert run.usage().input_tokens == sum(t.usage.input_tokens for t in turns)
    assert [c.response_id for c in run.completion_calls()] == [t.response_id for t in turns]


def test_chat_decodes_reasoning_but_never_sends_it_back() -> None:
    bodies, turns, run = drive(CHAT_PATH)
    assert turns[0].choice[0] == Reasoning.of_text("thinking 1")
    assert isinstance(run.messages()[1].content[0], Reasoning)  # kept in history
    for body in bodies:
        for message in body["messages"]:
            assert set(message) <= {"role", "content", "tool_calls", "tool_call_id"}
