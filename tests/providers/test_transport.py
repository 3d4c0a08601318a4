"""Transports against the in-process mock provider server (127.0.0.1 only): what is sent,
request ids, streaming, and the error mapping (429 + Retry-After, 500, timeouts,
connection errors, 401, context length)."""

from __future__ import annotations

import asyncio
import dataclasses
import email.utils
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from app.core import Text, ToolCall, UserMessage
from app.providers.anthropic import AnthropicProvider
from app.providers.backoff import BackoffPolicy
from app.providers.base import (
    ModelRequest,
    ProviderError,
    ProviderTurn,
    TextDelta,
    TurnComplete,
    UsageReport,
)
from app.providers.openai_chat import OpenAIChatProvider
from app.providers.openai_responses import OpenAIResponsesProvider
from app.providers.registry import provider_from_settings
from app.providers.transport import HttpProvider
from tests.mocks.replies import (
    CHAT_PATH,
    MESSAGES_PATH,
    RESPONSES_PATH,
    MockReasoning,
    MockToolCall,
    MockUsage,
    Reply,
)
from tests.mocks.server import MockProviderServer
from tests.ports import free_port
from tests.providers.helpers import ADD, request, without_raw

WIRES = ["openai", "openai_responses", "anthropic"]
PATHS = {"openai": CHAT_PATH, "openai_responses": RESPONSES_PATH, "anthropic": MESSAGES_PATH}


def make(
    name: str, mock: MockProviderServer, timeout: float = 5.0, keys: str = "test"
) -> HttpProvider:
    return provider_from_settings(
        name,
        openai_api_key=f"sk-{keys}",
        openai_base_url=mock.openai_base_url,
        anthropic_api_key=f"ak-{keys}",
        anthropic_base_url=mock.anthropic_base_url,
        timeout=timeout,
    )


@pytest_asyncio.fixture(params=WIRES, loop_scope="function")
async def provider(
    request: pytest.FixtureRequest, mock: MockProviderServer
) -> AsyncIterator[HttpProvider]:
    p = make(request.param, mock)
    yield p
    await p.aclose()


async def collect(
    provider: HttpProvider, req: ModelRequest
) -> tuple[list[TextDelta], ProviderTurn]:
    deltas: list[TextDelta] = []
    turn: ProviderTurn | None = None
    async for item in provider.stream(req):
        if isinstance(item, TextDelta):
            assert turn is None
            deltas.append(item)
        elif isinstance(item, UsageReport):  # (usage so far: what an aborted call bills)
            assert turn is None and item.usage.total_tokens > 0
        else:
            assert isinstance(item, TurnComplete)
            turn = item.turn
    assert turn is not None
    return deltas, turn


async def test_complete_sends_the_encoded_body_with_auth(
    provider: HttpProvider, mock: MockProviderServer
) -> None:
    mock.script(Reply(text="hi there"))
    turn = await provider.complete(request(tools=(ADD,)))
    assert turn.choice == (Text("hi there"),)
    assert turn.provider_request_id == "req_mock1"
    assert turn.raw is not None
    (sent,) = mock.requests
    assert sent.path == PATHS[provider.name]
    assert sent.body == provider.encode(request(tools=(ADD,)), stream=False)
    if provider.name == "anthropic":
        assert sent.headers["x-api-key"] == "ak-test"
        assert sent.headers["anthropic-version"] == "2023-06-01"
        assert "authorization" not in sent.headers
    else:
        assert sent.headers["authorization"] == "Bearer sk-test"
        assert "x-api-key" not in sent.headers


async def test_stream_yields_deltas_then_the_same_turn_as_blocking(
    provider: HttpProvider, mock: MockProviderServer
) -> None:
    reply = Reply(
        text="The answer is five.",
        reasoning=[MockReasoning("adding", signature="s", encrypted="e", id="rs_1")],
        tool_calls=[
            MockToolCall("add", '{"x": 2, "y": 3}', id="call_1", item_id="fc_1"),
            MockToolCall("add", '{"x": 4, "y": 5}', id="call_2", item_id="fc_2"),
        ],
        id="resp_or_msg_1",
    )
    mock.script(reply, reply)
    deltas, streamed = await collect(provider, request())
    blocking = await provider.complete(request())
    assert "".join(d.text for d in deltas) == "The answer is five."
    assert len(deltas) > 1
    assert mock.requests[0].body["stream"] is True
    assert mock.requests[0].headers["accept"] == "text/event-stream"
    # the mock numbers its replies: only the request id and message id embed the number
    assert streamed.provider_request_id == "req_mock1"
    assert blocking.provider_request_id == "req_mock2"

    def comparable(turn: ProviderTurn) -> ProviderTurn:
        return dataclasses.replace(without_raw(turn), provider_request_id=None, message_id=None)

    assert comparable(streamed) == comparable(blocking)
    assert streamed.finish_reason == "tool_calls"
    assert streamed.usage.input_tokens > 0
    calls = [c for c in streamed.choice if isinstance(c, ToolCall)]
    assert [c.provider_call_id for c in calls] == ["call_1", "call_2"]


