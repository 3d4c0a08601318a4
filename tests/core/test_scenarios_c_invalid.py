"""§12 group C: invalid tool calls on the blocking path (scenarios 19-37)."""

from __future__ import annotations

import json

import pytest

from app.core import (
    TOOL_NOT_EXECUTED_DUE_TO_INVALID_PEER,
    AgentRun,
    AssistantMessage,
    Continue,
    Fail,
    InvalidToolCallContext,
    MaxTurnsError,
    PromptCancelled,
    ProtocolViolation,
    Repair,
    Retry,
    Skip,
    Stop,
    Text,
    ToolCall,
    ToolChoice,
    ToolResult,
    TurnRetried,
    UnknownToolCall,
    Usage,
    UserMessage,
)
from tests.core.support import (
    PV_PREFIX,
    C,
    R,
    T,
    expect_call_model,
    expect_call_tools,
    expect_continue,
    expect_done,
    expect_needs_resolution,
    expect_violation,
    result_text,
    turn,
)

PV_FAILED = PV_PREFIX + "next_step called after the run already failed or was misdriven"
TNE = TOOL_NOT_EXECUTED_DUE_TO_INVALID_PEER


def _unknown_text(name: str, available: str, allowed: str) -> str:
    return (
        f"UnknownToolCall: model attempted to call unknown or disallowed tool `{name}`. "
        f"Available tools: {available}. Allowed tools for this turn: {allowed}"
    )


def _parked(run: AgentRun, *items: ToolCall, **kw: object) -> InvalidToolCallContext:
    expect_call_model(run)
    return expect_needs_resolution(run.model_response(turn(*items, **kw)))


def test_s19_fail_raises_unknown_tool_call() -> None:
    run = AgentRun("call something")
    context = _parked(run, C("call_1", "unknown"))

    diagnostic = (UserMessage("call something"), AssistantMessage([C("call_1", "unknown")]))
    assert context == InvalidToolCallContext(
        tool_name="unknown",
        tool_call_id="call_1",
        internal_call_id=None,
        args='{"x":1}',
        available_tools=("add",),
        allowed_tools=("add",),
        tool_choice=None,
        chat_history=diagnostic,
        is_streaming=False,
    )
    assert len(context.chat_history) == 2
    assert run.pending_invalid_tool_call() == context
    assert run.status == "ResolvingToolCalls"
    assert len(run.completion_calls()) == 1

    with pytest.raises(UnknownToolCall) as info:
        run.resolve_invalid_tool_call(Fail())
    err = info.value
    assert err.tool_name == "unknown"
    assert err.available_tools == ("add",)
    assert err.allowed_tools == ("add",)
    assert err.chat_history == diagnostic
    assert str(err) == _unknown_text("unknown", '["add"]', '["add"]')
    assert run.messages() == (UserMessage("call something"),)
    assert run.status == "Failed"
    assert run.pending_invalid_tool_call() is None


def test_s20_stop_cancels_with_verbatim_reason_and_is_terminal() -> None:
    run = AgentRun("call something")
    _parked(run, C("call_1", "unknown"))

    with pytest.raises(PromptCancelled) as info:
        run.resolve_invalid_tool_call(Stop("operator stop"))
    err = info.value
    assert not isinstance(err, ProtocolViolation)
    assert err.reason == "operator stop"
    assert str(err) == "PromptCancelled: operator stop"
    assert err.chat_history == (
        UserMessage("call something"),
        AssistantMessage([C("call_1", "unknown")]),
    )
    assert run.messages() == (UserMessage("call something"),)
    assert run.status == "Failed"

    with pytest.raises(ProtocolViolation) as info2:
        run.next_step()
    assert info2.value.reason == PV_FAILED
    assert run.status == "Failed"


def test_s21_retry_rolls_back() -> None:
    run = AgentRun("call something", max_turns=2, max_invalid_tool_call_retries=1)
    _parked(run, C("call_1", "unknown"))

    assert run.resolve_invalid_tool_call(Retry("use add instead")) == TurnRetried()
    assert run.status == "PreparingRequest"
    retry_message = UserMessage(
        [ToolResult("call_1", "unknown", (Text("use add instead"),), "call_1", is_error=True)]
    )
    assert run.messages() == (
        UserMessage("call something"),
        AssistantMessage([C("call_1", "unknown")]),
        retry_message,
    )
    assert len(run.messages()) == 3

    step = expect_call_model(run)
    assert step.turn == 2
    assert isinstance(step.prompt, UserMessage)
    assert isinstance(step.prompt.content[0], ToolResult)
    assert step.prompt == retry_message
    assert step.history == run.messages()[:2]

    context = expect_needs_resolution(run.model_response(turn(C("call_2", "unknown"))))
    assert context.tool_call_id == "call_2"
    with pytest.raises(UnknownToolCall) as info:
        run.resolve_invalid_tool_call(Retry("again"))
    assert info.value.tool_name == "unknown"
    assert run.status == "Failed"
    assert len(run.completion_calls()) == 2
    assert len(run.messages()) == 3


