"""§12 group H: the streamed path (scenarios 70-81; behaviour spec §1.4, §3.4, §6.6, §11)."""

from __future__ import annotations

import json

import pytest

from app.core import (
    TOOL_NOT_EXECUTED_DUE_TO_INVALID_PEER,
    AgentRun,
    AssistantMessage,
    CompletionCall,
    CompletionIdentity,
    Fail,
    InvalidToolCallContext,
    MaxTurnsError,
    PendingToolCall,
    PromptCancelled,
    ProtocolViolation,
    Reasoning,
    Repair,
    Retry,
    Skip,
    Stop,
    Text,
    ToolCall,
    ToolChoice,
    ToolResult,
    UnknownToolCall,
    Usage,
    UserMessage,
)
from app.core.midstream import PartialStreamedTurn, Repaired, TurnAbandoned
from tests.core.support import (
    PV_PREFIX,
    C,
    R,
    T,
    expect_call_model,
    expect_call_tools,
    expect_done,
    expect_needs_resolution,
    expect_violation,
    invalid_call,
    streamed,
    turn,
)

TNE = TOOL_NOT_EXECUTED_DUE_TO_INVALID_PEER
PV_FAILED = PV_PREFIX + "next_step called after the run already failed or was misdriven"
PV_RECORD_NO_CALL = (
    "record_streamed_completion_call called without a pending or rolled-back CallModel step"
)
PV_RECORD_TWICE = "record_streamed_completion_call called twice for the same model turn"
PV_MIXED = (
    "model_response called after record_streamed_completion_call for the same turn; "
    "feed streamed turns via streamed_turn"
)
PV_RESOLVE_STREAMED = "resolve_streamed_invalid_tool_call called without a pending CallModel step"
PV_STREAMED_TURN = "streamed_turn called without a pending CallModel step"

USAGE_5_7 = Usage(input_tokens=5, output_tokens=7, total_tokens=12)


def _state(run: AgentRun) -> dict[str, object]:
    doc = json.loads(run.to_json())
    assert isinstance(doc, dict)
    return doc


# --- 70 ------------------------------------------------------------------------------------


@pytest.mark.parametrize("second_record", ["explicit", "fallback"])
def test_s70_streamed_round_trip(second_record: str) -> None:
    run = AgentRun("add things", max_turns=2)
    first = expect_call_model(run)
    assert first.turn == 1 and first.prompt == UserMessage("add things")

    identity = CompletionIdentity("msg_1", "resp_1", "req_1")
    recorded = run.record_streamed_completion_call(USAGE_5_7, identity, "tool_calls", {"n": 1})
    assert recorded == CompletionCall(
        0, USAGE_5_7, "msg_1", "resp_1", "req_1", "tool_calls", {"n": 1}
    )
    assert run.status == "AwaitingModel"

    call = C("tc_1", "add")
    run.streamed_turn(
        streamed(
            call,
            message_id="msg_1",
            internal_call_ids=[("tc_1", "internal_tc_1")],
            finish_reason="tool_calls",
        )
    )
    assert run.status == "AwaitingAdvance"
    assert len(run.completion_calls()) == 1  # no second record by streamed_turn

    step = expect_call_tools(run)
    assert step.calls == (PendingToolCall(call, None, "internal_tc_1"),)
    assert step.calls[0].internal_call_id == "internal_tc_1"
    run.tool_results([R("tc_1")])

    second = expect_call_model(run)
    assert second.turn == 2
    assert second.prompt == UserMessage([R("tc_1")])
    if second_record == "explicit":
        run.record_streamed_completion_call(Usage())
    run.streamed_turn(streamed(Text("done"), finish_reason="stop"))

    response = expect_done(run).response
    assert response.output == "done"
    assert response.usage == USAGE_5_7
    assert run.usage() == USAGE_5_7
    assert len(response.completion_calls) == 2
    assert response.completion_calls[0].usage == USAGE_5_7
    # An explicit record carries what the driver passed; the fallback takes the turn's
    # message id and finish reason, with zero usage and null raw.
    reason = None if second_record == "explicit" else "stop"
    assert response.completion_calls[1] == CompletionCall(1, Usage(), None, None, None, reason)
    assert response.messages is not None and len(response.messages) == 4
    assert response.messages == (
        UserMessage("add things"),
        AssistantMessage([call], "msg_1"),
        UserMessage([R("tc_1")]),
        AssistantMessage([Text("done")]),
    )
    assert run.is_done() and run.status == "Done"