async def test_429_with_retry_after_seconds(
    provider: HttpProvider, mock: MockProviderServer
) -> None:
    mock.script(Reply.fault(429, "Rate limit reached", retry_after="3"))
    with pytest.raises(ProviderError) as info:
        await provider.complete(request())
    err = info.value
    assert (err.status, err.retryable, err.retry_after) == (429, True, 3.0)
    assert err.message == "Rate limit reached"
    assert err.provider == provider.name


async def test_429_with_retry_after_http_date(mock: MockProviderServer) -> None:
    date = email.utils.formatdate(time.time() + 20, usegmt=True)
    mock.script(Reply.fault(429, retry_after=date))
    async with make("openai", mock) as p:
        with pytest.raises(ProviderError) as info:
            await p.complete(request())
    assert info.value.retry_after is not None
    assert 17.0 <= info.value.retry_after <= 20.0


async def test_500_then_success_with_the_backoff_policy(
    provider: HttpProvider, mock: MockProviderServer
) -> None:
    mock.script(Reply.fault(500, "boom"), Reply.fault(503, "unavailable"), Reply(text="ok"))
    policy = BackoffPolicy(max_attempts=4, max_total_seconds=5.0, base_seconds=0.01)
    attempts, waited, errors = 0, 0.0, []
    while True:
        attempts += 1
        try:
            turn = await provider.complete(request())
            break
        except ProviderError as err:
            errors.append((err.status, err.message))
            delay = policy.delay_for(err, attempts, waited)
            assert delay is not None
            waited += delay
            await asyncio.sleep(delay)
    assert turn.choice == (Text("ok"),)
    assert attempts == 3
    assert errors == [(500, "boom"), (503, "unavailable")]
    assert len(mock.requests) == 3
    assert mock.requests[0].body == mock.requests[2].body


async def test_failure_path_gives_up_with_the_last_error(mock: MockProviderServer) -> None:
    mock.script(*[Reply.fault(500, f"boom {i}") for i in range(3)])
    policy = BackoffPolicy(max_attempts=3, base_seconds=0.001)
    last: ProviderError | None = None
    async with make("anthropic", mock) as p:
        for attempt in range(1, 10):
            try:
                await p.complete(request())
            except ProviderError as err:
                last = err
                delay = policy.delay_for(err, attempt, 0.0)
                if delay is None:
                    break
    assert last is not None and last.message == "boom 2"
    assert len(mock.requests) == 3


async def test_timeout_is_retryable(mock: MockProviderServer) -> None:
    # (The answer 25 times later than the time-out: a loaded machine's stall is no answer.)
    mock.script(Reply(text="late", delay=5.0))
    for name in WIRES:
        async with make(name, mock, timeout=0.2) as p:
            with pytest.raises(ProviderError, match="timed out") as info:
                await p.complete(request())
            assert info.value.retryable is True
            assert info.value.status is None
        mock.script(Reply(text="late", delay=5.0))


@pytest.mark.parametrize("name", WIRES)
async def test_a_stream_reports_usage_as_the_provider_does(
    name: str, mock: MockProviderServer
) -> None:
    """`UsageReport` items: what an aborted call is billed (Anthropic reports the input
    tokens before the first text; the OpenAI wires only at the end)."""
    provider = make(name, mock)
    mock.script(Reply(text="Hello there, world.", usage=MockUsage(input=30, output=9)))
    items = [item async for item in provider.stream(request())]
    await provider.aclose()
    reports = [(i, item.usage) for i, item in enumerate(items) if isinstance(item, UsageReport)]
    first_text = next(i for i, item in enumerate(items) if isinstance(item, TextDelta))
    if name == "anthropic":  # message_start (input, 1 output token), then message_delta
        assert reports[0][0] < first_text
        assert (reports[0][1].input_tokens, reports[0][1].output_tokens) == (30, 1)
        assert (reports[-1][1].input_tokens, reports[-1][1].output_tokens) == (30, 9)
    elif name == "openai":  # the usage chunk, just before [DONE]
        assert [u.total_tokens for _, u in reports] == [39]
    else:
        assert reports == []
    assert isinstance(items[-1], TurnComplete) and items[-1].turn.usage.total_tokens == 39


async def test_stream_timeout_between_events_is_retryable(mock: MockProviderServer) -> None:
    mock.script(Reply(text="slow stream of text", chunk_delay=2.0))  # (10 times the time-out)
    async with make("openai", mock, timeout=0.2) as p:
        with pytest.raises(ProviderError, match="timed out") as info:
            await collect(p, request())
    assert info.value.retryable is True


async def test_connection_refused_is_retryable() -> None:
    port = free_port()
    async with OpenAIChatProvider(base_url=f"http://127.0.0.1:{port}/v1", api_key="k") as p:
        with pytest.raises(ProviderError, match="connection error") as info:
            await p.complete(request())
    assert info.value.retryable is True