def test_s22_retry_cannot_exceed_total_budget() -> None:
    run = AgentRun("call something", max_turns=1, max_invalid_tool_call_retries=1)
    _parked(run, C("call_1", "unknown"))

    assert run.resolve_invalid_tool_call(Retry("use add instead")) == TurnRetried()
    assert len(run.completion_calls()) == 1

    with pytest.raises(MaxTurnsError) as info:
        run.next_step()
    assert info.value.max_turns == 1
    assert info.value.prompt == run.messages()[-1]
    assert run.turn() == 1
    assert len(run.completion_calls()) == 1
    assert run.status == "Failed"


def test_s23_retry_with_default_budget_zero_fails() -> None:
    run = AgentRun("call something")
    _parked(run, C("call_1", "unknown"))

    with pytest.raises(UnknownToolCall) as info:
        run.resolve_invalid_tool_call(Retry("use add instead"))
    assert info.value.tool_name == "unknown"
    assert run.messages() == (UserMessage("call something"),)
    assert run.status == "Failed"


def test_s24_mixed_turn_retry_answers_every_call() -> None:
    run = AgentRun("call things", max_turns=3, max_invalid_tool_call_retries=1)
    valid = ToolCall("tool_call_1", "add", {"x": 1}, provider_call_id="call_1")
    invalid = ToolCall("tool_call_2", "default_api", {"x": 1}, provider_call_id="call_2")
    context = _parked(run, valid, invalid)
    assert context.tool_name == "default_api"
    assert context.tool_call_id == "tool_call_2"

    feedback = "default_api is not a tool; call add"
    assert run.resolve_invalid_tool_call(Retry(feedback)) == TurnRetried()
    messages = run.messages()
    assert len(messages) == 3
    assert messages[1] == AssistantMessage([valid, invalid])
    assert messages[2] == UserMessage(
        [
            ToolResult("tool_call_1", "add", (Text(TNE),), "call_1", is_error=True),
            ToolResult("tool_call_2", "default_api", (Text(feedback),), "call_2", is_error=True),
        ]
    )
    # No tool of the turn is executed: the next step is the retry model call.
    step = expect_call_model(run)
    assert step.turn == 2
    assert step.prompt == messages[2]


def test_s25_repair_renames_the_call_everywhere_in_history() -> None:
    run = AgentRun("call something", max_turns=2)
    context = _parked(run, C("call_1", "default_api"))
    assert context.tool_name == "default_api"

    assert run.resolve_invalid_tool_call(Repair("add")) == Continue(True)
    calls = expect_call_tools(run).calls
    assert len(calls) == 1
    assert calls[0].tool_call == ToolCall("call_1", "add", {"x": 1}, provider_call_id="call_1")
    assert calls[0].tool_call.name == "add"
    assert calls[0].preresolved_result is None

    run.tool_results([R("call_1", "2")])
    expect_call_model(run)
    expect_continue(run.model_response(T("done")))
    response = expect_done(run).response
    assert response.output == "done"
    assert response.messages is not None
    assert response.messages[1] == AssistantMessage([C("call_1", "add")])
    history_json = run.to_json()
    assert '"add"' in history_json
    assert "default_api" not in history_json


def test_s26_repair_to_a_disallowed_name_fails_with_the_target_name() -> None:
    run = AgentRun("call something")
    _parked(run, C("call_1", "unknown"))

    with pytest.raises(UnknownToolCall) as info:
        run.resolve_invalid_tool_call(Repair("also_unknown"))
    assert info.value.tool_name == "also_unknown"
    assert str(info.value) == _unknown_text("also_unknown", '["add"]', '["add"]')
    assert run.status == "Failed"
    assert run.messages() == (UserMessage("call something"),)


def test_s27_repair_under_tool_choice_none_fails() -> None:
    run = AgentRun("call something", tool_choice=ToolChoice.none())
    context = _parked(run, C("call_1", "default_api"), allowed=())
    assert context.allowed_tools == ()
    assert context.available_tools == ("add",)
    assert context.tool_choice == ToolChoice.none()

    with pytest.raises(UnknownToolCall) as info:
        run.resolve_invalid_tool_call(Repair("add"))
    assert info.value.tool_name == "add"
    assert info.value.allowed_tools == ()
    assert str(info.value) == _unknown_text("add", '["add"]', "[]")
    assert run.status == "Failed"


