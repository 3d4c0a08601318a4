"""Streaming decoders: the same scripted answer streamed and blocking gives the same
`ProviderTurn`; text deltas concatenate to the text; truncation and error events fail
clearly."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from app.core import Reasoning, Text, ToolCall
from app.providers import anthropic, openai_chat, openai_responses
from app.providers.base import ProviderError, ProviderTurn, TextDelta
from app.providers.sse import SSEEvent, SSEParser
from tests.mocks.replies import (
    CHAT_PATH,
    MESSAGES_PATH,
    RENDER_BODY,
    RENDER_EVENTS,
    RESPONSES_PATH,
    MockReasoning,
    MockToolCall,
    MockUsage,
    Reply,
    sse_bytes,
)
from tests.providers.helpers import without_raw

WIRES: dict[str, tuple[Callable[..., ProviderTurn], Callable[..., Any]]] = {
    CHAT_PATH: (openai_chat.decode_response, openai_chat.ChatStreamDecoder),
    RESPONSES_PATH: (openai_responses.decode_response, openai_responses.ResponsesStreamDecoder),
    MESSAGES_PATH: (anthropic.decode_response, anthropic.AnthropicStreamDecoder),
}

REASONING = MockReasoning(
    text="First, add the numbers.", signature="sig_abc", encrypted="gAAAA_enc", id="rs_1"
)

CONVERSATIONS = {
    "text": Reply(text="Hello there, how can I help you today?"),
    "empty_text": Reply(text=""),
    "single_tool_call": Reply(tool_calls=[MockToolCall("add", '{"x": 2, "y": 3}', id="call_1")]),
    "parallel_tool_calls": Reply(
        text="Doing both.",
        tool_calls=[
            MockToolCall("get_weather", '{"city": "Paris"}', id="call_a"),
            MockToolCall("add", '{"x": 10, "y": -4}', id="call_b"),
            MockToolCall("now", "", id="call_c"),
        ],
    ),
    "reasoning": Reply(
        text="5",
        reasoning=[REASONING],
        usage=MockUsage(input=100, output=50, cached=64, cache_creation=8, reasoning=40),
    ),
    "malformed_arguments": Reply(tool_calls=[MockToolCall("add", '{"x": 2, "y":', id="call_m")]),
    "unicode": Reply(text="naïve café — 你好 👋"),
}

FINISHES = {
    CHAT_PATH: ["stop", "length", "content_filter", "tool_calls"],
    RESPONSES_PATH: ["max_output_tokens", "content_filter"],
    MESSAGES_PATH: ["end_turn", "max_tokens", "stop_sequence", "refusal", "pause_turn"],
}


def stream_decode(path: str, reply: Reply, *, seq: int = 1) -> tuple[list[TextDelta], ProviderTurn]:
    _, decoder_cls = WIRES[path]
    decoder = decoder_cls(request_id="req_s")
    deltas: list[TextDelta] = []
    for event, data in RENDER_EVENTS[path](reply, "m", seq):
        deltas.extend(decoder.feed(SSEEvent(event, data)))
    assert decoder.done
    return deltas, decoder.finish()


def blocking_decode(path: str, reply: Reply, *, seq: int = 1) -> ProviderTurn:
    decode, _ = WIRES[path]
    turn: ProviderTurn = decode(RENDER_BODY[path](reply, "m", seq), request_id="req_s")
    return turn


@pytest.mark.parametrize("path", list(WIRES))
@pytest.mark.parametrize("name", list(CONVERSATIONS))
def test_stream_blocking_parity(path: str, name: str) -> None:
    reply = CONVERSATIONS[name]
    deltas, streamed = stream_decode(path, reply)
    blocking = blocking_decode(path, reply)
    assert without_raw(streamed) == without_raw(blocking)
    assert "".join(d.text for d in deltas) == (reply.text or "")
    assert streamed.provider_request_id == "req_s"
    assert streamed.raw is not None


@pytest.mark.parametrize(
    ("path", "finish"), [(p, f) for p, finishes in FINISHES.items() for f in finishes]
)
def test_stream_blocking_parity_for_finish_reasons(path: str, finish: str) -> None:
    reply = Reply(text="partial answer", finish=finish)
    _, streamed = stream_decode(path, reply)
    blocking = blocking_decode(path, reply)
    assert without_raw(streamed) == without_raw(blocking)
    assert streamed.finish_reason is not None


def test_stream_content_per_wire() -> None:
    reply = CONVERSATIONS["reasoning"]
    _, chat = stream_decode(CHAT_PATH, reply)
    assert chat.choice == (Reasoning.of_text("First, add the numbers."), Text("5"))
    _, responses = stream_decode(RESPONSES_PATH, reply)
    assert isinstance(responses.choice[0], Reasoning)
    assert responses.choice[0].id == "rs_1"
    assert [b.kind for b in responses.choice[0].content] == ["summary", "encrypted"]
    _, claude = stream_decode(MESSAGES_PATH, reply)
    assert claude.choice[0] == Reasoning.of_text("First, add the numbers.", "sig_abc")
    assert claude.usage.cached_input_tokens == 64
    assert claude.usage.cache_creation_input_tokens == 8
    assert claude.usage.output_tokens == 50  # the final message_delta count wins


@pytest.mark.parametrize("path", list(WIRES))
def test_streamed_malformed_arguments_are_kept_raw(path: str) -> None:
    _, turn = stream_decode(path, CONVERSATIONS["malformed_arguments"])
    (call,) = turn.choice
    assert isinstance(call, ToolCall)
    assert call.arguments == '{"x": 2, "y":'
    assert call.provider_call_id == "call_m"


@pytest.mark.parametrize("path", list(WIRES))
def test_truncated_stream_is_a_retryable_error(path: str) -> None:
    _, decoder_cls = WIRES[path]
    events = RENDER_EVENTS[path](CONVERSATIONS["text"], "m", 1)
    decoder = decoder_cls()
    for event, data in events[:4]:
        decoder.feed(SSEEvent(event, data))
    assert not decoder.done
    with pytest.raises(ProviderError, match="stream ended") as info:
        decoder.finish()
    assert info.value.retryable is True


@pytest.mark.parametrize("path", list(WIRES))
def test_malformed_event_json_is_a_retryable_error(path: str) -> None:
    _, decoder_cls = WIRES[path]
    with pytest.raises(ProviderError, match=r"malformed .* stream event") as info:
        decoder_cls().feed(SSEEvent("message_start", '{"type": "message_st'))
    assert info.value.retryable is True


def test_error_events() -> None:
    overloaded = '{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}'
    with pytest.raises(ProviderError, match="Overloaded") as info:
        anthropic.AnthropicStreamDecoder().feed(SSEEvent("error", overloaded))
    assert info.value.retryable is True
    invalid = '{"type": "error", "error": {"type": "invalid_request_error", "message": "bad"}}'
    with pytest.raises(ProviderError) as info:
        anthropic.AnthropicStreamDecoder().feed(SSEEvent("error", invalid))
    assert info.value.retryable is False

    failed = {
        "type": "response.failed",
        "sequence_number": 3,
        "response": {
            "id": "resp_1",
            "status": "failed",
            "error": {"code": "server_error", "message": "boom"},
            "output": [],
        },
    }
    decoder = openai_responses.ResponsesStreamDecoder()
    import json

    decoder.feed(SSEEvent("response.failed", json.dumps(failed)))
    with pytest.raises(ProviderError, match="boom"):
        decoder.finish()
    with pytest.raises(ProviderError, match="rate limited"):
        openai_responses.ResponsesStreamDecoder().feed(
            SSEEvent(
                "error",
                '{"type": "error", "code": "rate_limit_exceeded", "message": "rate limited"}',
            )
        )
    with pytest.raises(ProviderError, match="upstream broke"):
        openai_chat.ChatStreamDecoder().feed(
            SSEEvent(None, '{"error": {"message": "upstream broke", "type": "server_error"}}')
        )


def test_responses_output_falls_back_to_collected_items() -> None:
    reply = CONVERSATIONS["parallel_tool_calls"]
    decoder = openai_responses.ResponsesStreamDecoder()
    import json

    for event, data in RENDER_EVENTS[RESPONSES_PATH](reply, "m", 1):
        payload = json.loads(data)
        if payload["type"] == "response.completed":
            payload["response"]["output"] = []
            data = json.dumps(payload)
        decoder.feed(SSEEvent(event, data))
    assert without_raw(decoder.finish()).choice == blocking_decode(RESPONSES_PATH, reply).choice


@pytest.mark.parametrize("path", list(WIRES))
@pytest.mark.parametrize("chunk", [1, 7, 64, 100_000])
def test_sse_parser_over_arbitrary_chunking_gives_the_same_turn(path: str, chunk: int) -> None:
    reply = CONVERSATIONS["parallel_tool_calls"]
    wire = b"".join(sse_bytes(e, d) for e, d in RENDER_EVENTS[path](reply, "m", 1))
    wire = wire.replace(b"\n", b"\r\n") if chunk == 7 else wire  # CRLF split across chunks
    text = wire.decode()
    parser = SSEParser()
    _, decoder_cls = WIRES[path]
    decoder = decoder_cls(request_id="req_s")
    for i in range(0, len(text), chunk):
        for event in parser.feed(text[i : i + chunk]):
            decoder.feed(event)
    tail = parser.close()
    assert tail is None
    assert without_raw(decoder.finish()) == without_raw(blocking_decode(path, reply))


def test_sse_parser_details() -> None:
    parser = SSEParser()
    events = parser.feed(": comment\nevent: x\ndata: a\ndata:b\nid: 7\nretry: 10\n\n\n")
    assert events == [SSEEvent("x", "a\nb")]
    assert parser.feed("data: unterminated") == []
    assert parser.close() == SSEEvent(None, "unterminated")
