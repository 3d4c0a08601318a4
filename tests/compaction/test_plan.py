"""Compaction's plan (`app.compaction.plan`), on arbitrary conversations: it never parts
a tool call from its result, keeps every system and user message verbatim and in order
(the user's own part of a message that also holds tool results too), keeps the recent
turns and the prompt as they are, keeps a run's given history apart from its own
messages, and compacting again without a new turn does nothing."""

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
    fresh_tokens,
    is_summary,
    plan,
    summary_message,
    transcript,
    user_part,
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
    message may come between, or share a message with them), or never (a call left
    unanswered)."""
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
            elif results and draw(st.booleans()):  # (the user's words beside the results)
                out.append(UserMessage([*results, Text(draw(WORDS))]))
            elif results:
                out.append(UserMessage(results))
    out.append(UserMessage(draw(WORDS)))  # (the prompt the next call answers)
    return out


def kept_whole_or_in_part(message: Message) -> Message | None:
    """What of a message older than the recent turns stays in the conversation."""
    return message if verbatim(message) else user_part(message)


def subsequence(part: Sequence[Message], whole: Sequence[Message]) -> bool:
    it = iter(whole)
    return all(any(m is w for w in it) for m in part)


def check_plan(conversation: list[Message], planned: Plan, keep: int) -> tuple[Message, ...]:
    summary = summary_message("what happened")
    after = planned.apply(conversation, summary)
    n = planned.recent
    # Every position before the recent turns is kept or summarised; only a user message
    # with both tool results and the user's own words is both (its parts).
    assert sorted(set(planned.kept) | set(planned.summarised)) == list(range(n))
    both = set(planned.kept) & set(planned.summarised)
    assert all(user_part(conversation[i]) is not None for i in both)
    assert all(kept_whole_or_in_part(conversation[i]) for i in planned.kept)
    assert not any(verbatim(conversation[i]) for i in planned.summarised)
    assert any(isinstance(conversation[i], AssistantMessage) for i in planned.summarised)
    # The recent turns (at least `keep`, from an assistant message) and the prompt stay.
    assert isinstance(conversation[n], AssistantMessage)
    recent_turns = sum(isinstance(m, AssistantMessage) for m in conversation[n:])
    assert recent_turns >= keep
    assert after[-(len(conversation) - n) :] == tuple(conversation[n:])
    assert after[-1] is conversation[-1]
    assert after[len(planned.kept)] is summary
    # Every system and user message (no tool result, no earlier summary) is kept, in order,
    # and so are the user's own words beside tool results.
    plain = [m for m in conversation if verbatim(m)]
    assert subsequence(plain, after)
    own = [kept_whole_or_in_part(m) for m in conversation[:n]]
    assert [m for m in after[: len(planned.kept)]] == [m for m in own if m is not None]
    assert [m for m in after if verbatim(m)] == [
        m for m in (*own, *conversation[n:]) if m is not None and verbatim(m)
    ]
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


@settings(max_examples=400, deadline=None)
@given(conversations(), st.integers(1, 4), st.data())
def test_a_run_s_given_history_and_its_own_messages_stay_apart(
    conversation: list[Message], keep: int, data: st.DataObject
) -> None:
    """A run given the messages before its prompt (any user message): after a compaction
    no message has crossed between its history and its own messages, its own messages
    start with its prompt, whole, and a summary in its history summarises given turns
    only."""
    prompts = [i for i, m in enumerate(conversation) if isinstance(m, UserMessage)]
    given_count = data.draw(st.sampled_from(prompts))
    planned = plan(conversation, keep, prompt=given_count)
    if planned is None:
        return
    check_plan(conversation, planned, keep)
    summary = summary_message("what happened")
    history, own = planned.rewrite(conversation, summary, given_count)
    assert history is not None
    assert (*history, *own) == planned.apply(conversation, summary)
    assert own[0] is conversation[given_count]
    # Where each message after the compaction came from (None: the summary).
    sources = [*planned.kept, None, *range(planned.recent, len(conversation))]
    assert all(i is None or i < given_count for i in sources[: len(history)])
    assert all(i is None or i >= given_count for i in sources[len(history) :])
    if summary in history:
        assert all(i < given_count for i in planned.summarised)
    # A run given no history: all of it is its own.
    assert planned.rewrite(conversation, summary, None) == (
        None,
        planned.apply(conversation, summary),
    )


def test_the_user_s_words_beside_tool_results_are_kept() -> None:
    call = ToolCall("c1", "look", {})
    mixed = UserMessage([ToolResult.text(call, "page one"), Text("USER: also check page 9")])
    conversation: list[Message] = [
        UserMessage("read the log"),
        AssistantMessage([call]),
        mixed,
        AssistantMessage("reading page 9"),
        UserMessage("prompt"),
    ]
    planned = plan(conversation, 1)
    assert planned == Plan(kept=(0, 2), summarised=(1, 2), recent=3)
    after = planned.apply(conversation, summary_message("read page one"))
    assert after[:2] == (UserMessage("read the log"), UserMessage("USER: also check page 9"))
    assert is_summary(after[2]) and after[3:] == tuple(conversation[3:])
    text = transcript(conversation, planned)
    assert "[result of look: page one]" in text and "page 9" not in text


def test_a_prompt_that_holds_tool_results_is_never_summarised() -> None:
    """A run whose own first message answers a call of its given history (a fork at a
    suspension, say): the recent turns reach back to that call, the prompt stays whole."""
    call = ToolCall("c1", "look", {})
    given_history: list[Message] = [
        UserMessage("start"),
        AssistantMessage("one"),
        UserMessage("go on"),
        AssistantMessage([call]),
    ]
    own: list[Message] = [
        UserMessage([ToolResult.text(call, "found"), Text("and hurry")]),
        AssistantMessage("two"),
        UserMessage("more"),
        AssistantMessage("three"),
        UserMessage("prompt"),
    ]
    conversation = [*given_history, *own]
    assert plan(conversation, 1) == Plan(kept=(0, 2, 4, 6), summarised=(1, 3, 4, 5), recent=7)
    planned = plan(conversation, 1, prompt=4)
    assert planned == Plan(kept=(0, 2), summarised=(1,), recent=3)
    assert planned is not None
    history, messages = planned.rewrite(conversation, summary_message("s"), 4)
    summary = summary_message("s")
    assert history == (UserMessage("start"), UserMessage("go on"), summary, conversation[3])
    assert messages == tuple(own)


def test_the_fresh_tokens_leave_earlier_summaries_out() -> None:
    conversation: list[Message] = [
        summary_message("x" * 4000),
        AssistantMessage("y" * 400),
        AssistantMessage("recent"),
        UserMessage("prompt"),
    ]
    planned = plan(conversation, 1)
    assert planned is not None and planned.summarised == (0, 1)
    assert 100 <= fresh_tokens(conversation, planned) < 150


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


def test_the_transcript_holds_what_is_summarised_and_drops_reasoning() -> None:
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
    assert "earlier summary: before" in text and SUMMARY_PREFIX not in text
    assert '[called look with {"q":"x"}]' in text
    assert "[result of look (an error): found it]" in text
    assert "secret" not in text and "recent" not in text
    # The kept messages stay in the conversation: the summariser is not sent them again.
    assert "rules" not in text and "question" not in text and "prompt" not in text
