"""Responses: encrypted reasoning is asked for only where it exists (issue 12, item 1), and a
refusal of it is learnt and retried once, at once, without it. The refusals come from the
mock server on 127.0.0.1 answering OpenAI's real error body."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from app.core import AssistantMessage, Reasoning, Text, UserMessage
from app.providers.base import ModelRequest, ProviderError, ProviderTurn, TurnComplete
from app.providers.encrypted_reasoning import (
    REFUSED_ENCRYPTED_REASONING,
    EncryptedReasoningRefused,
    is_reasoning_model,
    refuses_encrypted_reasoning,
)
from app.providers.openai_responses import OpenAIResponsesProvider, encode_request
from app.providers.registry import provider_from_settings
from tests.mocks.replies import MockReasoning, Reply
from tests.mocks.server import MockProviderServer
from tests.providers.helpers import request

#: OpenAI's answer to `include: ["reasoning.encrypted_content"]` for gpt-4o, gpt-4.1, ...
REFUSAL = Reply(
    status=400,
    raw_body=orjson.dumps(
        {
            "error": {
                "message": "Encrypted content is not supported with this model.",
                "type": "invalid_request_error",
                "param": "include",
                "code": None,
            }
        }
    ),
)
INCLUDE = ["reasoning.encrypted_content"]


@pytest.mark.parametrize(
    ("model", "reasons"),
    [
        ("o1", True),
        ("o1-2024-12-17", True),
        ("o3", True),
        ("o3-mini", True),
        ("o3-pro", True),
        ("o4-mini", True),
        ("gpt-5", True),
        ("gpt-5-mini", True),
        ("gpt-5-nano", True),
        ("gpt-5-codex", True),
        ("gpt-5.1", True),
        ("gpt-5.2-pro", True),
        ("codex-mini-latest", True),
        ("openai/gpt-5", True),
        ("gpt-5-chat-latest", False),
        ("gpt-5.1-chat-latest", False),
        ("gpt-4o", False),
        ("gpt-4o-mini", False),
        ("gpt-4.1", False),
        ("gpt-4.1-mini", False),
        ("gpt-3.5-turbo", False),
        ("gpt-50", False),
        ("omni-moderation-latest", False),
        ("my-azure-deployment", False),
    ],
)
def test_reasoning_families(model: str, reasons: bool) -> None:
    assert is_reasoning_model(model) is reasons
    body = encode_request(request(model=model))
    assert body.get("include") == (INCLUDE if reasons else None)


def test_a_reasoning_param_asks_for_it_and_a_runs_own_include_wins() -> None:
    asked = encode_request(request(model="my-deployment", params={"reasoning": {"effort": "low"}}))
    assert asked["include"] == INCLUDE
    own = encode_request(request(model="o3", params={"include": ["message.output_text.logprobs"]}))
    assert own["include"] == ["message.output_text.logprobs"]
    none = encode_request(request(model="o3", params={"reasoning": None}))
    assert none["include"] == INCLUDE  # a null `reasoning` is no request; the family decides


@pytest.mark.parametrize(
    ("status", "content", "refused"),
    [
        (400, REFUSAL.raw_body, True),
        (400, b'{"error": {"message": "x", "param": "include"}}', True),
        (400, b'{"error": {"message": "Encrypted content is not supported"}}', True),
        (400, b'{"error": {"message": "Unsupported parameter: temperature"}}', False),
        (500, REFUSAL.raw_body, False),
        (400, b"<html>", False),
        (400, b"[]", False),
    ],
)
def test_the_refusal_is_recognised(status: int, content: bytes, refused: bool) -> None:
    assert refuses_encrypted_reasoning(status, content) is refused


def make(mock: MockProviderServer, refused: set[tuple[str, str]] | None) -> Any:
    return OpenAIResponsesProvider(
        base_url=mock.openai_base_url, api_key="sk-test", timeout=5.0, refused=refused
    )


async def call(provider: OpenAIResponsesProvider, req: ModelRequest, stream: bool) -> ProviderTurn:
    if not stream:
        return await provider.complete(req)
    items = [item async for item in provider.stream(req)]
    last = items[-1]
    assert isinstance(last, TurnComplete)
    return last.turn


def includes(mock: MockProviderServer) -> list[Any]:
    return [r.body.get("include") for r in mock.requests]


@pytest.mark.parametrize("stream", [False, True], ids=["blocking", "streaming"])
async def test_a_refusal_is_learnt_and_retried_once_without_include(
    mock: MockProviderServer, stream: bool
) -> None:
    refused: set[tuple[str, str]] = set()
    provider = make(mock, refused)
    req = request(model="gpt-5-lookalike")  # named like a reasoning model, has none
    mock.script(REFUSAL, Reply(text="hello"), Reply(text="again"))
    try:
        turn = await call(provider, req, stream)
        assert turn.choice == (Text("hello"),)
        assert includes(mock) == [INCLUDE, None]
        assert refused == {(mock.openai_base_url, "gpt-5-lookalike")}
        # learnt: the next call goes without it, in one request
        assert (await call(provider, req, stream)).choice == (Text("again"),)
        assert includes(mock) == [INCLUDE, None, None]
        # other models are unaffected
        assert provider.asks_encrypted_reasoning(request(model="o3"))
    finally:
        await provider.aclose()


@pytest.mark.parametrize("stream", [False, True], ids=["blocking", "streaming"])
async def test_only_one_retry(mock: MockProviderServer, stream: bool) -> None:
    provider = make(mock, set())
    mock.script(REFUSAL, REFUSAL)
    try:
        with pytest.raises(EncryptedReasoningRefused) as info:
            await call(provider, request(model="o3"), stream)
        assert info.value.status == 400 and not info.value.retryable
        assert includes(mock) == [INCLUDE, None]
    finally:
        await provider.aclose()


async def test_a_runs_own_include_is_not_taken_back(mock: MockProviderServer) -> None:
    refused: set[tuple[str, str]] = set()
    provider = make(mock, refused)
    mock.script(REFUSAL)
    try:
        with pytest.raises(EncryptedReasoningRefused, match="Encrypted content"):
            await provider.complete(request(model="gpt-4o", params={"include": INCLUDE}))
        assert includes(mock) == [INCLUDE]
        assert refused == set()
    finally:
        await provider.aclose()


async def test_other_400s_are_not_retried(mock: MockProviderServer) -> None:
    refused: set[tuple[str, str]] = set()
    provider = make(mock, refused)
    mock.script(Reply.fault(400, "Unsupported parameter: 'temperature'"))
    try:
        with pytest.raises(ProviderError) as info:
            await provider.complete(request(model="o3"))
        assert not isinstance(info.value, EncryptedReasoningRefused)
        assert len(mock.requests) == 1 and refused == set()
    finally:
        await provider.aclose()


async def test_the_process_remembers_across_provider_objects(mock: MockProviderServer) -> None:
    """The worker builds a provider per model call: what one learnt, the next one knows."""
    key = (mock.openai_base_url, "o3-refuses")
    REFUSED_ENCRYPTED_REASONING.discard(key)

    def build() -> Any:
        return provider_from_settings(
            "openai_responses", openai_api_key="sk", openai_base_url=mock.openai_base_url
        )

    mock.script(REFUSAL, Reply(text="one"), Reply(text="two"))
    try:
        first = build()
        await first.complete(request(model="o3-refuses"))
        await first.aclose()
        second = build()
        await second.complete(request(model="o3-refuses"))
        await second.aclose()
        assert includes(mock) == [INCLUDE, None, None]
    finally:
        REFUSED_ENCRYPTED_REASONING.discard(key)


async def test_a_reasoning_model_replays_its_encrypted_reasoning(mock: MockProviderServer) -> None:
    """The state the include is for: the encrypted item comes back on the next turn."""
    provider = make(mock, set())
    mock.script(
        Reply(text="4", reasoning=[MockReasoning("sum", encrypted="gAAA_enc", id="rs_1")]),
        Reply(text="done"),
    )
    try:
        first = await provider.complete(request("2+2?", model="o4-mini"))
        assert isinstance(first.choice[0], Reasoning)
        history = (UserMessage("2+2?"), AssistantMessage(first.choice, first.message_id))
        await provider.complete(request("thanks", *history, model="o4-mini"))
        sent = mock.requests[1].body
        assert sent["include"] == INCLUDE
        assert sent["input"][1] == {
            "type": "reasoning",
            "id": "rs_1",
            "summary": [{"type": "summary_text", "text": "sum"}],
            "encrypted_content": "gAAA_enc",
        }
    finally:
        await provider.aclose()
