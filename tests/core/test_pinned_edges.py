"""Four behaviours the scenario suite did not pin (issue 12, item 13).

Each group is named by the mutant in `test_mutants.py` that must make it fail:

* `shared_id` — feedback reaches every call sharing the invalid id (spec §0.2 "retry result
  message": "Calls sharing the invalid id all receive the feedback"; §11 edge 10).
* `last_call` — the truncation guard reads the *last recorded* completion call (§8.2 step 2).
* `json_fields` — JSON text missing required fields is re-prompted in Tool output mode
  (§8.2 step 4: the text must be "a JSON document meeting the required fields").
* `first_output` — the first output-tool call wins (§8.1: "Take the **first** such call").

Results are compared by call id, name and text, never by whole-object equality.
"""

from __future__ import annotations

from typing import Any

import pytest

from app.core import (
    TOOL_NOT_EXECUTED_DUE_TO_INVALID_PEER,
    AgentRun,
    AssistantMessage,
    CompletionCall,
    CompletionError,
    ModelTurn,
    Reasoning,
    Repeat,
    Retry,
    Text,
    ToolResult,
    TurnRetried,
    Usage,
    UserMessage,
)
from app.core.midstream import PartialStreamedTurn, TurnAbandoned
from tests.core.support import (
    C,
    R,
    T,
    assert_no_orphan_tool_use,
    expect_call_model,
    expect_call_tools,
    expect_continue,
    expect_done,
    expect_needs_resolution,
    invalid_call,
    result_text,
    streamed,
    turn,
)

TNE = TOOL_NOT_EXECUTED_DUE_TO_INVALID_PEER
OUT = "final_result"
OUT_ALLOWED = frozenset({"add", OUT})
SCHEMA = {"type": "object", "required": ["summary"]}
PLAIN_TEXT_FEEDBACK = (
    "Provide your final answer by calling the `final_result` tool with the structured "
    "result as its arguments, not as plain text."
)
MISSING_SUMMARY = (
    "The `final_result` arguments were missing required field(s): summary. "
    "Call `final_result` again with every required field."
)
LENGTH_MESSAGE = (
    "the model produced no answer and stopped with finish_reason=Length; the turn ran out "
    "of output budget before producing one — raise max_tokens for this request"
)


def results_of(message: object) -> list[tuple[str, str, str]]:
    """(call id, name, text) of every tool result in a user message, in order."""
    assert isinstance(message, UserMessage), message
    out = []
    for item in message.content:
        assert isinstance(item, ToolResult), item
        out.append((item.call_id, item.name, result_text(item)))
    return out


def output_run(**kw: Any) -> AgentRun:
    return AgentRun("summarize", output_tool_name=OUT, **kw)


def out_turn(*items: Any) -> ModelTurn:
    return turn(*items, allowed=OUT_ALLOWED)


# --- shared_id: feedback reaches every call sharing the invalid id ------------------------


def test_shared_id_retry_feedback_reaches_both_invalid_calls_with_that_id() -> None:
    run = AgentRun("go", max_turns=2, max_invalid_tool_call_retries=1)
    expect_call_model(run)
    choice = (C("dup", "bad"), C("dup", "bad"), C("other", "add"))
    context = expect_needs_resolution(run.model_response(turn(*choice)))
    assert context.tool_call_id == "dup"

    assert run.resolve_invalid_tool_call(Retry("use add")) == TurnRetried()
    retry_message = run.messages()[-1]
    assert results_of(retry_message) == [
        ("dup", "bad", "use add"),
        ("dup", "bad", "use add"),
        ("other", "add", TNE),
    ]
    assert run.messages()[-2] == AssistantMessage(choice)
    assert expect_call_model(run).prompt == retry_message


def test_shared_id_retry_feedback_reaches_a_valid_peer_sharing_the_id() -> None:
    # The rule is by id, not by position: the valid `add` call shares the invalid id.
    run = AgentRun("go", max_turns=2, max_invalid_tool_call_retries=1)
    expect_call_model(run)
    context = expect_needs_resolution(run.model_response(turn(C("dup", "add"), C("dup", "bad"))))
    assert context.tool_name == "bad"

    assert run.resolve_invalid_tool_call(Retry("fb")) == TurnRetried()
    assert results_of(run.messages()[-1]) == [("dup", "add", "fb"), ("dup", "bad", "fb")]