def test_s28_skip_suppresses_all_peers() -> None:
    run = AgentRun("call things", max_turns=2)
    _parked(run, C("call_1", "unknown"), C("call_2", "add"))

    assert run.resolve_invalid_tool_call(Skip("not available")) == Continue(True)
    calls = expect_call_tools(run).calls
    assert len(calls) == 2
    assert [c.tool_call.id for c in calls] == ["call_1", "call_2"]
    assert calls[0].preresolved_result == ToolResult(
        "call_1", "unknown", (Text("not available"),), "call_1", is_error=True
    )
    assert calls[1].preresolved_result == ToolResult(
        "call_2", "add", (Text(TNE),), "call_2", is_error=True
    )
    assert json.loads(run.to_json())["invalid_tool_call_retries"] == 0  # budget untouched
    assert run.status == "ExecutingTools"


def test_s29_id_less_calls_keep_distinct_skip_results() -> None:
    run = AgentRun("call things", max_turns=2)
    _parked(run, C("", "unknown"), C("", "add"))

    assert run.resolve_invalid_tool_call(Skip("not available")) == Continue(True)
    calls = expect_call_tools(run).calls
    assert len(calls) == 2
    first, second = (c.tool_call for c in calls)
    assert first.id != second.id
    for call in (first, second):
        assert call.id != ""
        assert len(call.id) == 21
        assert call.provider_call_id is None
    assert [result_text(c.preresolved_result) for c in calls] == ["not available", TNE]
    assert calls[0].preresolved_result == ToolResult(
        first.id, "unknown", (Text("not available"),), is_error=True
    )
    assert calls[1].preresolved_result == ToolResult(second.id, "add", (Text(TNE),), is_error=True)

    run.tool_results([c.preresolved_result for c in calls])
    assert run.status == "PreparingRequest"


def test_s30_skip_under_tool_choice_none_fails() -> None:
    run = AgentRun("call something", tool_choice=ToolChoice.none())
    _parked(run, C("call_1", "add"), allowed=())

    with pytest.raises(UnknownToolCall) as info:
        run.resolve_invalid_tool_call(Skip("nope"))
    assert info.value.tool_name == "add"
    assert info.value.allowed_tools == ()
    assert run.status == "Failed"
    assert run.messages() == (UserMessage("call something"),)

    # The check is on the configured tool choice (§6.4), not on the turn's allowed set.
    run = AgentRun("call something", tool_choice=ToolChoice.none())
    _parked(run, C("call_1", "unknown"), allowed={"add"})
    with pytest.raises(UnknownToolCall) as info:
        run.resolve_invalid_tool_call(Skip("nope"))
    assert info.value.tool_name == "unknown"
    assert run.status == "Failed"


def test_s31_skip_under_specific_tool_choice_succeeds() -> None:
    run = AgentRun("call something", max_turns=2, tool_choice=ToolChoice.specific(["add"]))
    context = _parked(run, C("call_1", "default_api"), allowed={"add"})
    assert context.tool_choice == ToolChoice.specific(["add"])

    reason = "default_api is not available"
    assert run.resolve_invalid_tool_call(Skip(reason)) == Continue(True)
    calls = expect_call_tools(run).calls
    assert len(calls) == 1
    assert calls[0].preresolved_result == ToolResult(
        "call_1", "default_api", (Text(reason),), "call_1", is_error=True
    )
    assert result_text(calls[0].preresolved_result) == reason


def test_s32_skip_with_valid_peer_first() -> None:
    run = AgentRun("call things", max_turns=2)
    _parked(run, C("tool_call_1", "add"), C("tool_call_2", "default_api"))

    reason = "default_api is not available"
    assert run.resolve_invalid_tool_call(Skip(reason)) == Continue(True)
    calls = expect_call_tools(run).calls
    assert [c.tool_call.id for c in calls] == ["tool_call_1", "tool_call_2"]
    assert calls[0].preresolved_result == ToolResult(
        "tool_call_1", "add", (Text(TNE),), "tool_call_1", is_error=True
    )
    assert calls[1].preresolved_result == ToolResult(
        "tool_call_2", "default_api", (Text(reason),), "tool_call_2", is_error=True
    )

    results = [c.preresolved_result for c in calls]
    run.tool_results(results)
    assert run.messages() == (
        UserMessage("call things"),
        AssistantMessage([C("tool_call_1", "add"), C("tool_call_2", "default_api")]),
        UserMessage(results),
    )
    assert [r.call_id for r in run.messages()[-1].content] == ["tool_call_1", "tool_call_2"]


