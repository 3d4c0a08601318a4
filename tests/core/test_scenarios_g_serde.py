"""§12 group G: serialisation and resumption (scenarios 63-69)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.core import (
    SCHEMA_VERSION,
    AgentRun,
    AssistantMessage,
    CallModel,
    CompletionCall,
    Continue,
    MaxTurnsError,
    PendingToolCall,
    PromptResponse,
    Repair,
    Text,
    ToolCall,
    Usage,
    UserMessage,
)
from tests.core.support import (
    C,
    R,
    T,
    expect_call_model,
    expect_call_tools,
    expect_continue,
    expect_done,
    expect_needs_resolution,
    run_to_pending_tools,
    turn,
    usage,
)

FIXTURES = Path(__file__).parent / "fixtures"


def restore(run: AgentRun) -> AgentRun:
    return AgentRun.from_json(run.to_json())


def test_s63_pending_tool_calls_survive_a_round_trip() -> None:
    run = AgentRun("add things", max_turns=2)
    original = run_to_pending_tools(run, turn(C("call_1", "add")))

    resumed = restore(run)
    del run
    assert resumed.status == "ExecutingTools"
    first = expect_call_tools(resumed)
    second = expect_call_tools(resumed)
    assert first == second == original
    assert len(first.calls) == 1
    assert first.calls[0] == PendingToolCall(C("call_1", "add"))
    assert first.calls[0].tool_call.name == "add"
    assert second.calls[0].tool_call.id == first.calls[0].tool_call.id

    resumed.tool_results([R(c.tool_call.id, "2") for c in first.calls])
    assert expect_call_model(resumed).turn == 2
    expect_continue(resumed.model_response(T("done")))
    assert expect_done(resumed).response.output == "done"


def test_s64_upstream_legacy_fixture_loads_and_resumes() -> None:
    fixture = (FIXTURES / "upstream_s64_executing_tools.json").read_text(encoding="utf-8")
    assert '"completion_calls":[{"call_index":0,"usage":null}]' in fixture
    assert "schema_version" not in fixture

    run = AgentRun.from_json(fixture)
    assert run.status == "ExecutingTools"
    assert run.max_turns == 2
    assert run.turn() == 1
    assert run.completion_calls() == (CompletionCall(call_index=0, usage=Usage()),)
    assert run.completion_calls()[0].usage == Usage()
    assert run.completion_calls()[0].raw is None
    assert run.usage() == Usage(10, 5, 15)

    # The legacy `"call_id": null` key is ignored, as upstream at the pinned commit does
    # (rig-core `legacy_call_id_key_is_ignored_not_lifted`): `id` is rig's handle and the
    # call has no provider id.
    legacy_call = ToolCall("call_1", "add", {"x": 1})
    assert run.messages() == (UserMessage("add things"), AssistantMessage([legacy_call]))

    calls = expect_call_tools(run).calls
    assert len(calls) == 1
    assert calls[0] == PendingToolCall(legacy_call)

    run.tool_results([R("call_1", "2")])
    step = expect_call_model(run)
    assert step == CallModel(
        prompt=UserMessage([R("call_1", "2")]),
        history=(UserMessage("add things"), AssistantMessage([legacy_call])),
        turn=2,
    )
    assert json.loads(run.to_json())["schema_version"] == SCHEMA_VERSION


def test_s65_exhausted_budget_survives_a_round_trip() -> None:
    run = AgentRun("add things", max_turns=1)
    run_to_pending_tools(run, turn(C("call_1", "add")))
    run.tool_results([R("call_1", "2")])

    restored = restore(run)
    assert restored.status == "PreparingRequest"
    assert len(restored.completion_calls()) == 1
    with pytest.raises(MaxTurnsError) as info:
        restored.next_step()
    assert info.value.max_turns == 1
    assert info.value.prompt == UserMessage([R("call_1", "2")])
    assert restored.turn() == 1
    assert len(restored.completion_calls()) == 1
    assert restored.status == "Failed"


def _drive_to_pending_tools() -> AgentRun:
    run = AgentRun("add things", max_turns=2)
    run_to_pending_tools(run, turn(C("call_1", "add"), usage=usage(10, 5)))
    return run


def _finish(run: AgentRun) -> PromptResponse:
    run.tool_results([R("call_1", "2")])
    expect_call_model(run)
    expect_continue(run.model_response(T("done", usage=usage(3, 4))))
    return expect_done(run).response


def test_s66_round_trip_is_transparent() -> None:
    uninterrupted_run = _drive_to_pending_tools()
    uninterrupted = _finish(uninterrupted_run)

    resumed_run = restore(_drive_to_pending_tools())
    resumed = _finish(resumed_run)

    assert resumed.output == uninterrupted.output == "done"
    assert resumed.usage == uninterrupted.usage == Usage(13, 9, 22)
    assert resumed.completion_calls == uninterrupted.completion_calls
    assert resumed.completion_calls == (
        CompletionCall(call_index=0, usage=usage(10, 5)),
        CompletionCall(call_index=1, usage=usage(3, 4)),
    )
    assert resumed.messages == uninterrupted.messages
    assert resumed.messages is not None and len(resumed.messages) == 4
    assert resumed.content == uninterrupted.content == (Text("done"),)
    assert resumed_run.to_json() == uninterrupted_run.to_json()


def test_s67_pending_resolution_survives_a_round_trip() -> None:
    run = AgentRun("call something")
    expect_call_model(run)
    context = expect_needs_resolution(run.model_response(turn(C("call_1", "unknown"))))

    restored = restore(run)
    assert restored.status == "ResolvingToolCalls"
    restored_context = restored.pending_invalid_tool_call()
    assert restored_context is not None
    assert restored_context.tool_name == context.tool_name == "unknown"
    assert len(restored_context.chat_history) == len(context.chat_history) == 2
    assert restored_context == context

    assert restored.resolve_invalid_tool_call(Repair("add")) == Continue(True)
    calls = expect_call_tools(restored).calls
    assert [(c.tool_call.id, c.tool_call.name) for c in calls] == [("call_1", "add")]


def test_s68_durable_approval_across_a_round_trip() -> None:
    run = AgentRun("pay two invoices", max_turns=3)
    assert expect_call_model(run).turn == 1
    expect_continue(run.model_response(turn(C("c1", "add"), C("c2", "add"))))
    checkpoint = run.to_json()

    resumed = AgentRun.from_json(checkpoint)
    calls = expect_call_tools(resumed).calls
    assert [c.tool_call.id for c in calls] == ["c1", "c2"]

    approved = "approved-result"
    denied = "denied by reviewer: second payment not authorized"
    resumed.tool_results([R("c1", approved), R("c2", denied)])
    after = resumed.to_json()
    assert approved in after
    assert denied in after
    assert approved not in checkpoint

    step = expect_call_model(resumed)
    assert step.turn == 2
    assert step.prompt == UserMessage([R("c1", approved), R("c2", denied)])
    expect_continue(resumed.model_response(T("done")))
    assert expect_done(resumed).response.output == "done"


def test_s69_raw_payloads_are_recorded_serialised_and_loaded() -> None:
    first_raw = {"z": 1, "a": [1, 2], "id": "resp_1"}
    third_raw = ["third", {"k": None}]
    run = AgentRun("add things", max_turns=3)
    run_to_pending_tools(run, turn(C("call_1", "add"), raw=first_raw))
    run.tool_results([R("call_1", "2")])
    expect_call_model(run)
    expect_continue(run.model_response(turn(C("call_2", "add"))))  # no raw
    expect_call_tools(run)
    run.tool_results([R("call_2", "2")])
    expect_call_model(run)
    expect_continue(run.model_response(T("done", raw=third_raw)))
    response = expect_done(run).response

    assert [c.raw for c in run.completion_calls()] == [first_raw, None, third_raw]
    assert [c.raw for c in response.completion_calls] == [first_raw, None, third_raw]

    text = run.to_json()
    doc = json.loads(text)
    calls_doc = doc["completion_calls"]
    assert calls_doc[0]["raw"] == first_raw
    assert "raw" not in calls_doc[1]
    assert calls_doc[2]["raw"] == third_raw
    assert [("raw" in c) for c in doc["state"]["Done"]["completion_calls"]] == [
        True,
        False,
        True,
    ]
    # Key order inside the provider payload is kept.
    assert '"raw":{"z":1,"a":[1,2],"id":"resp_1"}' in text

    restored = AgentRun.from_json(text)
    assert [c.raw for c in restored.completion_calls()] == [first_raw, None, third_raw]

    del calls_doc[0]["raw"]
    without = AgentRun.from_json(json.dumps(doc))
    assert [c.raw for c in without.completion_calls()] == [None, None, third_raw]
    assert "raw" not in json.loads(without.to_json())["completion_calls"][0]
