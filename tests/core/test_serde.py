"""Stored runs: one fixture per state of schema versions 1 and 2, round trips, version
handling."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.core import (
    SCHEMA_VERSION,
    AgentRun,
    CallModel,
    CallTools,
    Continue,
    Done,
    NeedsResolution,
    ProtocolViolation,
    Repair,
    StateDecodeError,
    Text,
    ToolResult,
)
from app.core.serde import UPGRADERS
from tests.core.support import T, expect_call_model, expect_call_tools, expect_done
from tests.core.v1_states import STATES

FIXTURES = Path(__file__).parent / "fixtures"


def load_fixture(state: str) -> str:
    return (FIXTURES / f"v1_{state}.json").read_text().strip()


@pytest.mark.parametrize("state", sorted(STATES))
def test_v1_fixture_loads_into_its_state(state: str) -> None:
    run = AgentRun.from_json(load_fixture(state))
    assert run.status == state


@pytest.mark.parametrize("state", sorted(STATES))
def test_newest_fixture_equals_what_this_release_writes(state: str) -> None:
    """A change to the stored shape must bump SCHEMA_VERSION and add an upgrader."""
    assert SCHEMA_VERSION == 2, "new schema: keep the v1 and v2 fixtures, add v3 ones"
    newest = (FIXTURES / f"v{SCHEMA_VERSION}_{state}.json").read_text().strip()
    assert STATES[state]().to_json() == newest


@pytest.mark.parametrize("state", sorted(STATES))
def test_round_trip_of_every_state_is_transparent(state: str) -> None:
    run = STATES[state]()
    restored = AgentRun.from_json(run.to_json())
    assert restored.to_json() == run.to_json()
    assert restored.status == run.status
    assert restored.messages() == run.messages()
    assert restored.full_history() == run.full_history()
    assert restored.usage() == run.usage()
    assert restored.completion_calls() == run.completion_calls()
    assert restored.turn() == run.turn()
    assert restored.pending_invalid_tool_call() == run.pending_invalid_tool_call()


def test_v1_resolving_fixture_continues() -> None:
    run = AgentRun.from_json(load_fixture("ResolvingToolCalls"))
    context = run.pending_invalid_tool_call()
    assert context is not None and context.tool_name == "bad"
    assert context.args == '{"x":1}'
    with pytest.raises(ProtocolViolation):
        run.next_step()
    assert run.resolve_invalid_tool_call(Repair("add")) == Continue(True)
    assert [p.tool_call.name for p in expect_call_tools(run).calls] == ["add", "add"]


def test_v1_executing_fixture_continues_to_done() -> None:
    run = AgentRun.from_json(load_fixture("ExecutingTools"))
    step = expect_call_tools(run)
    assert [p.tool_call.name for p in step.calls] == ["bad", "add"]
    assert all(p.preresolved_result is not None for p in step.calls)
    run.tool_results([p.preresolved_result for p in step.calls])  # type: ignore[misc]
    call = expect_call_model(run)
    assert call.turn == 2
    run.model_response(T("finished"))
    assert expect_done(run).response.output == "finished"


def test_v1_awaiting_model_fixture_accepts_the_answer() -> None:
    run = AgentRun.from_json(load_fixture("AwaitingModel"))
    assert run.model_response(T("hi")) is not None
    assert expect_done(run).response.output == "hi"


def test_v1_done_fixture_reemits_done() -> None:
    run = AgentRun.from_json(load_fixture("Done"))
    step = run.next_step()
    assert isinstance(step, Done)
    assert step.response.output == "the answer is 2"
    assert step.response.usage.input_tokens == 30


def test_v1_failed_fixture_stays_failed() -> None:
    run = AgentRun.from_json(load_fixture("Failed"))
    with pytest.raises(ProtocolViolation, match="already failed"):
        run.next_step()


def test_v1_preparing_fixture_emits_first_call() -> None:
    run = AgentRun.from_json(load_fixture("PreparingRequest"))
    step = run.next_step()
    assert isinstance(step, CallModel)
    assert step.turn == 1 and len(step.history) == 2


def test_v1_advance_fixture_dispatches_tools() -> None:
    run = AgentRun.from_json(load_fixture("AwaitingAdvance"))
    assert isinstance(run.next_step(), CallTools)


def test_upstream_fixture_has_no_version_and_is_upgraded() -> None:
    doc = json.loads((FIXTURES / "upstream_s64_executing_tools.json").read_text())
    assert "schema_version" not in doc
    run = AgentRun.from_json(json.dumps(doc))
    written = json.loads(run.to_json())
    assert written["schema_version"] == SCHEMA_VERSION
    call = written["state"]["ExecutingTools"][0]["tool_call"]
    # upstream (pinned commit) ignores the legacy `call_id` key: no provider id is made up
    assert call["id"] == "call_1"
    assert "provider" not in call
    assert "call_id" not in call


def test_every_older_version_has_an_upgrader() -> None:
    assert sorted(UPGRADERS) == list(range(SCHEMA_VERSION))


def test_future_schema_version_is_refused_clearly() -> None:
    doc = json.loads(load_fixture("ExecutingTools"))
    doc["schema_version"] = SCHEMA_VERSION + 1
    with pytest.raises(StateDecodeError, match="newer than this release supports"):
        AgentRun.from_json(json.dumps(doc))


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ("{not json", "not valid JSON"),
        ("[1, 2]", "must be a JSON object"),
        ('{"schema_version": 1}', "field `max_turns` is missing"),
        ('{"schema_version": "one"}', "invalid schema_version"),
        ('{"schema_version": -1}', "invalid schema_version"),
    ],
)
def test_malformed_documents_are_refused(data: str, message: str) -> None:
    with pytest.raises(StateDecodeError, match=message):
        AgentRun.from_json(data)


def test_unknown_state_is_refused() -> None:
    doc = json.loads(load_fixture("ExecutingTools"))
    doc["state"] = {"Sleeping": {}}
    with pytest.raises(StateDecodeError, match="unknown run state"):
        AgentRun.from_json(json.dumps(doc))


def test_empty_tool_call_id_is_refused() -> None:
    doc = json.loads(load_fixture("ExecutingTools"))
    doc["state"]["ExecutingTools"][0]["tool_call"]["id"] = ""
    with pytest.raises(StateDecodeError, match="empty string"):
        AgentRun.from_json(json.dumps(doc))


def test_resolution_survives_with_needs_resolution_semantics() -> None:
    run = STATES["AwaitingModel"]()
    from tests.core.support import C, turn

    outcome = run.model_response(turn(C("a", "bad1"), C("b", "bad2")))
    assert isinstance(outcome, NeedsResolution)
    restored = AgentRun.from_json(run.to_json())
    assert restored.pending_invalid_tool_call() == outcome.context


def test_values_handed_out_are_immutable() -> None:
    run = STATES["ExecutingTools"]()
    step = expect_call_tools(run)
    with pytest.raises(TypeError):
        step.calls[0].tool_call.arguments["x"] = 2
    with pytest.raises(AttributeError):
        step.calls[0].tool_call.name = "other"  # type: ignore[misc]
    assert expect_call_tools(run).calls[0].tool_call.arguments == {"x": 1}
    result = ToolResult("call_2", "add", [Text("2")])
    assert isinstance(result.content, tuple)


def test_model_turn_round_trips_through_json() -> None:
    """ModelTurn is serialisable (spec §9): sets as sorted arrays, raw kept, null raw omitted."""
    from app.core import ModelTurn, Reasoning, ToolCall, Usage
    from app.core.serde import model_turn_from, model_turn_to_dict

    turn = ModelTurn(
        (
            Reasoning.of_text("hm", signature="s"),
            Text("hi"),
            ToolCall.from_wire("c1", "add", {"x": 1}),
        ),
        Usage(3, 4, 7),
        frozenset({"add", "mul"}),
        frozenset({"add"}),
        message_id="m1",
        response_id="r1",
        finish_reason="weird",
        raw={"id": "r1"},
    )
    doc = json.loads(json.dumps(model_turn_to_dict(turn)))
    assert doc["executable_tool_names"] == ["add", "mul"]
    assert doc["finish_reason"] == {"other": "weird"}
    assert model_turn_from(doc) == turn
    bare = model_turn_to_dict(ModelTurn((Text("x"),)))
    assert "raw" not in bare and model_turn_from(bare).raw is None
