"""A tool result's `is_error` (schema version 2): written only when set, read back, refused
when not a boolean; version-1 documents are upgraded (the service's legacy text annotation
and the run's own skip / peer feedback become the flag)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.core import (
    AgentRun,
    Retry,
    Skip,
    StateDecodeError,
    Text,
    ToolResult,
    UserMessage,
)
from app.core.serde import tool_result_from, tool_result_to_dict
from tests.core.support import C, expect_call_model, expect_call_tools, turn
from tests.core.v1_states import STATES

FIXTURES = Path(__file__).parent / "fixtures"


def fixture(version: int, state: str) -> str:
    return (FIXTURES / f"v{version}_{state}.json").read_text().strip()


def test_flag_is_written_only_when_set_and_read_back() -> None:
    call = C("call_1", "add")
    plain = ToolResult.text(call, "2")
    failed = ToolResult.text(call, "boom", is_error=True)
    assert "is_error" not in tool_result_to_dict(plain)
    assert tool_result_to_dict(failed)["is_error"] is True
    assert tool_result_from(tool_result_to_dict(failed)) == failed
    assert tool_result_from(tool_result_to_dict(plain)) == plain


@pytest.mark.parametrize("bad", ["true", 1, None, [True]])
def test_a_flag_that_is_not_a_boolean_is_refused(bad: object) -> None:
    doc = tool_result_to_dict(ToolResult.text(C("call_1", "add"), "x"))
    doc["is_error"] = bad
    with pytest.raises(StateDecodeError, match="is_error` must be a boolean"):
        tool_result_from(doc)


def test_a_run_with_an_error_result_round_trips() -> None:
    run = AgentRun("add", max_turns=2)
    expect_call_model(run)
    run.model_response(turn(C("call_1", "add")))
    step = expect_call_tools(run)
    run.tool_results([ToolResult.text(step.calls[0].tool_call, "boom", is_error=True)])
    restored = AgentRun.from_json(run.to_json())
    result = restored.messages()[-1].content[0]
    assert isinstance(result, ToolResult) and result.is_error
    assert restored.to_json() == run.to_json()


def test_the_runs_own_feedback_is_flagged() -> None:
    run = AgentRun("add", max_turns=3, max_invalid_tool_call_retries=1)
    expect_call_model(run)
    run.model_response(turn(C("a", "add"), C("b", "bad")))
    run.resolve_invalid_tool_call(Retry("use add"))
    feedback = run.messages()[-1]
    assert isinstance(feedback, UserMessage)
    assert [(r.call_id, r.is_error) for r in feedback.content if isinstance(r, ToolResult)] == [
        ("a", True),
        ("b", True),
    ]
    expect_call_model(run)
    run.model_response(turn(C("c", "bad"), C("d", "add")))
    run.resolve_invalid_tool_call(Skip("no such tool"))
    calls = expect_call_tools(run).calls
    assert [c.preresolved_result.is_error for c in calls if c.preresolved_result] == [True, True]


@pytest.mark.parametrize("state", sorted(STATES))
def test_v1_fixture_upgrades_to_what_this_release_writes(state: str) -> None:
    """The v1 skipped / preresolved results were the run's own feedback: flagged on load."""
    assert AgentRun.from_json(fixture(1, state)).to_json() == fixture(2, state)


def test_v1_legacy_text_annotation_is_lifted_to_the_flag() -> None:
    """Before v2 the service stored a client's `is_error` as the text's annotation, which no
    wire sent: on load it becomes the result's flag and leaves the text."""
    doc = json.loads(fixture(1, "Done"))
    messages = doc["new_messages"]
    results = [c for m in messages if m["role"] == "user" for c in m["content"]]
    legacy = next(c for c in results if c.get("type") == "toolresult")
    legacy["content"][0]["additional_params"] = {"is_error": True}
    other = next(c for c in results if c.get("type") == "toolresult" and c is not legacy)
    other["content"][0]["additional_params"] = {"is_error": True, "lang": "en"}
    run = AgentRun.from_json(json.dumps(doc))
    lifted = [
        c
        for m in run.messages()
        if isinstance(m, UserMessage)
        for c in m.content
        if isinstance(c, ToolResult)
    ]
    assert [r.is_error for r in lifted] == [True, True]
    assert lifted[0].content == (Text(legacy["content"][0]["text"]),)
    assert lifted[1].content == (Text(other["content"][0]["text"], {"lang": "en"}),)


def test_v1_annotation_false_is_not_an_error() -> None:
    doc = json.loads(fixture(1, "Done"))
    for m in doc["new_messages"]:
        for c in m["content"] if m["role"] == "user" else ():
            if c.get("type") == "toolresult":
                c["content"][0]["additional_params"] = {"is_error": False}
    run = AgentRun.from_json(json.dumps(doc))
    results = [
        c
        for m in run.messages()
        if isinstance(m, UserMessage)
        for c in m.content
        if isinstance(c, ToolResult)
    ]
    assert results and not any(r.is_error for r in results)
    assert all(r.content[0].additional_params == {"is_error": False} for r in results)  # type: ignore[union-attr]