# --- 71 ------------------------------------------------------------------------------------


def test_s71_streamed_retry_rolls_back_with_the_partial_turn() -> None:
    run = AgentRun("use the tool", max_turns=2, max_invalid_tool_call_retries=1)
    expect_call_model(run)

    bad = C("tc_1", "default_api")
    partial = PartialStreamedTurn(message_id="msg_1", text="thinking ")
    invalid = invalid_call(bad)
    partial_message = AssistantMessage([Text("thinking "), bad], "msg_1")

    context = run._streamed_invalid_tool_call_context(partial, invalid)
    assert context == InvalidToolCallContext(
        tool_name="default_api",
        tool_call_id="tc_1",
        internal_call_id="internal_tc_1",
        args='{"x":1}',
        available_tools=("add",),
        allowed_tools=("add",),
        tool_choice=None,
        chat_history=(UserMessage("use the tool"), partial_message),
        is_streaming=True,
    )
    assert run.status == "AwaitingModel"  # the context query is pure
    assert run.messages() == (UserMessage("use the tool"),)

    resolution = run._resolve_streamed_invalid_tool_call(partial, invalid, Retry("use add instead"))
    assert resolution == TurnAbandoned(None)
    assert run.status == "PreparingRequest"
    assert _state(run)["rollback_pending"] is True
    assert _state(run)["invalid_tool_call_retries"] == 1

    # The abandoned stream's usage is recorded after the rollback.
    run.record_streamed_completion_call(USAGE_5_7, CompletionIdentity("msg_1"))
    assert len(run.completion_calls()) == 1
    assert run.usage() == USAGE_5_7

    retry_message = UserMessage(
        [ToolResult("tc_1", "default_api", (Text("use add instead"),), "tc_1", is_error=True)]
    )
    assert run.messages() == (UserMessage("use the tool"), partial_message, retry_message)
    assert len(run.messages()) == 3

    step = expect_call_model(run)
    assert step.turn == 2
    assert step.prompt == retry_message
    assert step.history == run.messages()[:2]
    assert _state(run)["rollback_pending"] is False

    # The run-wide retry budget (1) is spent: a second streamed Retry fails.
    with pytest.raises(UnknownToolCall) as info:
        run._resolve_streamed_invalid_tool_call(
            PartialStreamedTurn(), invalid_call(C("tc_2", "default_api")), Retry("again")
        )
    assert info.value.tool_name == "default_api"
    assert run.status == "Failed"


# --- 72 ------------------------------------------------------------------------------------


def test_s72_streamed_stop_cancels_and_is_terminal() -> None:
    run = AgentRun("use the tool")
    expect_call_model(run)
    bad = C("tc_1", "default_api")
    partial = PartialStreamedTurn(message_id="msg_1")

    with pytest.raises(PromptCancelled) as info:
        run._resolve_streamed_invalid_tool_call(partial, invalid_call(bad), Stop("operator stop"))
    err = info.value
    assert not isinstance(err, ProtocolViolation)
    assert err.reason == "operator stop"
    assert str(err) == "PromptCancelled: operator stop"
    assert err.chat_history == (UserMessage("use the tool"), AssistantMessage([bad], "msg_1"))
    assert run.status == "Failed"
    assert run.messages() == (UserMessage("use the tool"),)

    with pytest.raises(ProtocolViolation) as info2:
        run.next_step()
    assert info2.value.reason == PV_FAILED
    expect_violation(run, lambda: run.record_streamed_completion_call(Usage()), PV_RECORD_NO_CALL)
    expect_violation(run, lambda: run.streamed_turn(streamed(Text("x"))), PV_STREAMED_TURN)
    assert run.status == "Failed"


# --- 73 ------------------------------------------------------------------------------------


