"""Builders matching the behaviour spec's §12 conventions: T, C, R and turn helpers."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pytest

from app.core import (
    AgentRun,
    AssistantContent,
    AssistantMessage,
    CallModel,
    CallTools,
    Continue,
    Done,
    InvalidToolCallContext,
    Message,
    ModelTurn,
    NeedsResolution,
    PromptCancelled,
    ProtocolViolation,
    StreamedTurn,
    Text,
    ToolCall,
    ToolResult,
    Usage,
    UserMessage,
)
from app.core.midstream import StreamedInvalidToolCall

ADD = frozenset({"add"})
PV_PREFIX = "agent run driver protocol violation: "


def usage(input_tokens: int, output_tokens: int) -> Usage:
    return Usage(input_tokens, output_tokens, input_tokens + output_tokens)


def C(id: str, name: str = "add", arguments: Any = None) -> ToolCall:
    """A tool call made with the wire-id rule (non-empty id is also the provider id)."""
    return ToolCall.from_wire(id, name, {"x": 1} if arguments is None else arguments)


def R(call_id: str, text: str = "2", name: str = "add") -> ToolResult:
    return ToolResult(call_id, name, (Text(text),))


def turn(
    *items: AssistantContent,
    usage: Usage | None = None,
    executable: Iterable[str] = ADD,
    allowed: Iterable[str] = ADD,
    finish_reason: str | None = None,
    message_id: str | None = None,
    raw: Any = None,
) -> ModelTurn:
    return ModelTurn(
        choice=items,
        usage=usage or Usage(),
        executable_tool_names=frozenset(executable),
        allowed_tool_names=frozenset(allowed),
        finish_reason=finish_reason,
        message_id=message_id,
        raw=raw,
    )


def T(text: str, **kw: Any) -> ModelTurn:
    return turn(Text(text), **kw)


def expect_call_model(run: AgentRun) -> CallModel:
    step = run.next_step()
    assert isinstance(step, CallModel), step
    return step


def expect_call_tools(run: AgentRun) -> CallTools:
    step = run.next_step()
    assert isinstance(step, CallTools), step
    return step


def expect_done(run: AgentRun) -> Done:
    step = run.next_step()
    assert isinstance(step, Done), step
    return step


def expect_continue(outcome: object, suppressed: bool = False) -> None:
    assert outcome == Continue(suppressed), outcome


def is_violation(err: BaseException, detail: str | None = None) -> bool:
    if not isinstance(err, PromptCancelled):
        return False
    if not err.reason.startswith("agent run driver protocol violation: "):
        return False
    return detail is None or detail in err.reason


def expect_needs_resolution(outcome: object) -> InvalidToolCallContext:
    assert isinstance(outcome, NeedsResolution), outcome
    return outcome.context


def expect_violation(run: AgentRun, call: Any, detail: str) -> ProtocolViolation:
    """Call `call()` and check it is refused with exactly `PV_PREFIX + detail`, carrying
    `full_history()`, and that the run (its whole serialised state) is unchanged."""
    before = run.to_json()
    status = run.status
    with pytest.raises(ProtocolViolation) as info:
        call()
    err = info.value
    assert err.reason == PV_PREFIX + detail
    assert str(err) == "PromptCancelled: " + PV_PREFIX + detail
    assert err.chat_history == run.full_history()
    assert run.status == status
    assert run.to_json() == before
    return err


def result_text(result: object) -> str:
    """The concatenated text items of a tool result."""
    assert isinstance(result, ToolResult), result
    return "".join(c.text for c in result.content if isinstance(c, Text))


def tool_call_ids(messages: Iterable[Message]) -> list[str]:
    return [
        item.id
        for m in messages
        if isinstance(m, AssistantMessage)
        for item in m.content
        if isinstance(item, ToolCall)
    ]


def assert_no_orphan_tool_use(messages: Iterable[Message]) -> None:
    """Every assistant tool call must be answered by a user tool result."""
    messages = list(messages)
    answered = {
        item.call_id
        for m in messages
        if isinstance(m, UserMessage)
        for item in m.content
        if isinstance(item, ToolResult)
    }
    for call_id in tool_call_ids(messages):
        assert call_id in answered, f"tool call {call_id!r} has no result in history"


def run_to_pending_tools(run: AgentRun, model_turn: ModelTurn) -> CallTools:
    """Emit the first CallModel, feed `model_turn` (must be accepted) and return CallTools."""
    expect_call_model(run)
    expect_continue(run.model_response(model_turn))
    return expect_call_tools(run)


# --- streamed path (group H) ---------------------------------------------------------------


def streamed(
    *items: AssistantContent,
    executable: Iterable[str] = ADD,
    allowed: Iterable[str] = ADD,
    message_id: str | None = None,
    internal_call_ids: Iterable[tuple[str, str]] = (),
    finish_reason: str | None = None,
) -> StreamedTurn:
    """A `StreamedTurn` as the streaming driver's assembler would finish it."""
    return StreamedTurn(
        choice=items,
        executable_tool_names=frozenset(executable),
        allowed_tool_names=frozenset(allowed),
        message_id=message_id,
        internal_call_ids=tuple(internal_call_ids),
        finish_reason=finish_reason,
    )


def invalid_call(
    call: ToolCall,
    internal_call_id: str | None = None,
    *,
    args: str | None = None,
    executable: Iterable[str] = ADD,
    allowed: Iterable[str] = ADD,
) -> StreamedInvalidToolCall:
    """A `StreamedInvalidToolCall` for `call` (internal id `internal_<id>` by default)."""
    return StreamedInvalidToolCall(
        tool_call=call,
        internal_call_id=internal_call_id or f"internal_{call.id}",
        args=args,
        executable_tool_names=frozenset(executable),
        allowed_tool_names=frozenset(allowed),
    )
