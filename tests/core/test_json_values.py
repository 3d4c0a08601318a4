"""The core's one rule for JSON values (app.core.jsonvalue), checked wherever values enter.

Everything a run accepts, `to_json` writes and `from_json` reads back; everything else is an
`InvalidJsonValue` (a ValueError) at construction, before a run is touched.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from enum import IntEnum
from typing import Any

import pytest

from app.core import (
    MAX_JSON_DEPTH,
    MAX_JSON_INT,
    MIN_JSON_INT,
    AgentRun,
    CompletionCall,
    CompletionIdentity,
    Image,
    InvalidJsonValue,
    Json,
    ModelTurn,
    Text,
    ToolCall,
    ToolResult,
    Usage,
)
from app.core.jsonvalue import FrozenDict, FrozenList, freeze
from tests.core.support import C, expect_call_model, expect_call_tools, run_to_pending_tools, turn


def nested(depth: int, leaf: Any = 1) -> Any:
    """A value with `depth` levels of arrays/objects, alternating."""
    value = leaf
    for level in range(depth):
        value = [value] if level % 2 else {"k": value}
    return value


#: Every place a JSON value enters the core, as a function of the value.
ENTRY_POINTS: dict[str, Callable[[Any], object]] = {
    "ToolCall.arguments": lambda v: ToolCall("c1", "add", v),
    "ToolCall.additional_params": lambda v: ToolCall("c1", "add", {}, additional_params=v),
    "Json.value": lambda v: Json(v),
    "Text.additional_params": lambda v: Text("t", {"k": v}),
    "Image.additional_params": lambda v: Image("data", additional_params={"k": v}),
    "ModelTurn.raw": lambda v: ModelTurn((), raw=v),
    "CompletionCall.raw": lambda v: CompletionCall(0, raw=v),
    "AgentRun.output_schema": lambda v: AgentRun("q", output_schema=v),
}

REFUSED: dict[str, tuple[Any, str]] = {
    "integer above u64": (MAX_JSON_INT + 1, "outside the 64-bit range"),
    "integer below i64": (MIN_JSON_INT - 1, "outside the 64-bit range"),
    "NaN": (float("nan"), "not a JSON number"),
    "Infinity": (float("inf"), "not a JSON number"),
    "-Infinity": (float("-inf"), "not a JSON number"),
    "too deep": (nested(MAX_JSON_DEPTH + 1), f"nested deeper than {MAX_JSON_DEPTH} levels"),
    "a cycle": (None, f"nested deeper than {MAX_JSON_DEPTH} levels"),  # built below
    "non-string key": ({1: "one"}, "object keys must be strings"),
    "bytes": (b"x", "type bytes is not JSON"),
    "a set": ({1, 2}, "type set is not JSON"),
    "an object": (object(), "type object is not JSON"),
    "lone surrogate": ("\ud800", "lone surrogate"),
    "lone surrogate key": ({"\udfff": 1}, "lone surrogate"),
}


def refused_value(case: str) -> Any:
    if case == "a cycle":
        cycle: list[Any] = []
        cycle.append(cycle)
        return cycle
    return REFUSED[case][0]


@pytest.mark.parametrize("entry", sorted(ENTRY_POINTS))
@pytest.mark.parametrize("case", sorted(REFUSED))
def test_values_outside_the_rule_are_refused_where_they_enter(entry: str, case: str) -> None:
    with pytest.raises(InvalidJsonValue, match=REFUSED[case][1]) as info:
        ENTRY_POINTS[entry](refused_value(case))
    assert isinstance(info.value, ValueError)
    assert str(info.value).startswith(entry)


#: Values at the edges of the rule, all accepted.
EDGES: dict[str, Any] = {
    "u64 max": MAX_JSON_INT,
    "i64 min": MIN_JSON_INT,
    "largest float": 1.7976931348623157e308,
    "negative zero": -0.0,
    "exactly the depth limit": nested(MAX_JSON_DEPTH),
    "non-ASCII text and keys": {"clé": "日本語 ✓ \U0001f600"},
    "empty containers": {"a": [], "b": {}},
    "scalars": [None, True, False, 0, 1.5, ""],
}


@pytest.mark.parametrize("case", sorted(EDGES))
def test_values_at_the_edges_are_held_and_survive_a_round_trip(case: str) -> None:
    value = EDGES[case]
    run = AgentRun("q", max_turns=2, output_schema=value)
    run_to_pending_tools(run, turn(C("c1", "add", value), raw=value))
    run.tool_results([ToolResult("c1", "add", (Json(value),))])
    expect_call_model(run)
    data = run.to_json()  # never raises for what the run accepted
    restored = AgentRun.from_json(data)
    assert restored.to_json() == data
    assert restored.messages() == run.messages()
    assert restored.completion_calls()[0].raw == value
    assert json.loads(data)["output_schema"] == value


def test_the_depth_limit_counts_containers_and_includes_frozen_parts() -> None:
    inner = freeze(nested(MAX_JSON_DEPTH - 1))
    assert isinstance(inner, FrozenDict | FrozenList)
    freeze([inner])  # one more level: exactly the limit
    with pytest.raises(InvalidJsonValue, match="nested deeper"):
        freeze([[inner]])  # a frozen value nested deeper is not waved through
    with pytest.raises(InvalidJsonValue, match="nested deeper"):
        ToolCall("c1", "add", {"a": {"b": inner}})


def test_the_error_names_where_in_the_value_the_problem_is() -> None:
    with pytest.raises(InvalidJsonValue) as info:
        ToolCall("c1", "add", {"a": [1, {"b": float("nan")}]})
    assert str(info.value) == 'ToolCall.arguments["a"][1]["b"]: nan is not a JSON number'


def test_subclasses_are_held_as_plain_json() -> None:
    class Level(IntEnum):
        HIGH = 3

    class Name(str):
        pass

    call = ToolCall("c1", "add", {Name("k"): [Level.HIGH, Name("v")]})
    assert call.arguments == {"k": [3, "v"]}
    assert type(call.arguments["k"][0]) is int
    assert type(call.arguments["k"][1]) is str


def test_held_values_are_frozen_and_refreezing_is_free() -> None:
    call = ToolCall("c1", "add", {"x": [1, 2]})
    assert freeze(call.arguments) is call.arguments
    with pytest.raises(TypeError, match="immutable"):
        call.arguments["x"].append(3)


def test_a_refused_raw_payload_leaves_the_streamed_run_unchanged() -> None:
    run = AgentRun("q")
    expect_call_model(run)
    before = run.to_json()
    with pytest.raises(InvalidJsonValue):
        run.record_streamed_completion_call(Usage(1, 1, 2), CompletionIdentity(), None, {1: 2})
    assert run.to_json() == before
    # the record is still possible, exactly once
    run.record_streamed_completion_call(Usage(1, 1, 2), CompletionIdentity(), None, {"ok": 1})
    assert len(run.completion_calls()) == 1


def test_results_with_refused_values_never_reach_a_run() -> None:
    run = AgentRun("q", max_turns=2)
    run_to_pending_tools(run, turn(C("c1")))
    before = run.to_json()
    with pytest.raises(InvalidJsonValue):
        run.tool_results([ToolResult("c1", "add", (Json(float("nan")),))])
    assert run.to_json() == before
    assert expect_call_tools(run).calls[0].tool_call.id == "c1"


def test_output_schema_is_checked_at_construction() -> None:
    with pytest.raises(InvalidJsonValue, match=r"AgentRun.output_schema\["):
        AgentRun("q", output_schema={"required": [float("inf")]})
    assert AgentRun("q", output_schema={"required": ["a"]}).to_json()