def test_s73_streamed_retry_cannot_emit_a_call_past_the_budget() -> None:
    run = AgentRun("use the tool", max_turns=1, max_invalid_tool_call_retries=1)
    expect_call_model(run)
    partial = PartialStreamedTurn(message_id="msg_1")

    resolution = run._resolve_streamed_invalid_tool_call(
        partial, invalid_call(C("tc_1", "default_api")), Retry("use add instead")
    )
    assert resolution == TurnAbandoned(None)
    run.record_streamed_completion_call(Usage())
    assert len(run.completion_calls()) == 1

    with pytest.raises(MaxTurnsError) as info:
        run.next_step()
    err = info.value
    assert err.max_turns == 1
    assert str(err) == "MaxTurnsError: reached max turns limit: 1"
    assert err.prompt == run.messages()[-1]
    assert err.chat_history == run.full_history()
    assert run.turn() == 1
    assert len(run.completion_calls()) == 1
    assert run.status == "Failed"


# --- 74 ------------------------------------------------------------------------------------


def test_s74_streamed_skip_abandons_the_turn_with_a_synthetic_result() -> None:
    run = AgentRun("use the tool", max_turns=2)  # retry budget 0: Skip does not use it
    expect_call_model(run)
    bad = C("tc_1", "default_api")

    resolution = run._resolve_streamed_invalid_tool_call(
        PartialStreamedTurn(), invalid_call(bad), Skip("not available")
    )
    skipped = ToolResult("tc_1", "default_api", (Text("not available"),), "tc_1", is_error=True)
    assert resolution == TurnAbandoned(skipped)
    assert isinstance(resolution, TurnAbandoned)
    assert resolution.skipped_tool_result is not None
    assert resolution.skipped_tool_result.call_id == "tc_1"
    assert run.status == "PreparingRequest"
    assert _state(run)["invalid_tool_call_retries"] == 0
    assert _state(run)["rollback_pending"] is True
    assert run.messages() == (
        UserMessage("use the tool"),
        AssistantMessage([bad]),
        UserMessage([skipped]),
    )
    step = expect_call_model(run)
    assert step.turn == 2 and step.prompt == UserMessage([skipped])

    # With a single invalid call, a blocking Skip ends with the same history (RNR:7202).
    blocking = AgentRun("use the tool", max_turns=2)
    expect_call_model(blocking)
    expect_needs_resolution(blocking.model_response(turn(bad)))
    blocking.resolve_invalid_tool_call(Skip("not available"))
    calls = expect_call_tools(blocking)
    blocking.tool_results([c.preresolved_result for c in calls.calls])  # type: ignore[misc]
    expect_call_model(blocking)
    assert blocking.messages() == run.messages()


def test_s74_streamed_skip_is_refused_under_tool_choice_none() -> None:
    run = AgentRun("use the tool", max_turns=2, tool_choice=ToolChoice.none())
    expect_call_model(run)
    with pytest.raises(UnknownToolCall) as info:
        run._resolve_streamed_invalid_tool_call(
            PartialStreamedTurn(),
            invalid_call(C("tc_1", "add"), allowed=()),
            Skip("not available"),
        )
    assert info.value.tool_name == "add"
    assert info.value.allowed_tools == ()
    assert run.status == "Failed"


# --- 75 ------------------------------------------------------------------------------------


def test_s75_streamed_repair_keeps_the_turn() -> None:
    run = AgentRun("use the tool", max_turns=2)
    expect_call_model(run)
    bad = C("tc_1", "default_api")
    before = run.to_json()

    resolution = run._resolve_streamed_invalid_tool_call(
        PartialStreamedTurn(), invalid_call(bad), Repair("add")
    )
    assert resolution == Repaired("add")
    assert run.status == "AwaitingModel"
    assert run.to_json() == before  # nothing recorded, nothing written

    # The assembler renames the call; the finished turn passes validation.
    repaired = bad.renamed("add")
    run.streamed_turn(streamed(repaired, internal_call_ids=[("tc_1", "internal_tc_1")]))
    step = expect_call_tools(run)
    assert step.calls == (PendingToolCall(repaired, None, "internal_tc_1"),)
    assert step.calls[0].tool_call.name == "add"
    assert run.messages()[-1] == AssistantMessage([repaired])

    # A repair to a name outside the allowed set fails with the *target* name.
    other = AgentRun("use the tool")
    expect_call_model(other)
    with pytest.raises(UnknownToolCall) as info:
        other._resolve_streamed_invalid_tool_call(
            PartialStreamedTurn(), invalid_call(bad), Repair("nope")
        )
    assert info.value.tool_name == "nope"
    assert other.status == "Failed"


