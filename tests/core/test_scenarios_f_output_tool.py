"""§12 group F: Tool output mode (scenarios 53-62).

Every run here has `output_tool_name="final_result"`; turns advertise executable {"add"}
and allowed {"add", "final_result"}.
"""

from __future__ import annotations

import json
from typing import Any

from app.core import (
    TOOL_NOT_EXECUTED_DUE_TO_INVALID_PEER,
    AgentRun,
    AssistantMessage,
    CallModel,
    Continue,
    ModelTurn,
    Text,
    ToolCall,
    ToolResult,
    UserMessage,
)
from tests.core.support import (
    C,
    R,
    T,
    assert_no_orphan_tool_use,
    expect_call_model,
    expect_call_tools,
    expect_continue,
    expect_done,
    result_text,
    tool_call_ids,
    turn,
)

OUTPUT = "final_result"
ALLOWED = frozenset({"add", OUTPUT})
SCHEMA = {
    "type": "object",
    "required": ["summary"],
    "properties": {"summary": {"type": "string"}},
}
PLAIN_TEXT_FEEDBACK = (
    "Provide your final answer by calling the `final_result` tool with the structured "
    "result as its arguments, not as plain text."
)
MISSING_SUMMARY_FEEDBACK = (
    "The `final_result` arguments were missing required field(s): summary. "
    "Call `final_result` again with every required field."
)


def out_turn(*items: Any) -> ModelTurn:
    return turn(*items, allowed=ALLOWED)


def out_text(text: str) -> ModelTurn:
    return T(text, allowed=ALLOWED)


def test_s53_output_tool_call_finalises_the_run() -> None:
    run = AgentRun("summarize", output_tool_name=OUTPUT)
    expect_call_model(run)
    assert run.model_response(out_turn(C("call_1", OUTPUT))) == Continue(False)

    response = expect_done(run).response
    assert response.output == '{"x":1}'
    assert response.content == (Text('{"x":1}'),)
    assert response.output_tool_calls == 1
    assert run.is_done()
    assert response.messages == (
        UserMessage("summarize"),
        AssistantMessage([Text('{"x":1}')]),
    )
    last = response.messages[-1]
    assert isinstance(last, AssistantMessage)
    assert "".join(i.text for i in last.content if isinstance(i, Text)) == '{"x":1}'
    assert_no_orphan_tool_use(response.messages)
    assert tool_call_ids(response.messages) == []


def test_s54_scalar_output_stays_valid_json() -> None:
    run = AgentRun("summarize", output_tool_name=OUTPUT)
    expect_call_model(run)
    expect_continue(run.model_response(out_turn(C("call_1", OUTPUT, "complete"))))

    response = expect_done(run).response
    assert response.output == '"complete"'
    assert json.loads(response.output) == "complete"
    assert response.messages is not None
    assert response.messages[-1] == AssistantMessage([Text('"complete"')])
    assert_no_orphan_tool_use(response.messages)


def test_s55_output_tool_wins_over_sibling_real_calls() -> None:
    run = AgentRun("do it", max_turns=2, output_tool_name=OUTPUT)
    expect_call_model(run)
    expect_continue(run.model_response(out_turn(C("call_1", "add"), C("call_2", OUTPUT))))

    # `add` is never executed: the very next step is Done, not CallTools.
    response = expect_done(run).response
    assert response.output == '{"x":1}'
    assert response.output_tool_calls == 1
    assert run.is_done()
    assert run.turn() == 1
    assert response.messages == (UserMessage("do it"), AssistantMessage([Text('{"x":1}')]))
    assert tool_call_ids(response.messages) == []
    assert_no_orphan_tool_use(response.messages)
    assert not any(
        isinstance(item, ToolResult)
        for m in response.messages
        if isinstance(m, UserMessage)
        for item in m.content
    )


def test_s56_real_tools_still_run_with_an_output_tool_configured() -> None:
    run = AgentRun("add things", max_turns=2, output_tool_name=OUTPUT)
    expect_call_model(run)
    expect_continue(run.model_response(out_turn(C("call_1", "add"))))

    calls = expect_call_tools(run).calls
    assert len(calls) == 1
    assert calls[0].tool_call == C("call_1", "add")
    assert calls[0].preresolved_result is None
    assert run.status == "ExecutingTools"


def test_s57_plain_text_answer_is_reprompted() -> None:
    run = AgentRun(
        "summarize",
        max_turns=2,
        output_tool_name=OUTPUT,
        output_schema=SCHEMA,
        max_output_retries=1,
    )
    expect_call_model(run)
    expect_continue(run.model_response(out_text("here is the answer")))

    step = run.next_step()
    assert step == CallModel(
        prompt=UserMessage(PLAIN_TEXT_FEEDBACK),
        history=(UserMessage("summarize"), AssistantMessage([Text("here is the answer")])),
        turn=2,
    )
    assert OUTPUT in PLAIN_TEXT_FEEDBACK
    assert not run.is_done()
    assert run.status == "AwaitingModel"
    assert run.turn() == 2


