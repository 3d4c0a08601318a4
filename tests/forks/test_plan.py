"""The pure parts of a fork, over arbitrary conversations (hypothesis): a place either
gives the first N messages unchanged or is refused naming a call it would part from its
result; checkpoints are such places, in order, their turns counting the model calls."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.core import (
    AssistantMessage,
    CompletionCall,
    Message,
    Text,
    ToolCall,
    ToolResult,
    Usage,
    UserMessage,
)
from app.forks.checkpoints import calls_of, list_checkpoints, open_calls, results_of
from app.forks.plan import SplitCall, patched
from app.forks.specs import ForkPatch
from app.service.errors import InvalidRequest


@st.composite
def conversations(draw: Any) -> list[Message]:
    """A prompt, then turns: the model's text, or its calls answered in one message or
    spread over several (with user text in between, as a given history may hold)."""
    out: list[Message] = [UserMessage("go")]
    n = 0
    for _ in range(draw(st.integers(0, 6))):
        calls = draw(st.integers(0, 3))
        if calls == 0:
            out.append(AssistantMessage("thinking", f"m{len(out)}"))
            out.append(UserMessage("and?"))
            continue
        made = [ToolCall(f"c{n + i}", "t", {"i": i}) for i in range(calls)]
        n += calls
        out.append(AssistantMessage(made, f"m{len(out)}"))
        results = [ToolResult.for_call(c, (Text("ok"),)) for c in made]
        if draw(st.booleans()) and calls > 1:
            out.append(UserMessage(results[:1]))
            out.append(UserMessage(results[1:]))
        else:
            out.append(UserMessage(results))
    return out


@settings(max_examples=200, deadline=None)
@given(conversations(), st.data())
def test_a_place_is_the_first_n_messages_or_refused_naming_a_call(
    history: list[Message], data: st.DataObject
) -> None:
    seq = data.draw(st.integers(1, len(history)))
    prefix = history[:seq]
    try:
        got = patched(prefix, None, seq)
    except SplitCall as exc:
        waiting = open_calls(prefix)
        assert exc.call_id in {c.id for c in waiting}
        last = {c.id for c in calls_of(prefix[-1])}
        assert any(c.id not in last for c in waiting) or len(waiting) != len(last)
        return
    except InvalidRequest as exc:
        assert isinstance(prefix[-1], AssistantMessage) and "answer" in str(exc)
        return
    assert got == prefix
    waiting = open_calls(got)
    assert {c.id for c in waiting} <= {c.id for c in calls_of(got[-1])}


@settings(max_examples=200, deadline=None)
@given(conversations())
def test_checkpoints_are_valid_places_in_order(history: list[Message]) -> None:
    answers = [m for m in history if isinstance(m, AssistantMessage)]
    calls = [
        CompletionCall(i, Usage(input_tokens=1), message_id=m.id) for i, m in enumerate(answers)
    ]
    found = list_checkpoints(history, 0, calls)
    seqs = [c.seq for c in found]
    assert seqs == sorted(set(seqs)) and seqs[0] == 1
    for c in found:
        prefix = history[: c.seq]
        assert c.turn == sum(isinstance(m, AssistantMessage) for m in prefix)
        assert c.usage.input_tokens == c.turn
        if c.kind == "answer":
            continue  # (a fork from it needs a message appended)
        assert patched(prefix, None, c.seq) == prefix
        assert (c.kind == "tool_calls") == bool(calls_of(prefix[-1]))


def test_a_patch_replaces_a_result_in_place_and_answers_a_suspension() -> None:
    call = ToolCall("c1", "t", {})
    history: list[Message] = [
        UserMessage("go"),
        AssistantMessage([call], "m1"),
        UserMessage([ToolResult.for_call(call, (Text("old"),))]),
    ]
    patch = ForkPatch.model_validate({"tool_results": [{"tool_call_id": "c1", "output": "new"}]})
    got = patched(history, patch, 3)
    assert got[:2] == history[:2]
    assert results_of(got[2])[0].content == (Text("new"),)
    answered = patched(history[:2], patch, 2)
    assert len(answered) == 3 and results_of(answered[2])[0].content == (Text("new"),)
    with pytest.raises(SplitCall):
        patched(
            history[:2], ForkPatch.model_validate({"append": [{"role": "user", "content": "x"}]}), 2
        )
    with pytest.raises(InvalidRequest):
        patched(
            history,
            ForkPatch.model_validate({"tool_results": [{"tool_call_id": "c9", "output": 1}]}),
            3,
        )


def test_an_appended_call_reusing_an_id_is_refused() -> None:
    call = ToolCall("c1", "t", {})
    history: list[Message] = [
        UserMessage("go"),
        AssistantMessage([call], "m1"),
        UserMessage([ToolResult.for_call(call, (Text("ok"),))]),
    ]
    again = {"type": "toolcall", "id": "c1", "function": {"name": "t", "arguments": {}}}
    patch = ForkPatch.model_validate(
        {"append": [{"role": "user", "content": "more"}, {"role": "assistant", "content": [again]}]}
    )
    with pytest.raises(InvalidRequest, match="c1 is used twice"):
        patched(history, patch, 3)