# --- 76 ------------------------------------------------------------------------------------


def test_s76_streamed_turn_fails_fast_on_a_disallowed_call() -> None:
    run = AgentRun("use the tool")
    expect_call_model(run)
    bad = C("tc_1", "unknown")

    with pytest.raises(UnknownToolCall) as info:
        run.streamed_turn(streamed(Text("let me"), bad, message_id="msg_1"))
    err = info.value
    assert err.tool_name == "unknown"
    assert err.available_tools == ("add",)
    assert err.allowed_tools == ("add",)
    assert err.chat_history == (
        UserMessage("use the tool"),
        AssistantMessage([Text("let me"), bad], "msg_1"),
    )
    assert str(err) == (
        "UnknownToolCall: model attempted to call unknown or disallowed tool `unknown`. "
        'Available tools: ["add"]. Allowed tools for this turn: ["add"]'
    )
    # The fallback record stays: exactly one completion call for the model call.
    assert run.completion_calls() == (CompletionCall(0, Usage(), "msg_1"),)
    assert run.messages() == (UserMessage("use the tool"),)
    assert run.status == "Failed"
    with pytest.raises(ProtocolViolation) as info2:
        run.next_step()
    assert info2.value.reason == PV_FAILED


def test_s76_fail_fast_keeps_an_explicit_record() -> None:
    run = AgentRun("use the tool")
    expect_call_model(run)
    run.record_streamed_completion_call(USAGE_5_7)
    with pytest.raises(UnknownToolCall):
        run.streamed_turn(streamed(C("tc_1", "unknown")))
    assert run.completion_calls() == (CompletionCall(0, USAGE_5_7),)
    assert run.usage() == USAGE_5_7
    assert run.status == "Failed"


# --- 77 ------------------------------------------------------------------------------------


def test_s77_record_requires_a_model_call() -> None:
    run = AgentRun("hello")
    expect_violation(run, lambda: run.record_streamed_completion_call(Usage()), PV_RECORD_NO_CALL)
    assert run.status == "PreparingRequest"
    assert run.completion_calls() == ()

    expect_call_model(run)
    call = run.record_streamed_completion_call(Usage())
    assert call == CompletionCall(0, Usage())
    assert len(run.completion_calls()) == 1

    # Other states refuse too: after the turn is accepted, and while tools pend.
    run2 = AgentRun("add", max_turns=2)
    expect_call_model(run2)
    run2.streamed_turn(streamed(C("tc_1")))
    expect_violation(run2, lambda: run2.record_streamed_completion_call(Usage()), PV_RECORD_NO_CALL)
    expect_call_tools(run2)
    expect_violation(run2, lambda: run2.record_streamed_completion_call(Usage()), PV_RECORD_NO_CALL)
    # PreparingRequest after tool results (no rollback pending) refuses as well.
    run2.tool_results([R("tc_1")])
    expect_violation(run2, lambda: run2.record_streamed_completion_call(Usage()), PV_RECORD_NO_CALL)


# --- 78 ------------------------------------------------------------------------------------


def test_s78_record_once_per_turn() -> None:
    run = AgentRun("hello")
    expect_call_model(run)
    run.record_streamed_completion_call(USAGE_5_7)
    expect_violation(run, lambda: run.record_streamed_completion_call(Usage()), PV_RECORD_TWICE)
    assert len(run.completion_calls()) == 1
    assert run.usage() == USAGE_5_7

    # After a rollback the single record is still the limit.
    run2 = AgentRun("use the tool", max_turns=2, max_invalid_tool_call_retries=1)
    expect_call_model(run2)
    run2.record_streamed_completion_call(Usage())
    run2._resolve_streamed_invalid_tool_call(
        PartialStreamedTurn(), invalid_call(C("tc_1", "bad")), Retry("fb")
    )
    expect_violation(run2, lambda: run2.record_streamed_completion_call(Usage()), PV_RECORD_TWICE)
    assert len(run2.completion_calls()) == 1
    # The next model call may record again.
    expect_call_model(run2)
    run2.record_streamed_completion_call(Usage())
    assert len(run2.completion_calls()) == 2


