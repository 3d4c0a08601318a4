"""A fork's conversation and its state machine: the original's first N messages, patched.

The prefix is taken as stored (each message decoded and never rebuilt), so the fork's
history is the original's byte for byte; a patch replaces a recorded tool result in
place, answers the calls a suspension left open, or appends messages. The fork then
starts where the prefix ends: with a model call when it ends with a user message, or
waiting for the calls its last message holds (handed to the executors again: nothing
recorded before the checkpoint runs again). Its turn count goes on from the
checkpoint's, so its `max_turns` budget is the original's unless overridden.

Pure: no IO.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from app.core import AgentRun, AssistantMessage, Message, PendingToolCall, ToolCall, UserMessage
from app.core.phases import Executing
from app.forks.checkpoints import Split, calls_of, check_whole, results_of
from app.forks.specs import ForkPatch
from app.service import convert
from app.service.errors import InvalidRequest
from app.service.initial import initial_run


class SplitCall(Exception):
    """The fork's conversation would leave tool call `call_id` without its result (409)."""

    def __init__(self, detail: str, call_id: str) -> None:
        super().__init__(detail)
        self.call_id = call_id


def patched(prefix: Sequence[Message], patch: ForkPatch | None, seq: int) -> list[Message]:
    """`prefix` with `patch` applied; raises `InvalidRequest` for a patch that names a
    call the prefix does not hold, and `SplitCall` for a result that would be parted from
    its call."""
    messages = list(prefix)
    if patch is None:
        _whole(messages, seq)
        return messages
    calls = {c.id: c for m in messages for c in calls_of(m)}
    answered = {r.call_id: i for i, m in enumerate(messages) for r in results_of(m)}
    waiting = [c.id for c in calls_of(messages[-1]) if c.id not in answered] if messages else []
    fresh: dict[str, Any] = {}
    seen: set[str] = set()
    for result in patch.tool_results:
        call_id = result.tool_call_id
        if call_id in seen:
            raise InvalidRequest(f"patch.tool_results: call {call_id} is answered twice")
        seen.add(call_id)
        call = calls.get(call_id)
        if call is None:
            raise InvalidRequest(
                f"patch.tool_results: no tool call {call_id} before checkpoint {seq}"
            )
        answer = _result(call, result.output, result.is_error)
        if call_id in answered:
            index = answered[call_id]
            messages[index] = _replaced(messages[index], answer)
        elif call_id in waiting:
            fresh[call_id] = answer
        else:
            raise SplitCall(
                f"checkpoint {seq} would split tool call {call_id} ({call.name}) from its result",
                call_id,
            )
    if fresh:
        missing = [c for c in waiting if c not in fresh]
        if missing:
            raise InvalidRequest(
                f"patch.tool_results answers some calls the checkpoint waits for, not "
                f"{missing[0]}: answer all of them or none"
            )
        messages.append(UserMessage([fresh[c] for c in waiting]))
    messages.extend(convert.history_message(m) for m in patch.append)
    _whole(messages, seq)
    return messages


def _whole(messages: Sequence[Message], seq: int) -> None:
    made: set[str] = set()
    for message in messages:  # (what a provider refuses with a 400: refused here, 422)
        for call in calls_of(message):
            if call.id in made:
                raise InvalidRequest(f"tool call id {call.id} is used twice in the conversation")
            made.add(call.id)
        for result in results_of(message):
            if result.call_id not in made:
                raise InvalidRequest(
                    f"a result answers tool call {result.call_id}, which no earlier message holds"
                )
    try:
        check_whole(messages, seq)
    except Split as exc:
        raise SplitCall(str(exc), exc.call.id) from None
    if not messages:
        raise InvalidRequest("the fork's conversation is empty")
    last = messages[-1]
    if isinstance(last, AssistantMessage) and not calls_of(last):
        raise InvalidRequest(
            f"checkpoint {seq} ends with the model's answer: add a user message to go on "
            "from it (patch.append)"
        )


def _result(call: ToolCall, output: Any, is_error: bool) -> Any:
    pending = PendingToolCall(call)
    return convert.submitted_result(pending, {"output": output, "is_error": is_error})


def _replaced(message: Message, answer: Any) -> UserMessage:
    assert isinstance(message, UserMessage)
    items = [
        answer if getattr(item, "call_id", None) == answer.call_id else item
        for item in message.content
    ]
    return UserMessage(items)


def begin(messages: Sequence[Message], turn: int) -> Any:
    """The fork's `begin` (`RunService.prepare`): its state machine from its agent
    settings, over `messages`, `turn` model calls already counted."""

    def build(agent: Mapping[str, Any], max_turns: int) -> AgentRun:
        last = messages[-1]
        waiting = calls_of(last) if isinstance(last, AssistantMessage) else []
        run = initial_run(last, list(messages[:-1]), max_turns, agent)
        state = run.state
        state.current_turn = turn
        if waiting:  # (it starts by waiting for the calls its last message holds)
            state.phase = Executing(tuple(PendingToolCall(c) for c in waiting))
        return AgentRun.from_state(dataclasses.replace(state))

    return build
