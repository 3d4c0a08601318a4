"""The official SDKs (dev-only dependencies) parse the mock servers' responses: proof that
the mocks speak the real wire formats. The SDKs are never used by `app/`."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.mocks.replies import MockReasoning, MockToolCall, MockUsage, Reply
from tests.mocks.server import MockProviderServer

openai = pytest.importorskip("openai")
anthropic = pytest.importorskip("anthropic")

REPLY = Reply(
    text="Paris is sunny; 2+3=5.",
    tool_calls=[
        MockToolCall("get_weather", '{"city": "Paris"}', id="call_w"),
        MockToolCall("add", '{"x": 2, "y": 3}', id="call_a"),
    ],
    usage=MockUsage(input=30, output=12, cached=16, cache_creation=4, reasoning=5),
)
THINKING = Reply(
    text="5",
    reasoning=[
        MockReasoning("Add them.", signature="sig_1", encrypted="enc_1", id="rs_1"),
        MockReasoning(redacted="opaque_data"),
    ],
)


def openai_client(mock: MockProviderServer) -> Any:
    return openai.OpenAI(api_key="sk-test", base_url=mock.openai_base_url, max_retries=0)


def anthropic_client(mock: MockProviderServer) -> Any:
    return anthropic.Anthropic(api_key="ak-test", base_url=mock.anthropic_base_url, max_retries=0)


def test_openai_sdk_parses_chat_completion_and_stream(
    mock: MockProviderServer, request: pytest.FixtureRequest
) -> None:
    mock.script(REPLY, REPLY)
    client = openai_client(mock)
    request.addfinalizer(client.close)
    messages = [{"role": "user", "content": "hi"}]
    completion = client.chat.completions.create(model="gpt-test", messages=messages)
    message = completion.choices[0].message
    assert message.content == "Paris is sunny; 2+3=5."
    assert [c.id for c in message.tool_calls] == ["call_w", "call_a"]
    assert json.loads(message.tool_calls[1].function.arguments) == {"x": 2, "y": 3}
    assert completion.choices[0].finish_reason == "tool_calls"
    assert completion.usage.prompt_tokens_details.cached_tokens == 16
    assert completion.usage.completion_tokens_details.reasoning_tokens == 5

    stream = client.chat.completions.create(
        model="gpt-test", messages=messages, stream=True, stream_options={"include_usage": True}
    )
    text, args, finish, usage = [], {}, None, None
    for chunk in stream:
        if chunk.usage is not None:
            usage = chunk.usage
        for choice in chunk.choices:
            if choice.delta.content:
                text.append(choice.delta.content)
            for call in choice.delta.tool_calls or []:
                args.setdefault(call.index, []).append(call.function.arguments or "")
            finish = choice.finish_reason or finish
    assert "".join(text) == "Paris is sunny; 2+3=5."
    assert json.loads("".join(args[0])) == {"city": "Paris"}
    assert finish == "tool_calls"
    assert usage is not None and usage.total_tokens == 42


def test_openai_sdk_parses_responses_and_stream(
    mock: MockProviderServer, request: pytest.FixtureRequest
) -> None:
    mock.script(THINKING, REPLY)
    client = openai_client(mock)
    request.addfinalizer(client.close)
    response = client.responses.create(model="o-test", input="hi", store=False)
    assert response.output_text == "5"
    assert response.output[0].type == "reasoning"
    assert response.output[0].encrypted_content == "enc_1"
    assert response.usage.output_tokens_details.reasoning_tokens == 0

    events = list(client.responses.create(model="o-test", input="hi", stream=True))
    kinds = [e.type for e in events]
    assert kinds[0] == "response.created"
    assert kinds[-1] == "response.completed"
    deltas = [e.delta for e in events if e.type == "response.output_text.delta"]
    assert "".join(deltas) == "Paris is sunny; 2+3=5."
    final = events[-1].response
    calls = [item for item in final.output if item.type == "function_call"]
    assert [c.call_id for c in calls] == ["call_w", "call_a"]


def test_anthropic_sdk_parses_message_and_stream(
    mock: MockProviderServer, request: pytest.FixtureRequest
) -> None:
    mock.script(THINKING, REPLY)
    client = anthropic_client(mock)
    request.addfinalizer(client.close)
    message = client.messages.create(
        model="claude-test", max_tokens=100, messages=[{"role": "user", "content": "hi"}]
    )
    assert [b.type for b in message.content] == ["thinking", "redacted_thinking", "text"]
    assert message.content[0].signature == "sig_1"
    assert message.stop_reason == "end_turn"

    with client.messages.stream(
        model="claude-test", max_tokens=100, messages=[{"role": "user", "content": "hi"}]
    ) as stream:
        text = "".join(stream.text_stream)
        final = stream.get_final_message()
    assert text == "Paris is sunny; 2+3=5."
    tool_uses = [b for b in final.content if b.type == "tool_use"]
    assert [(b.id, b.input) for b in tool_uses] == [
        ("call_w", {"city": "Paris"}),
        ("call_a", {"x": 2, "y": 3}),
    ]
    assert final.stop_reason == "tool_use"
    assert final.usage.cache_read_input_tokens == 16
    assert final.usage.output_tokens == 12


def test_sdks_parse_mock_errors(mock: MockProviderServer) -> None:
    mock.script(Reply.fault(429, "slow down", retry_after="2"), Reply.fault(401, "bad key"))
    with openai_client(mock) as client, pytest.raises(openai.RateLimitError) as oinfo:
        client.chat.completions.create(model="m", messages=[])
    assert oinfo.value.status_code == 429
    with (
        anthropic_client(mock) as aclient,
        pytest.raises(anthropic.AuthenticationError) as ainfo,
    ):
        aclient.messages.create(model="m", max_tokens=1, messages=[])
    assert ainfo.value.status_code == 401
    assert "bad key" in str(ainfo.value)
