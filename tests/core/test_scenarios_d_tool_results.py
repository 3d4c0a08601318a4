"""§12 group D: `tool_results` matching and commit (scenarios 38-44)."""

from __future__ import annotations

import pytest

from app.core import (
    AgentRun,
    AssistantMessage,
    CallTools,
    PromptCancelled,
    ProtocolViolation,
    Text,
    UserMessage,
)
from tests.core.support import (
    PV_PREFIX,
    C,
    R,
    expect_call_model,
    expect_call_tools,
    expect_violation,
    run_to_pending_tools,
    turn,
)


def _pending(*calls: object) -> tuple[AgentRun, CallTools]:
    run = AgentRun("add things", max_turns=2)
    step = run_to_pending_tools(run, turn(*calls))
    assert run.status == "ExecutingTools"
    return run, step


def test_s38_empty_results_cancel_the_run() -> None:
    run, _ = _pending(C("call_1", "add"))
    history = run.full_history()

    with pytest.raises(PromptCancelled) as info:
        run.tool_results([])
    err = info.value
    assert not isinstance(err, ProtocolViolation)
    assert err.reason == "tool execution produced no tool results"
    assert str(err) == "PromptCancelled: tool execution produced no tool results"
    assert err.chat_history == history
    assert run.messages() == history
    assert run.status == "Failed"

    with pytest.raises(ProtocolViolation) as info2:
        run.next_step()
    assert info2.value.reason == (
        PV_PREFIX + "next_step called after the run already failed or was misdriven"
    )
    assert run.status == "Failed"


def test_s39_unknown_result_id_is_recoverable() -> None:
    run, _ = _pending(C("call_1", "add"))

    expect_violation(
        run,
        lambda: run.tool_results([R("call_unknown", "2")]),
        "tool_results received a result for unknown or already-answered tool call id "
        "`call_unknown`",
    )
    assert run.status == "ExecutingTools"

    assert run.tool_results([R("call_1", "2")]) is None
    assert run.status == "PreparingRequest"
    assert run.messages()[-1] == UserMessage([R("call_1", "2")])
    assert expect_call_model(run).turn == 2


def test_s40_answering_one_call_twice_is_refused() -> None:
    run, _ = _pending(C("call_1", "add"))

    expect_violation(
        run,
        lambda: run.tool_results([R("call_1", "2"), R("call_1", "3")]),
        "tool_results received a result for unknown or already-answered tool call id `call_1`",
    )
    assert run.status == "ExecutingTools"
    assert len(run.messages()) == 2

    run.tool_results([R("call_1", "2")])
    assert run.status == "PreparingRequest"


def test_s41_non_tool_result_content_is_refused() -> None:
    run, _ = _pending(C("call_1", "add"))

    expect_violation(
        run,
        lambda: run.tool_results([Text("not a tool result")]),
        "tool_results received content that is not a tool result",
    )
    assert run.status == "ExecutingTools"

    run.tool_results([R("call_1", "2")])
    assert run.status == "PreparingRequest"


def test_s42_unanswered_pending_call_is_refused() -> None:
    run, step = _pending(C("call_1", "add"), C("call_2", "add"))

    expect_violation(
        run,
        lambda: run.tool_results([R("call_1", "2")]),
        'tool_results left pending tool call id(s) unanswered: ["call_2"]',
    )
    assert run.status == "ExecutingTools"
    assert expect_call_tools(run) == step

    run.tool_results([R("call_1", "2"), R("call_2", "4")])
    assert run.status == "PreparingRequest"


def test_s43_duplicate_tool_call_ids_are_answered_as_a_multiset() -> None:
    run, step = _pending(C("dup", "add"), C("dup", "add"))
    assert len(step.calls) == 2
    assert [c.tool_call.id for c in step.calls] == ["dup", "dup"]

    run.tool_results([R("dup", "2"), R("dup", "3")])
    assert run.status == "PreparingRequest"
    assert run.messages() == (
        UserMessage("add things"),
        AssistantMessage([C("dup", "add"), C("dup", "add")]),
        UserMessage([R("dup", "2"), R("dup", "3")]),
    )
    assert len(run.messages()[-1].content) == 2


def test_s44_results_are_stored_in_the_order_given() -> None:
    run, step = _pending(C("call_1", "add"), C("call_2", "add"))
    assert [c.tool_call.id for c in step.calls] == ["call_1", "call_2"]

    run.tool_results([R("call_2", "second"), R("call_1", "first")])
    last = run.messages()[-1]
    assert last == UserMessage([R("call_2", "second"), R("call_1", "first")])
    prompt = expect_call_model(run).prompt
    assert prompt == last