def test_s33_two_invalid_calls_are_resolved_one_at_a_time() -> None:
    run = AgentRun("call things", max_turns=2)
    first = _parked(run, C("a", "bad1"), C("b", "bad2"))
    assert first.tool_name == "bad1"
    assert first.tool_call_id == "a"

    second = expect_needs_resolution(run.resolve_invalid_tool_call(Repair("add")))
    assert second.tool_name == "bad2"
    assert second.tool_call_id == "b"
    # Diagnostics keep the original, unrepaired model output.
    assert second.chat_history[-1] == AssistantMessage([C("a", "bad1"), C("b", "bad2")])
    assert run.status == "ResolvingToolCalls"

    assert run.resolve_invalid_tool_call(Skip("r")) == Continue(True)
    calls = expect_call_tools(run).calls
    assert [(c.tool_call.id, c.tool_call.name) for c in calls] == [("a", "add"), ("b", "bad2")]
    assert calls[0].preresolved_result == ToolResult("a", "add", (Text(TNE),), "a", is_error=True)
    assert calls[1].preresolved_result == ToolResult("b", "bad2", (Text("r"),), "b", is_error=True)


def test_s34_retry_after_an_earlier_repair_uses_the_original_turn() -> None:
    run = AgentRun("call things", max_turns=2, max_invalid_tool_call_retries=1)
    _parked(run, C("a", "bad1"), C("b", "bad2"))
    expect_needs_resolution(run.resolve_invalid_tool_call(Repair("add")))

    assert run.resolve_invalid_tool_call(Retry("fb")) == TurnRetried()
    messages = run.messages()
    assert len(messages) == 3
    assert messages[1] == AssistantMessage([C("a", "bad1"), C("b", "bad2")])
    assert messages[2] == UserMessage(
        [
            ToolResult("a", "bad1", (Text(TNE),), "a", is_error=True),
            ToolResult("b", "bad2", (Text("fb"),), "b", is_error=True),
        ]
    )
    step = expect_call_model(run)
    assert step.turn == 2
    assert step.prompt == messages[2]


def test_s35_resolve_without_a_pending_invalid_call_is_refused() -> None:
    run = AgentRun("add things", max_turns=2)
    expect_call_model(run)
    assert run.model_response(turn(C("call_1", "add"))) == Continue(False)
    assert run.status == "AwaitingAdvance"

    expect_violation(
        run,
        lambda: run.resolve_invalid_tool_call(Fail()),
        "resolve_invalid_tool_call called without a pending invalid tool call",
    )
    assert run.status == "AwaitingAdvance"

    calls = expect_call_tools(run).calls
    assert [c.tool_call.id for c in calls] == ["call_1"]


def test_s36_retry_budget_is_run_wide() -> None:
    run = AgentRun("call things", max_turns=4, max_invalid_tool_call_retries=1)
    _parked(run, C("call_1", "unknown"))
    assert run.resolve_invalid_tool_call(Retry("use add")) == TurnRetried()

    assert expect_call_model(run).turn == 2
    expect_continue(run.model_response(turn(C("call_2", "add"))))
    expect_call_tools(run)
    run.tool_results([R("call_2", "2")])

    assert expect_call_model(run).turn == 3
    context = expect_needs_resolution(run.model_response(turn(C("call_3", "unknown"))))
    assert context.tool_call_id == "call_3"
    with pytest.raises(UnknownToolCall) as info:
        run.resolve_invalid_tool_call(Retry("use add again"))
    assert info.value.tool_name == "unknown"
    assert run.turn() == 3
    assert run.status == "Failed"


def test_s37_valid_calls_under_specific_execute_normally() -> None:
    run = AgentRun("add things", max_turns=2, tool_choice=ToolChoice.specific(["add"]))
    expect_call_model(run)
    assert run.model_response(turn(C("call_1", "add"), allowed={"add"})) == Continue(False)

    calls = expect_call_tools(run).calls
    assert len(calls) == 1
    assert calls[0].tool_call == C("call_1", "add")
    assert calls[0].preresolved_result is None

    run.tool_results([R("call_1", "2")])
    assert expect_call_model(run).turn == 2
    expect_continue(run.model_response(T("2")))
    response = expect_done(run).response
    assert response.output == "2"
    assert len(response.messages or ()) == 4
    assert run.usage() == Usage()