def test_s58_missing_required_fields_are_reprompted() -> None:
    run = AgentRun(
        "summarize",
        max_turns=2,
        output_tool_name=OUTPUT,
        output_schema=SCHEMA,
        max_output_retries=1,
    )
    expect_call_model(run)
    expect_continue(run.model_response(out_turn(C("call_1", OUTPUT))))

    step = expect_call_model(run)
    assert step.turn == 2
    assert step.prompt == UserMessage(
        [ToolResult("call_1", OUTPUT, (Text(MISSING_SUMMARY_FEEDBACK),), "call_1", is_error=True)]
    )
    assert isinstance(step.prompt, UserMessage)
    only = step.prompt.content[0]
    assert isinstance(only, ToolResult)
    assert only.call_id == "call_1"
    assert "The `final_result` arguments were missing required field(s): summary." in (
        result_text(only)
    )
    assert step.history == (UserMessage("summarize"), AssistantMessage([C("call_1", OUTPUT)]))
    assert_no_orphan_tool_use(run.messages())
    assert not run.is_done()


def test_s59_valid_json_text_is_accepted_without_reprompt() -> None:
    run = AgentRun(
        "summarize",
        max_turns=3,
        output_tool_name=OUTPUT,
        output_schema=SCHEMA,
        max_output_retries=1,
    )
    expect_call_model(run)
    expect_continue(run.model_response(out_text('{"summary":"all good"}')))

    response = expect_done(run).response
    assert response.output == '{"summary":"all good"}'
    assert response.output_tool_calls == 0
    assert run.is_done()
    assert run.turn() == 1


def test_s60_exhausted_model_call_budget_finalises_best_effort() -> None:
    run = AgentRun(
        "summarize",
        max_turns=1,
        output_tool_name=OUTPUT,
        output_schema=SCHEMA,
        max_output_retries=1,
    )
    expect_call_model(run)
    expect_continue(run.model_response(out_text("invalid output")))

    response = expect_done(run).response
    assert response.output == "invalid output"
    assert response.messages == (
        UserMessage("summarize"),
        AssistantMessage([Text("invalid output")]),
    )
    assert run.turn() == 1
    assert run.status == "Done"


def test_s61_zero_output_retries_finalises_best_effort() -> None:
    run = AgentRun(
        "summarize",
        max_turns=3,
        output_tool_name=OUTPUT,
        output_schema=SCHEMA,
        max_output_retries=0,
    )
    expect_call_model(run)
    expect_continue(run.model_response(out_turn(C("call_1", OUTPUT))))

    response = expect_done(run).response
    assert response.output == '{"x":1}'
    assert response.messages == (UserMessage("summarize"), AssistantMessage([Text('{"x":1}')]))
    assert_no_orphan_tool_use(response.messages)
    assert run.turn() == 1


def test_s62_output_retries_reset_by_real_tool_turns() -> None:
    run = AgentRun(
        "summarize",
        max_turns=5,
        output_tool_name=OUTPUT,
        output_schema=SCHEMA,
        max_output_retries=1,
    )
    expect_call_model(run)
    expect_continue(run.model_response(out_text("a")))

    first = expect_call_model(run)
    assert first.turn == 2
    assert first.prompt == UserMessage(PLAIN_TEXT_FEEDBACK)

    expect_continue(run.model_response(out_turn(C("t1", "add"))))
    calls = expect_call_tools(run).calls
    assert [c.tool_call.id for c in calls] == ["t1"]
    run.tool_results([R("t1", "2")])
    assert expect_call_model(run).turn == 3

    expect_continue(run.model_response(out_text("b")))
    second = expect_call_model(run)
    assert second.turn == 4
    assert second.prompt == UserMessage(PLAIN_TEXT_FEEDBACK)
    assert run.messages() == (
        UserMessage("summarize"),
        AssistantMessage([Text("a")]),
        UserMessage(PLAIN_TEXT_FEEDBACK),
        AssistantMessage([C("t1", "add")]),
        UserMessage([R("t1", "2")]),
        AssistantMessage([Text("b")]),
        UserMessage(PLAIN_TEXT_FEEDBACK),
    )

    final = ToolCall("call_f", OUTPUT, {"summary": "ok"}, provider_call_id="call_f")
    expect_continue(run.model_response(out_turn(final)))
    response = expect_done(run).response
    assert response.output == '{"summary":"ok"}'
    assert run.turn() == 4
    assert TOOL_NOT_EXECUTED_DUE_TO_INVALID_PEER not in run.to_json()
