"""Model parameters at create: typed per provider, owned keys refused, `extra_body` sent
verbatim. (The tables' agreement with the SDKs is test_params_tables.py.)"""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from app.core import UserMessage
from app.providers import anthropic, openai_chat, openai_responses
from app.providers.base import ModelRequest
from app.providers.params import validate_params


def errors(provider: str, params: dict[str, Any]) -> list[tuple[tuple[Any, ...], str]]:
    with pytest.raises(ValidationError) as info:
        validate_params(provider, params)
    return [(e["loc"], e["msg"]) for e in info.value.errors()]


def first_loc(provider: str, params: dict[str, Any]) -> tuple[Any, ...]:
    return errors(provider, params)[0][0]


@pytest.mark.parametrize(
    ("provider", "params"),
    [
        ("openai", {}),
        ("openai", {"temperature": 0, "top_p": 1, "max_completion_tokens": 64, "seed": 7}),
        ("openai", {"temperature": 2, "frequency_penalty": -2.0, "presence_penalty": 2}),
        ("openai", {"stop": ["a", "b", "c", "d"], "logit_bias": {"50256": -100}}),
        ("openai", {"reasoning_effort": "low", "verbosity": "high", "temperature": None}),
        ("openai", {"response_format": {"type": "json_schema", "json_schema": {"name": "x_1"}}}),
        ("openai", {"metadata": {"k": "v"}, "user": "u1", "parallel_tool_calls": False}),
        ("openai", {"extra_body": {"top_k": 40, "repetition_penalty": 1.1}}),
        ("openai_responses", {"reasoning": {"effort": "high", "summary": "auto"}}),
        ("openai_responses", {"max_output_tokens": 256, "truncation": "auto"}),
        ("openai_responses", {"include": ["reasoning.encrypted_content"]}),
        (
            "openai_responses",
            {"text": {"format": {"type": "json_schema", "name": "out", "schema": {}}}},
        ),
        ("anthropic", {"max_tokens": 1024, "stop_sequences": ["\n\nHuman:"]}),
        ("anthropic", {"max_tokens": 8000, "thinking": {"type": "enabled", "budget_tokens": 2048}}),
        ("anthropic", {"thinking": {"type": "adaptive"}, "metadata": {"user_id": "u"}}),
        ("anthropic", {"extra_body": {"temperature": 0.3, "top_k": 5}}),
        ("scripted", {"script": [{"text": "hi"}], "delay_ms": 5, "fail_times": 1}),
        ("scripted", {"script": [{"tool_calls": [{"name": "add", "arguments": {"a": 1}}]}]}),
    ],
)
def test_documented_parameters_pass(provider: str, params: dict[str, Any]) -> None:
    validate_params(provider, params)


@pytest.mark.parametrize(
    ("provider", "params", "loc"),
    [
        # a string where a number belongs, and numbers outside their documented ranges
        ("openai", {"temperature": "0.5"}, ("temperature",)),
        ("openai", {"temperature": True}, ("temperature",)),
        ("openai", {"temperature": 2.01}, ("temperature",)),
        ("openai", {"top_p": -0.1}, ("top_p",)),
        ("openai", {"frequency_penalty": 2.5}, ("frequency_penalty",)),
        ("openai", {"max_tokens": 1.5}, ("max_tokens",)),
        ("openai", {"max_completion_tokens": 0}, ("max_completion_tokens",)),
        ("openai", {"top_logprobs": 21}, ("top_logprobs",)),
        ("openai", {"logit_bias": {"1": 101}}, ("logit_bias", "1")),
        ("openai", {"stop": ["a", "b", "c", "d", "e"]}, ("stop",)),
        ("openai", {"metadata": {"k": 1}}, ("metadata", "k")),
        ("openai", {"reasoning_effort": "extreme"}, ("reasoning_effort",)),
        ("openai", {"parallel_tool_calls": "yes"}, ("parallel_tool_calls",)),
        ("openai", {"response_format": {"type": "yaml"}}, ("response_format",)),
        (
            "openai",
            {"response_format": {"type": "json_schema", "json_schema": {}}},
            ("response_format", "json_schema", "name"),
        ),
        ("openai_responses", {"reasoning": {"effort": "hard"}}, ("reasoning", "effort")),
        ("openai_responses", {"temperature": -1}, ("temperature",)),
        ("openai_responses", {"include": ["everything"]}, ("include", 0)),
        ("anthropic", {"max_tokens": "1024"}, ("max_tokens",)),
        ("anthropic", {"max_tokens": -1}, ("max_tokens",)),
        ("anthropic", {"thinking": {"type": "enabled"}}, ("thinking", "budget_tokens")),
        (
            "anthropic",
            {"thinking": {"type": "enabled", "budget_tokens": 512}},
            ("thinking", "budget_tokens"),
        ),
        (
            "anthropic",
            {"thinking": {"type": "enabled", "budget_tokens": 4096}},  # not below 4096
            ("thinking", "budget_tokens"),
        ),
        ("anthropic", {"stop_sequences": "STOP"}, ("stop_sequences",)),
        ("scripted", {"fail_times": "2"}, ("fail_times",)),
        ("scripted", {"script": [{"txt": "hi"}]}, ("script", 0, "txt")),
        ("scripted", {"script": [{"tool_calls": [{"arguments": {}}]}]}, ("script", 0)),
    ],
)
def test_wrong_types_and_ranges_name_the_field(
    provider: str, params: dict[str, Any], loc: tuple[Any, ...]
) -> None:
    assert first_loc(provider, params)[: len(loc)] == loc


