"""Builders matching the behaviour spec's §12 conventions: T, C, R and turn helpers."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from app.core import (
    AgentRun,
    AssistantContent,
    CallModel,
    CallTools,
    Continue,
    Done,
    ModelTurn,
    PromptCancelled,
    Text,
    ToolCall,
    ToolResult,
    Usage,
)

ADD = frozenset({"add"})


def usage(input_tokens: int, output_tokens: int) -> Usage:
    return Usage(input_tokens, output_tokens, input_tokens + output_tokens)


def C(id: str, name: str = "add", arguments: Any = None) -> ToolCall:  # noqa: N802
    """A tool call made with the wire-id rule (non-empty id is also the provider id)."""
    return ToolCall.from_wire(id, name, {"x": 1} if arguments is None else arguments)


def R(call_id: str, text: str = "2", name: str = "add") -> ToolResult:  # noqa: N802
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


def T(text: str, **kw: Any) -> ModelTurn:  # noqa: N802
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