def test_shared_id_output_reprompt_feedback_reaches_every_call_with_that_id() -> None:
    # §8.1 step 3 builds its message with the same §0.2 rule.
    run = output_run(max_turns=2, output_schema=SCHEMA, max_output_retries=1)
    expect_call_model(run)
    expect_continue(run.model_response(out_turn(C("dup", OUT), C("dup", "add"), C("o", "add"))))

    step = expect_call_model(run)
    assert step.turn == 2
    assert results_of(step.prompt) == [
        ("dup", OUT, MISSING_SUMMARY),
        ("dup", "add", MISSING_SUMMARY),
        ("o", "add", TNE),
    ]
    assert_no_orphan_tool_use((*step.history, step.prompt))


def test_shared_id_streamed_rollback_answers_validated_peers_with_peer_text() -> None:
    # Contrast (§6.6): the streamed rollback answers each already validated call with
    # TOOL_NOT_EXECUTED and appends the invalid call's feedback last, whatever the ids.
    run = AgentRun("go", max_turns=2, max_invalid_tool_call_retries=1)
    expect_call_model(run)
    partial = PartialStreamedTurn(pending_tool_calls=(C("dup", "add"),))
    resolution = run._resolve_streamed_invalid_tool_call(
        partial, invalid_call(C("dup", "bad")), Retry("fb")
    )
    assert resolution == TurnAbandoned(None)
    assert results_of(run.messages()[-1]) == [("dup", "add", TNE), ("dup", "bad", "fb")]


# --- last_call: the truncation guard reads the last recorded completion call --------------


def test_last_call_earlier_length_does_not_fail_a_later_empty_stop_turn() -> None:
    run = AgentRun("go", max_turns=2)
    expect_call_model(run)
    # A tool call is an answer, so this truncated turn passes the guard.
    expect_continue(run.model_response(turn(C("call_1"), finish_reason="length")))
    expect_call_tools(run)
    run.tool_results([R("call_1")])
    expect_call_model(run)
    expect_continue(run.model_response(turn(finish_reason="stop")))

    response = expect_done(run).response
    assert response.output == ""
    assert [c.finish_reason for c in response.completion_calls] == ["length", "stop"]


def test_last_call_later_length_fails_an_empty_turn_after_an_earlier_stop() -> None:
    run = AgentRun("go", max_turns=2)
    expect_call_model(run)
    expect_continue(run.model_response(turn(C("call_1"), finish_reason="stop")))
    expect_call_tools(run)
    run.tool_results([R("call_1")])
    expect_call_model(run)
    expect_continue(run.model_response(turn(finish_reason="length")))

    with pytest.raises(CompletionError) as info:
        run.next_step()
    assert info.value.message == LENGTH_MESSAGE
    assert run.status == "Failed"


def test_last_call_counts_a_rejected_turns_call_only_while_it_is_last() -> None:
    # Turn 1 (text, truncated) is rejected by the driver; turn 2 (reasoning only) stops.
    run = AgentRun("go", max_turns=2)
    expect_call_model(run)
    expect_continue(run.model_response(T("partial", finish_reason="length")))
    run.retry_model_turn(Repeat())
    expect_call_model(run)
    expect_continue(run.model_response(turn(Reasoning.of_text("hmm"), finish_reason="stop")))

    response = expect_done(run).response
    assert response.output == ""
    assert len(response.completion_calls) == 2


def test_last_call_streamed_guard_reads_the_recorded_call_not_the_turn() -> None:
    # The explicit record says "length"; the assembled turn's own reason is ignored.
    run = AgentRun("go")
    expect_call_model(run)
    recorded = run.record_streamed_completion_call(Usage(1, 2, 3), finish_reason="length")
    assert recorded == CompletionCall(0, Usage(1, 2, 3), finish_reason="length")
    run.streamed_turn(streamed(finish_reason="stop"))

    with pytest.raises(CompletionError) as info:
        run.next_step()
    assert info.value.message == LENGTH_MESSAGE


