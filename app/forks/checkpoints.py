"""A run's checkpoints, read off what its log already holds: nothing is written for them.

A checkpoint is a place in the run's conversation where it can be branched: its start
(the given history and the prompt), each suspension for tool calls (the model's calls
are the last message: a fork waits for them again) and each turn's end (a round's
results, a feedback message, an answer). Its `seq` is the number of messages before it,
so a fork at `seq` N starts from the conversation's first N messages, byte for byte.

A place that would leave a tool call without its result anywhere but at the very end
(the results of one call message spread over several messages, cut between them) is no
checkpoint: a fork there is refused naming the call (a provider answers a history with
an unanswered call with a 400).

Pure: no IO.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from app.core import (
    AssistantMessage,
    CompletionCall,
    Message,
    ToolCall,
    ToolResult,
    Usage,
    UserMessage,
)

START = "start"
SUSPENDED = "tool_calls"  # the model's calls end it: a fork waits for their results
RESULTS = "tool_results"  # a round's results (or the run's feedback) end it
ANSWER = "answer"  # the model's message without calls ends it


@dataclass(frozen=True, slots=True)
class Checkpoint:
    seq: int  # messages before it
    kind: str
    turn: int  # model calls made before it (a fork's count goes on from there)
    usage: Usage  # of those calls (the run's own)


class Split(ValueError):
    """A place that leaves tool call `call` without its result before the end."""

    def __init__(self, seq: int, call: ToolCall) -> None:
        super().__init__(
            f"checkpoint {seq} would split tool call {call.id} ({call.name}) from its result"
        )
        self.call = call


def calls_of(message: Message) -> list[ToolCall]:
    if not isinstance(message, AssistantMessage):
        return []
    return [c for c in message.content if isinstance(c, ToolCall)]


def results_of(message: Message) -> list[ToolResult]:
    if not isinstance(message, UserMessage):
        return []
    return [r for r in message.content if isinstance(r, ToolResult)]


def open_calls(messages: Sequence[Message]) -> list[ToolCall]:
    """The calls of `messages` no later message answers, in order."""
    answered = {r.call_id for m in messages for r in results_of(m)}
    return [c for m in messages for c in calls_of(m) if c.id not in answered]


def check_whole(messages: Sequence[Message], seq: int) -> list[ToolCall]:
    """The calls a conversation ending here waits for (those of its last message, all of
    them unanswered); raises `Split` for a call left unanswered anywhere else."""
    waiting = open_calls(messages)
    last = {c.id for c in calls_of(messages[-1])} if messages else set()
    for call in waiting:
        if call.id not in last:
            raise Split(seq, call)
    if waiting and len(waiting) != len(last):  # (some of the last message's calls answered)
        raise Split(seq, waiting[0])
    return waiting


def kind_at(messages: Sequence[Message], seq: int, start: int) -> str | None:
    """The kind of the checkpoint after the first `seq` messages, None when that place is
    none (before the run's start, or a split)."""
    if seq < start or seq > len(messages) or seq == 0:
        return None
    prefix = messages[:seq]
    try:
        waiting = check_whole(prefix, seq)
    except Split:
        return None
    if seq == start:
        return START
    if waiting:
        return SUSPENDED
    return ANSWER if isinstance(prefix[-1], AssistantMessage) else RESULTS


def turn_at(history: Sequence[Message], seq: int, found: Sequence[Checkpoint], base: int) -> int:
    """The model calls made before place `seq`: a checkpoint's count, or, for a place
    before the run's start (its given history; a fork's conversation from its original),
    the turns counted before its start less the model answers between the place and it."""
    listed = next((c.turn for c in found if c.seq == seq), None)
    if listed is not None:
        return listed
    start = found[0].seq if found else len(history)
    later = sum(isinstance(m, AssistantMessage) for m in history[seq:start])
    return max(0, base - later)


def list_checkpoints(
    history: Sequence[Message],
    given: int,
    calls: Sequence[CompletionCall],
    turn_base: int = 0,
    *,
    compacted: bool = False,
) -> list[Checkpoint]:
    """The checkpoints of a conversation `history` whose first `given` messages were given
    (the run's start is after them and its prompt), the run's model calls `calls` and the
    turns counted before its first (a fork's)."""
    start = min(given + 1, len(history))
    owner = call_owners(history, given, calls, compacted=compacted)
    out: list[Checkpoint] = []
    usage = Usage()
    made = 0
    for seq in range(start, len(history) + 1):
        if seq > start:  # (the message just passed may be a model call's answer)
            index = owner.get(seq - 1)
            while index is not None and made <= index:
                usage = usage + calls[made].usage
                made += 1
        kind = kind_at(history, seq, start)
        if kind is not None:
            out.append(Checkpoint(seq, kind, turn_base + made, usage))
    return out


def call_owners(
    history: Sequence[Message],
    given: int,
    calls: Sequence[CompletionCall],
    *,
    compacted: bool = False,
) -> dict[int, int]:
    """The index of the model call that answered each of the run's assistant messages
    (after its start: the given history's, and the message a fork starts from, answered
    no call of this run), by the provider's message id where both have one, else in order:
    from the first (a call whose answer is not in the conversation, an empty last turn, is
    passed over at the end), or, for a `compacted` conversation (its early answers folded
    into a summary), from the latest."""
    positions = [
        p for p in range(given + 1, len(history)) if isinstance(history[p], AssistantMessage)
    ]
    order = list(range(len(calls)))
    if compacted:
        positions.reverse()
        order.reverse()
    owners: dict[int, int] = {}
    k = 0
    for position in positions:
        if k >= len(order):
            break
        message = history[position]
        assert isinstance(message, AssistantMessage)
        ids = [calls[i].message_id for i in order[k:]]
        step = ids.index(message.id) if message.id is not None and message.id in ids else 0
        owners[position] = order[k + step]
        k += step + 1
    return owners