# --- 79 ------------------------------------------------------------------------------------


def test_s79_duplicate_ids_keep_distinct_internal_ids_through_serialisation() -> None:
    run = AgentRun("do both", max_turns=2)
    expect_call_model(run)
    run.record_streamed_completion_call(Usage())
    run.streamed_turn(
        streamed(
            C("tc_1"),
            C("tc_1"),
            internal_call_ids=[("tc_1", "internal_a"), ("tc_1", "internal_b")],
        )
    )
    assert run.status == "AwaitingAdvance"

    restored = AgentRun.from_json(run.to_json())
    assert restored.to_json() == run.to_json()
    step = expect_call_tools(restored)
    assert len(step.calls) == 2
    assert [c.internal_call_id for c in step.calls] == ["internal_a", "internal_b"]

    # And again while the tools pend (ExecutingTools keeps them on each call).
    again = AgentRun.from_json(restored.to_json())
    assert [c.internal_call_id for c in expect_call_tools(again).calls] == [
        "internal_a",
        "internal_b",
    ]
    again.tool_results([R("tc_1"), R("tc_1")])
    assert expect_call_model(again).turn == 2


# --- 80 ------------------------------------------------------------------------------------


def test_s80_no_mixing_of_streamed_and_blocking_ingestion() -> None:
    run = AgentRun("hello")
    expect_call_model(run)
    run.record_streamed_completion_call(USAGE_5_7)
    expect_violation(run, lambda: run.model_response(T("hi")), PV_MIXED)
    assert len(run.completion_calls()) == 1
    assert run.status == "AwaitingModel"

    # The streamed path still finishes the turn.
    run.streamed_turn(streamed(Text("hi")))
    assert expect_done(run).response.output == "hi"
    assert len(run.completion_calls()) == 1

    # Streamed entry points refuse outside AwaitingModel (state untouched).
    fresh = AgentRun("hello")
    expect_violation(fresh, lambda: fresh.streamed_turn(streamed(Text("x"))), PV_STREAMED_TURN)
    expect_violation(
        fresh,
        lambda: fresh._resolve_streamed_invalid_tool_call(
            PartialStreamedTurn(), invalid_call(C("tc_1", "bad")), Fail()
        ),
        PV_RESOLVE_STREAMED,
    )


# --- 81 ------------------------------------------------------------------------------------


def test_s81_rollback_answers_validated_peers_first_then_the_invalid_call() -> None:
    run = AgentRun("do things", max_turns=2, max_invalid_tool_call_retries=1)
    expect_call_model(run)
    reasoning = Reasoning.of_text("plan", signature="sig")
    peer = C("a", "add")
    bad = C("b", "bad")
    partial = PartialStreamedTurn(
        message_id="msg_1", text="ok ", reasoning=(reasoning,), pending_tool_calls=(peer,)
    )

    context = run._streamed_invalid_tool_call_context(partial, invalid_call(bad, args='{"x":'))
    assert context.args == '{"x":'  # buffered argument deltas are passed through verbatim
    canonical = AssistantMessage([reasoning, Text("ok "), peer, bad], "msg_1")
    assert context.chat_history[-1] == canonical

    assert run._resolve_streamed_invalid_tool_call(
        partial, invalid_call(bad), Retry("fb")
    ) == TurnAbandoned(None)
    assert run.messages() == (
        UserMessage("do things"),
        canonical,
        UserMessage(
            [
                ToolResult("a", "add", (Text(TNE),), "a", is_error=True),
                ToolResult("b", "bad", (Text("fb"),), "b", is_error=True),
            ]
        ),
    )
    step = expect_call_model(run)
    assert step.prompt == run.messages()[-1]
    results = step.prompt.content
    assert [r.call_id for r in results if isinstance(r, ToolResult)] == ["a", "b"]


def test_h_streamed_output_tool_call_passes_validation() -> None:
    # Allowed-but-not-executable names (the output tool) pass streamed validation too.
    run = AgentRun("answer", output_tool_name="final_result")
    expect_call_model(run)
    call = ToolCall.from_wire("call_1", "final_result", {"x": 1})
    run.streamed_turn(streamed(call, allowed={"add", "final_result"}))
    assert expect_done(run).response.output == '{"x":1}'
