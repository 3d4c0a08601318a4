"""§12 group B: model-turn retry via `retry_model_turn` (scenarios 13-18)."""

from __future__ import annotations

import pytest

from app.core import (
    AgentRun,
    AssistantMessage,
    CallModel,
    CompletionCall,
    Continue,
    Feedback,
    MaxTurnsError,
    PromptCancelled,
    ProtocolViolation,
    Repeat,
    Text,
    Usage,
    UserMessage,
)
from tests.core.support import (
    PV_PREFIX,
    C,
    T,
    expect_call_model,
    expect_continue,
    expect_done,
    expect_violation,
    turn,
    usage,
)

TOOL_TURN_RETRY = (
    "model-turn retry does not support tool-bearing model turns; use tool-call hooks instead"
)


def test_s13_repeat_discards_the_rejected_turn() -> None:
    run = AgentRun("question", max_turns=2)
    expect_call_model(run)
    expect_continue(run.model_response(T("rejected", usage=usage(10, 3))))

    assert run.retry_model_turn(Repeat()) is None
    assert run.status == "PreparingRequest"
    assert run.messages() == (UserMessage("question"),)

    step = run.next_step()
    assert step == CallModel(prompt=UserMessage("question"), history=(), turn=2)
    assert run.messages() == (UserMessage("question"),)

    expect_continue(run.model_response(T("accepted", usage=usage(7, 2))))
    response = expect_done(run).response
    assert response.output == "accepted"
    assert response.usage == Usage(17, 5, 22)
    assert response.completion_calls == (
        CompletionCall(call_index=0, usage=usage(10, 3)),
        CompletionCall(call_index=1, usage=usage(7, 2)),
    )
    assert response.messages == (UserMessage("question"), AssistantMessage([Text("accepted")]))
    assert response.content == (Text("accepted"),)
    assert "rejected" not in run.to_json()


def test_s14_feedback_records_turn_and_feedback() -> None:
    run = AgentRun("question", max_turns=2)
    expect_call_model(run)
    expect_continue(run.model_response(T("rejected")))

    assert run.retry_model_turn(Feedback("try another approach")) is None
    assert run.status == "PreparingRequest"

    step = run.next_step()
    assert step == CallModel(
        prompt=UserMessage("try another approach"),
        history=(UserMessage("question"), AssistantMessage([Text("rejected")])),
        turn=2,
    )
    assert run.messages() == (
        UserMessage("question"),
        AssistantMessage([Text("rejected")]),
        UserMessage("try another approach"),
    )


def test_s15_model_turn_retry_consumes_the_budget() -> None:
    run = AgentRun("question")
    expect_call_model(run)
    expect_continue(run.model_response(T("rejected")))
    run.retry_model_turn(Repeat())

    with pytest.raises(MaxTurnsError) as info:
        run.next_step()
    assert info.value.max_turns == 1
    assert info.value.prompt == UserMessage("question")
    assert info.value.chat_history == (UserMessage("question"),)
    assert len(run.completion_calls()) == 1
    assert run.turn() == 1
    assert run.status == "Failed"


def test_s16_tool_bearing_turn_cannot_be_retried() -> None:
    run = AgentRun("add things", max_turns=2)
    expect_call_model(run)
    expect_continue(run.model_response(turn(C("call_1", "add"))))

    with pytest.raises(PromptCancelled) as info:
        run.retry_model_turn(Feedback("try again"))
    err = info.value
    assert not isinstance(err, ProtocolViolation)
    assert err.reason == TOOL_TURN_RETRY
    assert "tool-bearing model turns" in err.reason
    assert "tool-call hooks" in err.reason
    assert str(err) == "PromptCancelled: " + TOOL_TURN_RETRY
    assert err.chat_history == (UserMessage("add things"),)
    assert run.messages() == (UserMessage("add things"),)
    assert run.status == "Failed"

    with pytest.raises(ProtocolViolation) as info2:
        run.next_step()
    assert info2.value.reason == (
        PV_PREFIX + "next_step called after the run already failed or was misdriven"
    )
    assert run.status == "Failed"


def test_s17_feedback_on_an_empty_turn_appends_only_the_feedback() -> None:
    run = AgentRun("question", max_turns=2)
    expect_call_model(run)
    assert run.model_response(turn()) == Continue(False)

    run.retry_model_turn(Feedback("f"))
    assert run.messages() == (UserMessage("question"), UserMessage("f"))
    assert run.status == "PreparingRequest"

    step = run.next_step()
    assert step == CallModel(prompt=UserMessage("f"), history=(UserMessage("question"),), turn=2)


def test_s18_retry_model_turn_in_wrong_state_is_refused() -> None:
    run = AgentRun("question", max_turns=2)
    expect_call_model(run)

    expect_violation(
        run,
        lambda: run.retry_model_turn(Repeat()),
        "retry_model_turn called without an accepted turn awaiting advancement",
    )
    assert run.status == "AwaitingModel"

    assert run.model_response(T("hi")) == Continue(False)
    assert expect_done(run).response.output == "hi"
