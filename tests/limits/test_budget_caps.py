"""The budget check's pure parts: where each provider takes its output cap and how it is
clamped, the input estimate, the check's verdicts, and the price book."""

from __future__ import annotations

from app.clock import SYSTEM_CLOCK
from app.core import Image, Text, UserMessage
from app.limits.budgets import IMAGE_TOKENS, TOOLS_OVERHEAD, cap_param, clamped, input_estimate
from app.limits.rules import Allowance, Ceiling, Spent, check
from app.providers.base import ModelRequest, ToolSpec
from app.service.prices import CONFIG_SOURCE, GENAI_PRICES_SOURCE, PriceBook
from app.store.waiting import Budget


def test_each_provider_is_clamped_where_it_takes_its_cap() -> None:
    assert clamped("openai", {}, 100, 4096) == {"max_completion_tokens": 100}
    assert clamped("openai", {"max_tokens": 50}, 100, 4096) == {"max_tokens": 50}
    assert clamped("openai", {"max_completion_tokens": 900}, 100, 4096) == {
        "max_completion_tokens": 100
    }
    assert clamped("openai", {}, 10**9, 4096) == {"max_completion_tokens": 4096}
    assert clamped("openai_responses", {}, 300, 4096) == {"max_output_tokens": 300}
    assert clamped("anthropic", {}, 10**6, 4096) == {"max_tokens": 4096}  # (its default)
    thinking = {"type": "enabled", "budget_tokens": 2000}
    assert clamped("anthropic", {"max_tokens": 8000, "thinking": thinking}, 1500, 4096) == {
        "max_tokens": 1500,
        "thinking": {"type": "enabled", "budget_tokens": 1499},
    }
    assert clamped("scripted", {"script": []}, 7, 4096) == {"script": [], "max_tokens": 7}
    responses = cap_param("openai_responses", {})
    anthropic = cap_param("anthropic", {"thinking": thinking})
    assert responses is not None and responses.least == 16
    assert anthropic is not None and anthropic.least == 1025


def test_the_input_estimate_bounds_the_tokens_from_above() -> None:
    text = "ünïcödé " * 100  # 1300 UTF-8 bytes: never fewer tokens than that could hold
    plain = ModelRequest(model="m", prompt=UserMessage((Text(text),)))
    assert input_estimate(plain) >= len(text.encode())
    tooled = ModelRequest(model="m", prompt=plain.prompt, tools=(ToolSpec("add"),))
    assert input_estimate(tooled) > input_estimate(plain) + TOOLS_OVERHEAD
    image = ModelRequest(
        model="m", prompt=UserMessage((Text("see"), Image("https://example.com/a.png")))
    )
    assert IMAGE_TOKENS <= input_estimate(image) < IMAGE_TOKENS + 200


def test_the_input_estimate_counts_the_parameters_billed_as_input() -> None:
    """A structured-output schema is sent (and billed) as input; the scripted model's
    script is not sent anywhere."""
    prompt = UserMessage((Text("hi"),))
    schema = {
        "type": "object",
        "properties": {f"field_{i}": {"type": "string"} for i in range(500)},
    }
    response_format = {"type": "json_schema", "json_schema": {"name": "x", "schema": schema}}
    plain = ModelRequest(model="gpt-4o", prompt=prompt)
    shaped = ModelRequest(
        model="gpt-4o", prompt=prompt, params={"response_format": response_format}
    )
    size = len(str(schema).encode())
    assert input_estimate(shaped, "openai") >= input_estimate(plain, "openai") + size // 2
    script = {"script": [{"text": "x" * 10_000}]}
    scripted = ModelRequest(model="demo", prompt=prompt, params=script)
    assert input_estimate(scripted, "scripted") < input_estimate(plain, "scripted") + 100


def test_the_check_names_the_first_limit_the_call_cannot_fit() -> None:
    price = PriceBook({"p:m": {"input": 1.0, "output": 2.0}}, clock=SYSTEM_CLOCK).of("p", "m")
    assert price is not None and price.source == CONFIG_SOURCE
    run = Spent(tokens=900, cost_usd=0.001, calls=2, seconds=5)
    tokens = Ceiling("max_total_tokens", "run", 1000)
    assert check([(tokens, run)], 50, price) == Allowance(50)
    assert check([(tokens, run)], 100, price) == Budget("max_total_tokens", 900, 1000, "run", 1001)
    cost = Ceiling("max_cost_usd", "run", 0.002)
    allowed = check([(cost, run)], 100, price)  # 0.001 left - 0.0001 of input = 449 tokens
    assert isinstance(allowed, Allowance) and allowed.cap is not None and 440 < allowed.cap < 450
    assert price.cost(100, allowed.cap) + 0.001 <= 0.002
    unpriced = check([(cost, run)], 100, None)
    assert isinstance(unpriced, Budget) and unpriced.needed is None
    calls = Ceiling("max_model_calls", "run", 2)
    assert check([(calls, run)], 1, price) == Budget("max_model_calls", 2, 2, "run", 3)
    both = check([(tokens, run), (cost, run)], 10, price)
    assert both == Allowance(90)  # (the tighter of the two)


def test_the_price_book_knows_the_providers_models_and_not_the_others() -> None:
    book = PriceBook({}, clock=SYSTEM_CLOCK)
    mini = book.of("openai", "gpt-4o-mini")
    assert mini is not None and mini.source == GENAI_PRICES_SOURCE
    assert abs(mini.cost(1_000_000, 0) - 0.15) < 1e-9
    assert book.of("anthropic", "claude-3-5-haiku-latest") is not None
    assert book.of("openai_responses", "gpt-4.1") is not None
    assert book.of("openai", "no-such-model") is None
    assert book.of("scripted", "demo") is None
    # an OpenAI-compatible server of nobody's is not priced as OpenAI
    assert (
        PriceBook({}, {"openai": "http://127.0.0.1:9999/v1"}, clock=SYSTEM_CLOCK).of(
            "openai", "gpt-4o"
        )
        is None
    )
    overridden = PriceBook({"openai:gpt-4o-mini": {"input": 1.0}}, clock=SYSTEM_CLOCK).of(
        "openai", "gpt-4o-mini"
    )
    assert overridden is not None and overridden.source == CONFIG_SOURCE