@pytest.mark.parametrize(
    ("provider", "key"),
    [
        ("openai", "temprature"),  # a typo
        ("openai", "top_k"),  # another provider's (and not Chat Completions')
        ("openai", "max_output_tokens"),  # the Responses API's, not Chat Completions'
        ("openai_responses", "max_tokens"),
        ("anthropic", "temperature"),  # no longer a Messages parameter in the SDK
        ("anthropic", "response_format"),
    ],
)
def test_unknown_parameters_are_refused_and_point_at_extra_body(provider: str, key: str) -> None:
    [(loc, message)] = errors(provider, {key: 1})
    assert loc == (key,)
    assert "not a documented parameter" in message and "extra_body" in message


@pytest.mark.parametrize(
    ("provider", "key", "why"),
    [
        ("openai", "messages", "prompt and history"),
        ("openai", "model", "model.name"),
        ("openai", "tools", "tools"),
        ("openai", "stream", "stream"),
        ("openai", "n", "one choice"),
        ("openai", "functions", "tools"),
        ("openai_responses", "input", "prompt and history"),
        ("openai_responses", "instructions", "preamble"),
        ("openai_responses", "previous_response_id", "stateless"),
        ("openai_responses", "store", "no state"),
        ("anthropic", "system", "preamble"),
        ("anthropic", "tool_choice", "tool_choice"),
    ],
)
def test_keys_the_adapter_owns_are_refused_with_the_reason(
    provider: str, key: str, why: str
) -> None:
    [(loc, message)] = errors(provider, {key: None})
    assert loc == (key,)
    assert message.startswith("set by the service") and why in message
    [(loc, message)] = errors(provider, {"extra_body": {key: None}})
    assert loc == ("extra_body", key) and why in message


def test_extra_body_is_an_object_given_once_per_key() -> None:
    assert errors("openai", {"extra_body": ["top_k"]}) == [
        (("extra_body",), "must be a JSON object")
    ]
    [(loc, message)] = errors("openai", {"temperature": 1, "extra_body": {"temperature": 0.5}})
    assert loc == ("extra_body", "temperature") and "give it once" in message
    # the scripted provider has no request body
    assert first_loc("scripted", {"extra_body": {}}) == ("extra_body",)


def test_every_problem_is_reported_not_only_the_first() -> None:
    found = errors("openai", {"temperature": 9, "bogus": 1, "messages": []})
    assert sorted(loc for loc, _ in found) == [("bogus",), ("messages",), ("temperature",)]


# --- the codecs send extra_body verbatim -------------------------------------------------


def request(params: dict[str, Any]) -> ModelRequest:
    return ModelRequest(model="m", prompt=UserMessage("hi"), params=params)


ENCODERS = {
    "openai": openai_chat.encode_request,
    "openai_responses": openai_responses.encode_request,
    "anthropic": anthropic.encode_request,
}


@pytest.mark.parametrize("wire", sorted(ENCODERS))
def test_extra_body_is_merged_verbatim_into_the_request(wire: str) -> None:
    extra = {"top_k": 40, "vendor_option": {"nested": [1, 2]}}
    body = ENCODERS[wire](request({"extra_body": extra}))
    assert body["top_k"] == 40 and body["vendor_option"] == {"nested": [1, 2]}
    assert "extra_body" not in body
    assert body["model"] == "m"


@pytest.mark.parametrize("wire", sorted(ENCODERS))
def test_extra_body_never_overrides_what_the_codec_owns(wire: str) -> None:
    """Runs stored before validation existed may hold anything; the codec still wins."""
    hostile = {"model": "evil", "messages": [], "input": [], "stream": True, "tools": []}
    body = ENCODERS[wire](request({"extra_body": hostile}))
    clean = ENCODERS[wire](request({}))
    assert body == clean


@pytest.mark.parametrize("wire", sorted(ENCODERS))
def test_parameters_of_runs_stored_before_validation_are_still_sent(wire: str) -> None:
    body = ENCODERS[wire](request({"legacy_knob": 3, "extra_body": "not an object"}))
    assert body["legacy_knob"] == 3 and body["extra_body"] == "not an object"
