"""Compaction's plan (`app.compaction.plan`), on arbitrary conversations: it never parts
a tool call from its result, keeps every system and user message verbatim and in order,
keeps the recent turns and the prompt as they are, and compacting again without a new
turn does nothing."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.compaction.plan import (
    SUMMARY_PREFIX,
    Plan,
    call_result_pairs,
    estimate_tokens,
    is_summary,
    plan,
    summary_message,
    transcript,
    verbatim,
)
from app.core import (
    AssistantMessage,
    Message,
    Reasoning,
    SystemMessage,
    Text,
    ToolCall,
    ToolResult,
    UserMessage,
)

WORDS = st.text(alphabet="abcdefgh xyz", min_size=1, max_size=12)


@st.composite
def conversations(draw: st.DrawFn) -> list[Message]:
    """System and user messages, earlier summaries, and model turns: text, reasoning and
    up to three tool calls, whose results follow in one message or several (a user's
    message may come between), or never (a call left unanswered)."""
    out: list[Message] = []
    calls = 0
    for kind in draw(st.lists(st.sampled_from("ssuuuttttttS"), max_size=30)):
        if kind == "s":
            out.append(SystemMessage(draw(WORDS)))
        elif kind == "u":
            out.append(UserMessage(draw(WORDS)))
        elif kind == "S":
            out.append(summary_message(draw(WORDS)))
        else:
            n = draw(st.integers(0, 3))
            turn_calls = [ToolCall(f"call_{calls + k}", "look", {"k": k}) for k in range(n)]
            calls += n
            content: list[Text | ToolCall | Reasoning] = []
            if draw(st.booleans()):
                content.append(Reasoning.of_text(draw(WORDS)))
            if draw(st.booleans()) or not turn_calls:
                content.append(Text(draw(WORDS)))
            out.append(AssistantMessage([*content, *turn_calls]))
            results = [ToolResult.text(c, draw(WORDS)) for c in turn_calls]
            if draw(st.booleans()):
                results = results[: draw(st.integers(0, len(results)))]
            if draw(st.booleans()) and len(results) > 1:
                out.append(UserMessage(results[:1]))
                if draw(st.booleans()):
                    out.append(UserMessage(draw(WORDS)))
                out.append(UserMessage(results[1:]))
            elif results:
                out.append(UserMessage(results))
    out.append(UserMessage(draw(WORDS)))  # (the prompt the next call answers)
    return out


def subsequence(part: Sequence[Message], whole: Sequence[Message]) -> bool:
    it = iter(whole)
    return all(any(m is w for w in it) for m in part)


def check_plan(conversation: list[Message], planned: Plan, keep: int) -> tuple[Message, ...]:
    summary = summary_message("what happened")
    after = planned.apply(conversation, summary)
    n = planned.recent
    # Every position before the recent turns is kept or summarised, once.
    assert sorted(planned.kept + planned.summarised) == list(range(n))
    assert all(verbatim(conversation[i]) for i in planned.kept)
    assert not any(verbatim(conversation[i]) for i in planned.summarised)
    assert any(isinstance(conversation[i], AssistantMessage) for i in planned.summarised)
    # The recent turns (at least `keep`, from an assistant message) and the prompt stay.
    assert isinstance(conversation[n], AssistantMessage)
    recent_turns = sum(isinstance(m, AssistantMessage) for m in conversation[n:])
    assert recent_turns >= keep
    assert after[-(len(conversation) - n) :] == tuple(conversation[n:])
    assert after[-1] is conversation[-1]
    assert after[len(planned.kept)] is summary
    # Every system and user message (no tool result, no earlier summary) is kept, in order.
    plain = [m for m in conversation if verbatim(m)]
    assert subsequence(plain, after)
    assert [m for m in after if verbatim(m)] == plain
    # No call parted from its result: a pair is summarised together or kept together.
    for call, result in call_result_pairs(conversation):
        assert (call < n) == (result < n), (call, result, n)
    for call, result in call_result_pairs(after):
        assert call < result
    return after


@settings(max_examples=400, deadline=None)
@given(conversations(), st.integers(1, 4))
def test_a_plan_keeps_calls_with_results_and_every_user_message(
    conversation: list[Message], keep: int
) -> None:
    planned = plan(conversation, keep)
    turns = [i for i, m in enumerate(conversation) if isinstance(m, AssistantMessage)]
    if planned is None:  # (nothing but an earlier summary would be summarised)
        if len(turns) > keep:
            start = turns[-keep]
            pairs = call_result_pairs(conversation)
            while split := [c for c, r in pairs if c < start <= r]:
                start = min(split)
            assert not any(isinstance(m, AssistantMessage) for m in conversation[:start])
        return
    after = check_plan(conversation, planned, keep)
    # Compacted again without a new turn: nothing to do (no loop of compactions).
    assert plan(after, keep) is None
    # One more turn, and the next compaction summarises it with the summary.
    grown = [*after[:-1], after[-1], AssistantMessage("more"), UserMessage("and more")]
    again = plan(grown, keep)
    if again is not None:
        check_plan(grown, again, keep)
        assert any(is_summary(grown[i]) for i in again.summarised)


def test_a_short_conversation_is_not_compacted() -> None:
    conversation: list[Message] = [
        SystemMessage("rules"),
        UserMessage("hi"),
        AssistantMessage("hello"),
        UserMessage("more"),
    ]
    assert plan(conversation, 1) is None  # (one turn: it is the recent one)
    with pytest.raises(ValueError):
        plan(conversation, 0)


def test_the_boundary_moves_back_to_a_call_whose_result_comes_later() -> None:
    early = ToolCall("c1", "look", {})
    conversation: list[Message] = [
        UserMessage("start"),
        AssistantMessage("one"),
        AssistantMessage([early]),
        AssistantMessage("three"),
        UserMessage([ToolResult.text(early, "late")]),
        AssistantMessage("four"),
        UserMessage("prompt"),
    ]
    planned = plan(conversation, 2)
    assert planned == Plan(kept=(0,), summarised=(1,), recent=2)


def test_the_estimate_counts_the_json_text() -> None:
    small = estimate_tokens(None, [], [UserMessage("hi")])
    big = estimate_tokens("be brief", [{"name": "look"}], [UserMessage("hi" * 400)])
    assert 1 <= small < 20 and big > small + 200


def test_the_transcript_marks_what_is_kept_and_drops_reasoning() -> None:
    call = ToolCall("c1", "look", {"q": "x"})
    conversation: list[Message] = [
        SystemMessage("rules"),
        summary_message("before"),
        UserMessage("question"),
        AssistantMessage([Reasoning.of_text("secret thoughts"), Text("let me look"), call]),
        UserMessage([ToolResult.text(call, "found it", is_error=True)]),
        AssistantMessage("recent"),
        UserMessage("prompt"),
    ]
    planned = plan(conversation, 1)
    assert planned is not None
    text = transcript(conversation, planned)
    assert "[kept verbatim] system: rules" in text
    assert "earlier summary: before" in text and SUMMARY_PREFIX not in text
    assert '[called look with {"q":"x"}]' in text
    assert "[result of look (an error): found it]" in text
    assert "secret" not in text and "recent" not in text
