"""§12 group A: basic flow and turn budget (scenarios 1-12)."""

from __future__ import annotations

import pytest

from app.core import (
    AgentRun,
    AssistantMessage,
    CallModel,
    CompletionCall,
    Continue,
    MaxTurnsError,
    ProtocolViolation,
    Repair,
    Text,
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
    run_to_pending_tools,
    turn,
    usage,
)

PV_FAILED = "next_step called after the run already failed or was misdriven"


def test_s01_text_only_turn_finishes() -> None:
    run = AgentRun("hello")
    assert run.status == "PreparingRequest"

    step = run.next_step()
    assert step == CallModel(prompt=UserMessage("hello"), history=(), turn=1)
    assert run.status == "AwaitingModel"
    assert run.turn() == 1

    assert run.model_response(T("hi there")) == Continue(False)
    assert run.status == "AwaitingAdvance"
    assert not run.is_done()

    done = expect_done(run)
    response = done.response
    assert response.output == "hi there"
    assert response.messages == (UserMessage("hello"), AssistantMessage([Text("hi there")]))
    assert len(response.messages) == 2
    assert response.content == (Text("hi there"),)
    assert response.usage == Usage()
    assert response.completion_calls == (CompletionCall(call_index=0),)
    assert run.is_done()
    assert run.status == "Done"
    assert run.response() == response
    assert run.messages() == response.messages


def test_s02_input_history_precedes_prompt_but_is_not_a_run_message() -> None:
    history = [UserMessage("earlier"), AssistantMessage("reply")]
    run = AgentRun("hello", history=history)

    step = expect_call_model(run)
    assert step.history == tuple(history)
    assert step.prompt == UserMessage("hello")
    assert step.turn == 1

    expect_continue(run.model_response(T("hi there")))
    response = expect_done(run).response
    assert response.output == "hi there"
    assert response.messages == (UserMessage("hello"), AssistantMessage([Text("hi there")]))
    assert len(response.messages) == 2
    assert run.messages() == response.messages
    assert run.full_history() == (*history, *response.messages)


def test_s03_default_budget_is_one_model_call() -> None:
    run = AgentRun("add things")
    assert run.max_turns == 1

    calls = run_to_pending_tools(run, turn(C("call_1", "add"))).calls
    assert [c.tool_call.id for c in calls] == ["call_1"]
    assert run.tool_results([R("call_1", "2")]) is None
    assert run.status == "PreparingRequest"

    with pytest.raises(MaxTurnsError) as info:
        run.next_step()
    assert info.value.max_turns == 1
    assert str(info.value) == "MaxTurnsError: reached max turns limit: 1"
    assert run.turn() == 1
    assert len(run.completion_calls()) == 1
    assert run.status == "Failed"


def test_s04_zero_budget_emits_no_model_call() -> None:
    run = AgentRun("hello", max_turns=0)

    with pytest.raises(MaxTurnsError) as info:
        run.next_step()
    err = info.value
    assert err.max_turns == 0
    assert str(err) == "MaxTurnsError: reached max turns limit: 0"
    assert err.prompt == UserMessage("hello")
    assert err.chat_history == (UserMessage("hello"),)
    assert run.turn() == 0
    assert run.completion_calls() == ()
    assert run.status == "Failed"


def test_s05_exact_budget_of_n_model_calls() -> None:
    run = AgentRun("add things", max_turns=3)

    for n in (1, 2, 3):
        step = expect_call_model(run)
        assert step.turn == n
        assert run.turn() == n
        expect_continue(run.model_response(turn(C(f"call_{n}", "add"))))
        expect_call_tools(run)
        run.tool_results([R(f"call_{n}", "2")])

    with pytest.raises(MaxTurnsError) as info:
        run.next_step()
    assert info.value.max_turns == 3
    assert str(info.value) == "MaxTurnsError: reached max turns limit: 3"
    assert run.turn() == 3
    assert [c.call_index for c in run.completion_calls()] == [0, 1, 2]
    assert run.status == "Failed"


def test_s06_max_turns_error_payload_and_terminality() -> None:
    run = AgentRun("add things")
    run_to_pending_tools(run, turn(C("call_1", "add")))
    run.tool_results([R("call_1", "2")])
    result_message = UserMessage([R("call_1", "2")])
    history_before = run.full_history()

    with pytest.raises(MaxTurnsError) as info:
        run.next_step()
    err = info.value
    assert err.max_turns == 1
    assert err.chat_history == history_before
    assert err.chat_history == (
        UserMessage("add things"),
        AssistantMessage([C("call_1", "add")]),
        result_message,
    )
    assert err.chat_history[-1] == result_message
    assert err.prompt == result_message
    assert run.status == "Failed"

    expect_violation(run, run.next_step, PV_FAILED)
    assert run.status == "Failed"
    assert run.turn() == 1