# --- json_fields: JSON text missing required fields is re-prompted ------------------------


@pytest.mark.parametrize(
    "text",
    [
        '{"x":1}',
        '{"Summary":"s"}',
        '{"x":{"summary":"nested"}}',
        '["summary"]',
        '"summary"',
        "null",
    ],
)
def test_json_fields_json_text_without_the_required_fields_is_reprompted(text: str) -> None:
    run = output_run(max_turns=2, output_schema=SCHEMA, max_output_retries=1)
    expect_call_model(run)
    expect_continue(run.model_response(T(text, allowed=OUT_ALLOWED)))

    step = expect_call_model(run)
    assert step.turn == 2
    assert step.prompt == UserMessage(PLAIN_TEXT_FEEDBACK)
    assert step.history == (UserMessage("summarize"), AssistantMessage([Text(text)]))
    assert not run.is_done()


def test_json_fields_every_required_field_is_checked() -> None:
    schema = {"type": "object", "required": ["summary", "score"]}
    run = output_run(max_turns=2, output_schema=schema, max_output_retries=1)
    expect_call_model(run)
    expect_continue(run.model_response(T('{"summary":"s"}', allowed=OUT_ALLOWED)))
    assert expect_call_model(run).prompt == UserMessage(PLAIN_TEXT_FEEDBACK)

    # The one re-prompt is spent: the same answer now finishes best-effort.
    expect_continue(run.model_response(T('{"summary":"s"}', allowed=OUT_ALLOWED)))
    assert expect_done(run).response.output == '{"summary":"s"}'
    assert run.turn() == 2


@pytest.mark.parametrize(
    "items",
    [
        (Text('{"summary":null}'),),
        (Text('\n  {"summary":"s","extra":1}  \n'),),
        (Text('{"summary":'), Text('"split"}')),
    ],
)
def test_json_fields_json_text_with_the_required_fields_is_accepted(items: Any) -> None:
    run = output_run(max_turns=2, output_schema=SCHEMA, max_output_retries=1)
    expect_call_model(run)
    expect_continue(run.model_response(out_turn(*items)))

    response = expect_done(run).response
    assert response.output == "".join(i.text for i in items)
    assert run.turn() == 1


# --- first_output: the first output-tool call wins ----------------------------------------


def test_first_output_first_of_two_output_calls_is_the_output() -> None:
    run = output_run(max_turns=2)
    expect_call_model(run)
    first = C("o1", OUT, {"summary": "first"})
    second = C("o2", OUT, {"summary": "second"})
    expect_continue(run.model_response(out_turn(Text("note"), C("a", "add"), first, second)))

    response = expect_done(run).response
    assert response.output == '{"summary":"first"}'
    assert response.output_tool_calls == 2
    assert response.content == (Text("note"), Text('{"summary":"first"}'))
    assert run.messages()[-1] == AssistantMessage([Text("note"), Text('{"summary":"first"}')])


def test_first_output_incomplete_first_call_is_reprompted_despite_a_complete_second() -> None:
    run = output_run(max_turns=2, output_schema=SCHEMA, max_output_retries=1)
    expect_call_model(run)
    first = C("o1", OUT, {"x": 1})
    second = C("o2", OUT, {"summary": "second"})
    expect_continue(run.model_response(out_turn(first, second)))

    step = expect_call_model(run)
    assert results_of(step.prompt) == [("o1", OUT, MISSING_SUMMARY), ("o2", OUT, TNE)]
    assert step.history[-1] == AssistantMessage([first, second])


def test_first_output_complete_first_call_wins_over_an_incomplete_second() -> None:
    run = output_run(max_turns=2, output_schema=SCHEMA, max_output_retries=1)
    expect_call_model(run)
    expect_continue(
        run.model_response(out_turn(C("o1", OUT, {"summary": "ok"}), C("o2", OUT, {"x": 1})))
    )

    response = expect_done(run).response
    assert response.output == '{"summary":"ok"}'
    assert run.turn() == 1
