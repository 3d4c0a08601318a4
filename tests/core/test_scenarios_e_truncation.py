"""§12 group E: truncation guard and content shapes (scenarios 45-52)."""

from __future__ import annotations

import pytest

from app.core import (
    AgentRun,
    AssistantMessage,
    CompletionCall,
    CompletionError,
    Continue,
    ProtocolViolation,
    Reasoning,
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
    turn,
    usage,
)

LENGTH_MESSAGE = (
    "the model produced no answer and stopped with finish_reason=Length; the turn ran out "
    "of output budget before producing one — raise max_tokens for this request"
)
CONTENT_FILTER_MESSAGE = (
    "the model produced no answer and stopped with finish_reason=ContentFilter; the provider "
    "filtered the response — the content, not the budget, is what it objected to"
)


def test_s45_empty_turn_with_length_is_a_response_error() -> None:
    run = AgentRun("hello")
    expect_call_model(run)
    assert run.model_response(turn(finish_reason="length")) == Continue(False)

    with pytest.raises(CompletionError) as info:
        run.next_step()
    err = info.value
    assert err.message == LENGTH_MESSAGE
    assert "finish_reason=Length" in str(err)
    assert "max_tokens" in str(err)
    assert str(err) == "CompletionError: ResponseError: " + LENGTH_MESSAGE
    assert run.status == "Failed"
    assert run.messages() == (UserMessage("hello"),)
    assert run.completion_calls() == (CompletionCall(call_index=0, finish_reason="length"),)

    with pytest.raises(ProtocolViolation) as info2:
        run.next_step()
    assert info2.value.reason == (
        PV_PREFIX + "next_step called after the run already failed or was misdriven"
    )


def test_s46_reasoning_only_turn_with_length_errors_but_stays_in_history() -> None:
    run = AgentRun("hello")
    expect_call_model(run)
    reasoning = Reasoning.of_text("thinking about it", signature="sig")
    expect_continue(run.model_response(turn(reasoning, finish_reason="length")))

    with pytest.raises(CompletionError) as info:
        run.next_step()
    assert info.value.message == LENGTH_MESSAGE
    assert str(info.value) == "CompletionError: ResponseError: " + LENGTH_MESSAGE
    assert run.messages() == (UserMessage("hello"), AssistantMessage([reasoning]))
    assert run.status == "Failed"
    assert run.response() is None


def test_s47_empty_turn_with_content_filter_is_a_response_error() -> None:
    run = AgentRun("hello")
    expect_call_model(run)
    expect_continue(run.model_response(turn(finish_reason="content_filter")))

    with pytest.raises(CompletionError) as info:
        run.next_step()
    err = info.value
    assert err.message == CONTENT_FILTER_MESSAGE
    assert "ContentFilter" in str(err)
    assert "the provider filtered the response" in str(err)
    assert str(err) == "CompletionError: ResponseError: " + CONTENT_FILTER_MESSAGE
    assert run.status == "Failed"
    assert run.messages() == (UserMessage("hello"),)


def test_s48_partial_text_with_length_finishes() -> None:
    run = AgentRun("hello")
    expect_call_model(run)
    expect_continue(run.model_response(T("a partial ans", finish_reason="length")))

    response = expect_done(run).response
    assert response.output == "a partial ans"
    assert response.content == (Text("a partial ans"),)
    assert response.completion_calls[-1].finish_reason == "length"
    assert run.completion_calls()[-1].finish_reason == "length"
    assert response.messages == (UserMessage("hello"), AssistantMessage([Text("a partial ans")]))
    assert run.status == "Done"


def test_s49_empty_turn_with_stop_other_or_no_reason_finishes_empty() -> None:
    for reason in ("stop", "x", None):
        run = AgentRun("hello")
        expect_call_model(run)
        assert run.model_response(turn(finish_reason=reason)) == Continue(False)

        response = expect_done(run).response
        assert response.output == "", reason
        assert response.messages == (UserMessage("hello"),), reason
        assert response.content == (), reason
        assert run.completion_calls() == (CompletionCall(call_index=0, finish_reason=reason),)
        assert run.status == "Done", reason


def test_s50_tool_turn_then_empty_text_finishes() -> None:
    run = AgentRun("add things", max_turns=3)
    expect_call_model(run)
    expect_continue(run.model_response(turn(C("call_1", "add"), usage=usage(10, 5))))
    expect_call_tools(run)
    run.tool_results([R("call_1", "2")])
    assert expect_call_model(run).turn == 2
    expect_continue(run.model_response(T("", usage=usage(3, 4), finish_reason="stop")))

    response = expect_done(run).response
    assert response.output == ""
    assert response.content == (Text(""),)
    assert response.messages == (
        UserMessage("add things"),
        AssistantMessage([C("call_1", "add")]),
        UserMessage([R("call_1", "2")]),
    )
    assert len(response.messages) == 3
    assert AssistantMessage([Text("")]) not in response.messages
    assert response.usage == Usage(13, 9, 22)
    assert run.usage() == Usage(13, 9, 22)
    assert [c.usage for c in response.completion_calls] == [usage(10, 5), usage(3, 4)]


def test_s51_several_text_items_are_concatenated_without_separator() -> None:
    run = AgentRun("hello")
    expect_call_model(run)
    items = (Text("Hello"), Text(", "), Text("world"))
    expect_continue(run.model_response(turn(*items)))

    response = expect_done(run).response
    assert response.output == "Hello, world"
    assert response.content == items
    assert response.messages == (UserMessage("hello"), AssistantMessage(items))


def test_s52_annotated_empty_text_is_kept_in_history() -> None:
    run = AgentRun("hello")
    expect_call_model(run)
    annotated = Text("", additional_params={"signature": "abc"})
    expect_continue(run.model_response(turn(annotated)))

    response = expect_done(run).response
    assert response.output == ""
    assert response.content == (annotated,)
    assert response.messages == (UserMessage("hello"), AssistantMessage([annotated]))
    last = response.messages[-1]
    assert isinstance(last, AssistantMessage)
    assert last.content[0].additional_params == {"signature": "abc"}