@pytest.mark.parametrize(
    ("status", "message", "error_type"),
    [
        (401, "Incorrect API key provided: sk-test.", None),
        (400, "Invalid 'messages': empty array.", None),
        (403, "Project does not have access to model", None),
        (404, "The model `gpt-x` does not exist", None),
        (400, "This model's maximum context length is 128000 tokens.", "context_length_exceeded"),
    ],
)
async def test_non_retryable_errors_keep_status_and_message(
    provider: HttpProvider,
    mock: MockProviderServer,
    status: int,
    message: str,
    error_type: str | None,
) -> None:
    mock.script(Reply.fault(status, message, error_type=error_type))
    with pytest.raises(ProviderError) as info:
        await provider.complete(request())
    err = info.value
    assert (err.status, err.message, err.retryable) == (status, message, False)


async def test_stream_errors(provider: HttpProvider, mock: MockProviderServer) -> None:
    mock.script(Reply.fault(429, "slow down", retry_after="1"))
    with pytest.raises(ProviderError) as info:
        await collect(provider, request())
    assert (info.value.status, info.value.retryable, info.value.retry_after) == (429, True, 1.0)
    mock.script(Reply.fault(401, "bad key"))
    with pytest.raises(ProviderError) as info:
        await collect(provider, request())
    assert (info.value.status, info.value.retryable) == (401, False)
    mock.script(Reply(text="cut short", stop_after_events=3))
    with pytest.raises(ProviderError, match="stream ended") as info:
        await collect(provider, request())
    assert info.value.retryable is True


async def test_malformed_tool_arguments_do_not_crash(
    provider: HttpProvider, mock: MockProviderServer
) -> None:
    bad = Reply(tool_calls=[MockToolCall("add", '{"x": 1, "y": ', id="call_bad")])
    mock.script(bad, bad)
    for turn in (await provider.complete(request()), (await collect(provider, request()))[1]):
        (call,) = turn.choice
        assert isinstance(call, ToolCall)
        assert call.arguments == '{"x": 1, "y": '


async def test_non_json_body_is_a_retryable_error(
    provider: HttpProvider, mock: MockProviderServer
) -> None:
    mock.script(Reply(raw_body=b"<html>oops</html>"), Reply(raw_body=b"[1, 2]"))
    with pytest.raises(ProviderError, match="not JSON") as info:
        await provider.complete(request())
    assert info.value.retryable is True
    with pytest.raises(ProviderError, match="not an object"):
        await provider.complete(request())


async def test_base_url_comes_from_the_constructor_only(mock: MockProviderServer) -> None:
    mock.script(Reply(text="a"), Reply(text="b"), Reply(text="c"))
    hostile = request(params={"base_url": "http://evil.example", "api_key": "x", "model": "y"})
    providers: list[Any] = [
        OpenAIChatProvider(base_url=mock.openai_base_url, api_key="k"),
        OpenAIResponsesProvider(base_url=mock.openai_base_url, api_key="k"),
        AnthropicProvider(base_url=mock.anthropic_base_url, api_key="k"),
    ]
    for p in providers:
        async with p:
            await p.complete(hostile)
    assert [r.path for r in mock.requests] == [CHAT_PATH, RESPONSES_PATH, MESSAGES_PATH]
    assert all(r.body["model"] == "test-model" for r in mock.requests)


async def test_shared_client_is_not_closed_by_the_provider(mock: MockProviderServer) -> None:
    import httpx

    mock.script(Reply(text="a"), Reply(text="b"))
    async with httpx.AsyncClient() as client:
        async with OpenAIChatProvider(base_url=mock.openai_base_url, client=client) as p:
            await p.complete(request(UserMessage("x")))
        assert not client.is_closed
        async with OpenAIChatProvider(base_url=mock.openai_base_url, client=client) as p:
            assert (await p.complete(request())).choice == (Text("b"),)


@pytest.mark.parametrize("streamed", [False, True])
async def test_values_no_run_can_hold_are_a_malformed_response_not_a_crash(
    provider: HttpProvider, mock: MockProviderServer, streamed: bool
) -> None:
    """Arguments nested past the core's limit, or a negative token count: a clear,
    non-retryable provider error (not a ValueError escaping into the worker)."""
    deep = "[" * 200 + "]" * 200
    for reply in (
        Reply(tool_calls=[MockToolCall("add", arguments=f'{{"a": {deep}}}')]),
        Reply(text="hi", usage=MockUsage(input=-5)),
    ):
        mock.script(reply)
        with pytest.raises(ProviderError) as caught:
            if streamed:
                await collect(provider, request(tools=(ADD,)))
            else:
                await provider.complete(request(tools=(ADD,)))
        assert "malformed" in caught.value.message
        assert caught.value.retryable is False


@pytest.mark.parametrize("name", WIRES)
async def test_a_key_the_http_client_refuses_is_neither_echoed_nor_retried(
    mock: MockProviderServer, name: str
) -> None:
    """A key read with its trailing line break (a secret mounted from a file): h11 refuses
    the header and its message quoted it (`Illegal header value b'Bearer sk-…\\n'`) into
    the run's error, retried as a connection error eight times."""
    provider = make(name, mock, keys="newline-key-0042\n")
    try:
        with pytest.raises(ProviderError) as caught:
            await provider.complete(request())
    finally:
        await provider.aclose()
    assert "newline-key-0042" not in str(caught.value)
    assert not caught.value.retryable
    assert mock.requests == []
