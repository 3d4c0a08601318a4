"""Construction rules of the content and step types: what a value holds is what it writes.

Upstream normalises at construction (an empty `additional_params` map is absent, an empty
provider call id is no id); a Python caller can also pass a wrong type, which Rust's types
rule out, so those are refused before any run sees them.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from app.core import (
    AgentRun,
    AssistantMessage,
    CompletionCall,
    Feedback,
    Image,
    ModelTurn,
    PendingToolCall,
    Reasoning,
    ReasoningBlock,
    Repair,
    Retry,
    Skip,
    Stop,
    StreamedTurn,
    SystemMessage,
    Text,
    ToolCall,
    ToolChoice,
    ToolResult,
    Usage,
    UserMessage,
)
from app.core.midstream import StreamedInvalidToolCall
from app.core.serde import message_to_dict, tool_result_to_dict
from tests.core.support import (
    R,
    expect_call_model,
    expect_continue,
    expect_done,
    run_to_pending_tools,
    turn,
)

# --- item 7: an empty additional_params map is absent ----------------------------------------


@pytest.mark.parametrize("params", [None, {}])
def test_empty_params_are_absent_at_construction(params: Any) -> None:
    assert Text("", params).additional_params is None
    assert Text("", params) == Text("")
    assert Image("data", additional_params=params).additional_params is None


def test_an_empty_annotated_text_turn_is_an_empty_turn_before_and_after_a_reload() -> None:
    """The bug: `{}` kept in memory made the turn non-empty (recorded in history), while
    the reloaded run (which never saw `{}`) skipped it."""
    live = AgentRun("q")
    expect_call_model(live)
    expect_continue(live.model_response(turn(Text("", {}))))
    reloaded = AgentRun.from_json(live.to_json())
    for run in (live, reloaded):
        response = expect_done(run).response
        assert response.messages == (UserMessage("q"),)
        assert response.output == ""
    assert live.to_json() == reloaded.to_json()


def test_a_non_empty_annotation_is_kept_and_makes_the_turn_count() -> None:
    run = AgentRun("q")
    expect_call_model(run)
    expect_continue(run.model_response(turn(Text("", {"type": "refusal"}))))
    messages = expect_done(run).response.messages
    assert messages is not None and len(messages) == 2
    doc = json.loads(run.to_json())
    assert doc["new_messages"][1]["content"][0]["additional_params"] == {"type": "refusal"}


@pytest.mark.parametrize("params", [[], "x", 1, [{"a": 1}]])
def test_params_that_are_not_objects_are_refused(params: Any) -> None:
    with pytest.raises(ValueError, match="must be a JSON object or None"):
        Text("t", params)
    with pytest.raises(ValueError, match="must be a JSON object or None"):
        Image("d", additional_params=params)


# --- item 8: an empty provider call id is no provider id ------------------------------------


def test_an_empty_provider_call_id_on_a_result_is_none_as_on_a_call() -> None:
    result = ToolResult("c1", "add", (Text("2"),), provider_call_id="", provider_item_id="fc_1")
    assert result.provider_call_id is None
    assert result.provider_item_id is None  # no item id without a call id (upstream's shape)
    assert "provider" not in tool_result_to_dict(result)
    call = ToolCall("c1", "add", {}, provider_call_id="", provider_item_id="fc_1")
    assert (call.provider_call_id, call.provider_item_id) == (None, None)


def test_an_empty_provider_item_id_is_none() -> None:
    result = ToolResult("c1", "add", (), provider_call_id="call_1", provider_item_id="")
    assert result.provider_item_id is None
    assert tool_result_to_dict(result)["provider"] == {"call_id": "call_1"}


def test_a_run_answered_with_an_empty_provider_id_reloads() -> None:
    """The bug: the result was accepted and written, and then `from_json` refused the run."""
    run = AgentRun("q", max_turns=2)
    run_to_pending_tools(run, turn(ToolCall("c1", "add", {"x": 1})))
    run.tool_results([ToolResult("c1", "add", (Text("2"),), provider_call_id="")])
    restored = AgentRun.from_json(run.to_json())
    assert restored.messages() == run.messages()
    assert restored.to_json() == run.to_json()


# --- wrong types are refused at construction -----------------------------------------------

WRONG: dict[str, Any] = {
    "Text.text": lambda: Text(5),
    "Text.text None": lambda: Text(None),
    "Image.data": lambda: Image(b"raw"),
    "Image.media_type": lambda: Image("d", 3),
    "ReasoningBlock.text": lambda: ReasoningBlock("text", None),
    "Reasoning.content": lambda: Reasoning((Text("x"),)),
    "Reasoning.id": lambda: Reasoning((), 7),
    "ToolCall.id": lambda: ToolCall(None, "add"),
    "ToolCall.name": lambda: ToolCall("c1", None),
    "ToolCall.provider_call_id": lambda: ToolCall("c1", "add", provider_call_id=1),
    "ToolCall.signature": lambda: ToolCall("c1", "add", signature=b"s"),
    "ToolResult.call_id": lambda: ToolResult(1, "add", ()),
    "ToolResult.name": lambda: ToolResult("c1", None, ()),
    "ToolResult.content": lambda: ToolResult("c1", "add", ("plain text",)),
    "ToolResult.content iterable": lambda: ToolResult("c1", "add", "plain text"),
    "SystemMessage.content": lambda: SystemMessage(["x"]),
    "UserMessage.content": lambda: UserMessage([ToolCall("c1", "add")]),
    "AssistantMessage.content": lambda: AssistantMessage([R("c1")]),
    "AssistantMessage.id": lambda: AssistantMessage("hi", 3),
    "Usage.input_tokens": lambda: Usage("3"),
    "Usage.bool": lambda: Usage(True),
    "Usage.float": lambda: Usage(2.0),
    "ToolChoice.function_names": lambda: ToolChoice.specific([1]),
    "CompletionCall.call_index": lambda: CompletionCall("0"),
    "CompletionCall.usage": lambda: CompletionCall(0, usage=None),
    "ModelTurn.choice": lambda: ModelTurn((R("c1"),)),
    "ModelTurn.names": lambda: ModelTurn((), allowed_tool_names=frozenset({1})),
    "ModelTurn.names str": lambda: ModelTurn((), allowed_tool_names="add"),
    "ModelTurn.finish_reason": lambda: ModelTurn((), finish_reason=1),
    "ModelTurn.usage": lambda: ModelTurn((), usage=(1, 2)),
    "PendingToolCall.tool_call": lambda: PendingToolCall(R("c1")),
    "StreamedTurn.internal_call_ids": lambda: StreamedTurn((), internal_call_ids=(("a", 1),)),
    "StreamedInvalidToolCall.internal_call_id": lambda: StreamedInvalidToolCall(
        ToolCall("c1", "x"), None
    ),
    "Retry.feedback": lambda: Retry(None),
    "Repair.tool_name": lambda: Repair(1),
    "Skip.reason": lambda: Skip(None),
    "Stop.reason": lambda: Stop(b"x"),
    "Feedback.text": lambda: Feedback(["x"]),
}


@pytest.mark.parametrize("case", sorted(WRONG))
def test_wrong_types_are_refused_at_construction(case: str) -> None:
    with pytest.raises(TypeError, match=case.split(" ")[0].split(".")[0]):
        WRONG[case]()


IMPOSSIBLE: dict[str, Any] = {
    "negative usage": lambda: Usage(-1),
    "usage beyond u64": lambda: Usage(2**64),
    "unknown reasoning kind": lambda: ReasoningBlock("thought", "x"),  # type: ignore[arg-type]
    "signature on a summary": lambda: ReasoningBlock("summary", "x", "sig"),
    "names on auto": lambda: ToolChoice("auto", ("add",)),
    "unknown tool choice": lambda: ToolChoice("any"),  # type: ignore[arg-type]
    "lone surrogate text": lambda: Text("\ud800"),
    "pair that is not a pair": lambda: StreamedTurn((), internal_call_ids=(("a", "b", "c"),)),
}


@pytest.mark.parametrize("case", sorted(IMPOSSIBLE))
def test_impossible_values_are_refused_at_construction(case: str) -> None:
    with pytest.raises(ValueError):
        IMPOSSIBLE[case]()


def test_everything_constructible_round_trips_through_the_message_encoding() -> None:
    from app.core.serde import message_from

    message = AssistantMessage(
        [
            Reasoning(
                (
                    ReasoningBlock("text", "t", "sig"),
                    ReasoningBlock("summary", "s"),
                    ReasoningBlock("encrypted", "e"),
                    ReasoningBlock("redacted", "r"),
                ),
                "rs_1",
            ),
            Text("hi", {"citations": [1]}),
            ToolCall("c1", "add", {"x": 1}, "call_1", "fc_1", "sig", {"p": 1}),
            Image("data", "image/png", "low", {"k": "v"}),
        ],
        "msg_1",
    )
    assert message_from(json.loads(json.dumps(message_to_dict(message)))) == message
