"""The tool registry: definitions from signatures and docstrings, validation before the
call, errors as results, timeouts, concurrency limits, the call id handed over."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Annotated, Literal

import pytest
from pydantic import BaseModel, Field

from agentrun_client import ToolCall, ToolCallContext, ToolRegistry


class Address(BaseModel):
    city: str
    zip: str | None = None


def make_registry() -> ToolRegistry:
    registry = ToolRegistry()

    @registry.tool
    def add(a: float, b: float = 1.0) -> float:
        """Add two numbers.

        Args:
            a: the first addend
            b: the second addend,
                one by default
        """
        return a + b

    @registry.tool(name="ship", description="Ship a parcel.")
    async def ship_parcel(
        to: Address,
        speed: Literal["slow", "fast"],
        weight: Annotated[int, Field(gt=0, description="grams")],
        ctx: ToolCallContext,
    ) -> dict[str, object]:
        return {"city": to.city, "speed": speed, "weight": weight, "key": ctx.call_id}

    return registry


def call(name: str, arguments: object, call_id: str = "call_1") -> ToolCall:
    return ToolCall(id=call_id, name=name, arguments=arguments)


def test_definitions_come_from_signature_hints_and_docstring() -> None:
    add, ship = make_registry().definitions()
    assert add["name"] == "add" and add["description"] == "Add two numbers."
    params = add["parameters"]
    assert params["type"] == "object" and params["required"] == ["a"]
    assert params["properties"]["a"]["type"] == "number"
    assert params["properties"]["a"]["description"] == "the first addend"
    assert params["properties"]["b"]["description"] == "the second addend, one by default"
    assert params["additionalProperties"] is False
    assert ship["name"] == "ship" and ship["description"] == "Ship a parcel."
    props = ship["parameters"]["properties"]
    assert set(props) == {"to", "speed", "weight"}, "the context is not an argument"
    assert props["speed"]["enum"] == ["slow", "fast"]
    assert props["weight"]["exclusiveMinimum"] == 0 and props["weight"]["description"] == "grams"
    assert "Address" in ship["parameters"]["$defs"]


async def test_valid_calls_are_validated_into_the_hinted_types() -> None:
    registry = make_registry()
    result = await registry.execute(call("add", {"a": "2", "b": 3}), run_id="run_1")
    assert (result.tool_call_id, result.output, result.is_error) == ("call_1", 5.0, False)
    shipped = await registry.execute(
        call("ship", {"to": {"city": "Oslo"}, "speed": "fast", "weight": 5}, "call_9"),
        run_id="run_1",
    )
    assert shipped.output == {"city": "Oslo", "speed": "fast", "weight": 5, "key": "call_9"}


@pytest.mark.parametrize(
    ("name", "arguments", "message"),
    [
        ("add", {"a": "x"}, "Invalid arguments for tool 'add': a: Input should be a valid number"),
        ("add", {}, "a: Field required"),
        ("add", {"a": 1, "c": 2}, "c: Extra inputs are not permitted"),
        ("add", "{not json", "the arguments are not a JSON object"),
        ("ship", {"to": {}, "speed": "warp", "weight": 0}, "to.city: Field required"),
        ("nope", {}, "Unknown tool 'nope'; the tools are: add, ship"),
    ],
)
async def test_invalid_calls_become_error_results(
    name: str, arguments: object, message: str
) -> None:
    result = await make_registry().execute(call(name, arguments), run_id="run_1")
    assert result.is_error and message in result.output


async def test_exceptions_and_timeouts_become_error_results() -> None:
    registry = ToolRegistry(timeout=0.05)
    never = asyncio.Event()

    @registry.tool
    def boom() -> str:
        raise ValueError("no such order")

    @registry.tool
    async def hang() -> str:
        await never.wait()
        return "unreachable"

    @registry.tool
    def opaque() -> object:
        return object()

    failed, timed_out, odd = await registry.execute_all(
        [call("boom", {}, "c1"), call("hang", {}, "c2"), call("opaque", None, "c3")], run_id="r"
    )
    assert failed.is_error and failed.output == "Tool 'boom' failed: ValueError: no such order"
    assert timed_out.is_error and timed_out.output == "Tool 'hang' timed out after 0.05 s"
    assert odd.is_error and "not JSON" in odd.output


async def test_concurrency_limits_hold() -> None:
    registry = ToolRegistry(max_concurrency=3)
    running = 0
    peaks: dict[str, int] = {"one": 0, "any": 0}

    async def busy(kind: str) -> None:
        nonlocal running
        running += 1
        peaks[kind] = max(peaks[kind], running)
        for _ in range(5):  # let every other call that may start, start
            await asyncio.sleep(0)
        running -= 1

    @registry.tool(max_concurrency=1)
    async def one() -> None:
        await busy("one")

    @registry.tool
    async def anything() -> None:
        await busy("any")

    await registry.execute_all([call("one", {}, f"a{i}") for i in range(4)], run_id="r")
    await registry.execute_all([call("anything", {}, f"b{i}") for i in range(6)], run_id="r")
    assert peaks == {"one": 1, "any": 3}


async def test_sync_tools_run_in_threads_and_get_the_call_id() -> None:
    registry = ToolRegistry()
    seen: list[tuple[str, bool]] = []

    @registry.tool
    def record(ctx: ToolCallContext | None = None) -> str:
        assert ctx is not None
        seen.append((ctx.call_id, threading.current_thread() is threading.main_thread()))
        return ctx.run_id

    result = await registry.execute(call("record", {}, "call_7"), run_id="run_5")
    assert result.output == "run_5" and seen == [("call_7", False)]


def test_registration_refusals() -> None:
    registry = make_registry()
    with pytest.raises(ValueError, match="already registered"):
        registry.add(lambda: None, name="add")
    with pytest.raises(ValueError, match="tool names"):
        registry.add(lambda: None, name="has space")
    with pytest.raises(TypeError, match=r"\*args"):
        registry.add(lambda *a: None, name="star")
    assert "add" in registry and len(registry) == 2 and registry.get("ship") is not None


async def test_parameters_may_bear_names_pydantic_models_use() -> None:
    registry = ToolRegistry()

    @registry.tool
    def query(json: str, model_name: str = "m", schema: int = 1) -> str:
        return f"{json}/{model_name}/{schema}"

    [definition] = registry.definitions()
    assert list(definition["parameters"]["properties"]) == ["json", "model_name", "schema"]
    result = await registry.execute(call("query", {"json": "j", "schema": 2}), run_id="r")
    assert result.output == "j/m/2"


def test_a_timed_out_sync_tool_holds_neither_its_event_loop_nor_the_caller() -> None:
    """`asyncio.run` (so `AsyncClient.run` in a program) returns at the timeout: the
    function's thread is a daemon of its own, not one of the loop's executor, whose threads
    the loop's close waits for."""
    release = threading.Event()
    registry = ToolRegistry()

    @registry.tool(timeout=0.2)
    def stuck() -> None:
        release.wait(10)

    started = time.monotonic()
    try:
        result = asyncio.run(registry.execute(call("stuck", {}), run_id="run_1"))
        took = time.monotonic() - started
    finally:
        release.set()
    assert result.is_error and result.output == "Tool 'stuck' timed out after 0.2 s"
    assert took < 5, f"asyncio.run returned after {took:.1f} s"


async def test_an_output_that_cannot_be_sent_becomes_an_error_result() -> None:
    """Text with a lone surrogate cannot be submitted (JSON in UTF-8): the model reads why,
    instead of the executor failing at the submission."""
    registry = ToolRegistry()

    @registry.tool
    def broken() -> dict[str, str]:
        return {"text": "half a pair: \ud83d"}

    result = await registry.execute(call("broken", {}), run_id="run_1")
    assert result.is_error
    assert result.output == (
        "Tool 'broken' returned text that cannot be sent: the output.text holds a lone "
        "surrogate '\\ud83d' at index 13, which is not Unicode text"
    )