def test_s07_tool_round_trip_threads_history_and_usage() -> None:
    run = AgentRun("add things", max_turns=2)
    expect_call_model(run)
    expect_continue(run.model_response(turn(C("call_1", "add"), usage=usage(10, 5))))

    calls = expect_call_tools(run).calls
    assert len(calls) == 1
    assert calls[0].tool_call == C("call_1", "add")
    assert calls[0].preresolved_result is None
    assert calls[0].internal_call_id is None
    assert run.status == "ExecutingTools"

    run.tool_results([R("call_1", "2")])
    step = expect_call_model(run)
    assert step.turn == 2
    assert isinstance(step.prompt, UserMessage)
    assert step.prompt == UserMessage([R("call_1", "2")])
    assert len(step.history) == 2
    assert step.history == (UserMessage("add things"), AssistantMessage([C("call_1", "add")]))

    expect_continue(run.model_response(T("the answer is 2", usage=usage(20, 7))))
    response = expect_done(run).response
    assert response.output == "the answer is 2"
    assert response.usage == Usage(30, 12, 42)
    assert run.usage() == Usage(30, 12, 42)
    assert response.completion_calls == (
        CompletionCall(call_index=0, usage=usage(10, 5)),
        CompletionCall(call_index=1, usage=usage(20, 7)),
    )
    assert response.messages == (
        UserMessage("add things"),
        AssistantMessage([C("call_1", "add")]),
        UserMessage([R("call_1", "2")]),
        AssistantMessage([Text("the answer is 2")]),
    )


def test_s08_parallel_calls_keep_emission_order_and_given_result_order() -> None:
    run = AgentRun("add things", max_turns=2)
    calls = run_to_pending_tools(run, turn(C("call_1", "add"), C("call_2", "add"))).calls
    assert [c.tool_call.id for c in calls] == ["call_1", "call_2"]
    assert all(c.preresolved_result is None for c in calls)

    run.tool_results([R("call_2", "4"), R("call_1", "2")])
    assert run.status == "PreparingRequest"
    last = run.messages()[-1]
    assert last == UserMessage([R("call_2", "4"), R("call_1", "2")])
    assert len(last.content) == 2
    assert len(run.messages()) == 3


def test_s09_done_is_idempotent() -> None:
    run = AgentRun("hello")
    expect_call_model(run)
    expect_continue(run.model_response(T("hi")))

    first = expect_done(run)
    second = expect_done(run)
    assert first.response.output == "hi"
    assert second.response.output == "hi"
    assert first == second
    assert run.status == "Done"
    assert len(run.completion_calls()) == 1


def test_s10_wrong_state_calls_do_not_corrupt_the_run() -> None:
    run = AgentRun("hello")
    expect_violation(
        run,
        lambda: run.tool_results([R("call_1", "x")]),
        "tool_results called without a pending CallTools step",
    )
    assert run.status == "PreparingRequest"

    step = expect_call_model(run)
    assert step.turn == 1
    expect_violation(
        run,
        run.next_step,
        "next_step called while a model response is pending; feed it via model_response first",
    )
    assert run.status == "AwaitingModel"
    assert run.turn() == 1

    expect_continue(run.model_response(T("hi")))
    assert expect_done(run).response.output == "hi"


def test_s11_model_response_before_call_model_is_refused() -> None:
    run = AgentRun("hello")
    err = expect_violation(
        run,
        lambda: run.model_response(T("hi")),
        "model_response called without a pending CallModel step",
    )
    assert isinstance(err, ProtocolViolation)
    assert err.reason.startswith(PV_PREFIX)
    assert run.completion_calls() == ()
    assert run.usage() == Usage()
    assert run.status == "PreparingRequest"

    step = expect_call_model(run)
    assert step == CallModel(prompt=UserMessage("hello"), history=(), turn=1)


def test_s12_next_step_while_resolving_is_refused() -> None:
    run = AgentRun("call something")
    expect_call_model(run)
    context = expect_needs_resolution(run.model_response(turn(C("call_1", "unknown"))))
    assert run.status == "ResolvingToolCalls"

    expect_violation(
        run,
        run.next_step,
        "next_step called while an invalid tool-call resolution is pending; answer it via "
        "resolve_invalid_tool_call first",
    )
    assert run.status == "ResolvingToolCalls"
    assert run.pending_invalid_tool_call() == context

    assert run.resolve_invalid_tool_call(Repair("add")) == Continue(True)
    assert run.status == "AwaitingAdvance"
    calls = expect_call_tools(run).calls
    assert [c.tool_call.name for c in calls] == ["add"]
