"""Normal forms: plain tuples projecting the core's public value types, so a run's outcome
and the reference model's expectation (tests/core/reference_model.py) compare value by
value. Tool results project to call id, name, provider id and texts only."""

from __future__ import annotations

import json
from typing import Any

from app.core import (
    AgentRunError,
    AssistantMessage,
    CallModel,
    CallTools,
    CompletionCall,
    CompletionError,
    Continue,
    Done,
    InvalidToolCallContext,
    MaxTurnsError,
    NeedsResolution,
    PromptCancelled,
    ProtocolViolation,
    Reasoning,
    SystemMessage,
    Text,
    ToolCall,
    ToolResult,
    TurnRetried,
    UnknownToolCall,
    UserMessage,
)
from app.core.midstream import Repaired, TurnAbandoned

Item = tuple[Any, ...]
Msg = tuple[Any, ...]


def compact(value: Any) -> str:
    """§0.2 compact JSON (the spec's own Python equivalent)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def n_item(item: Any) -> Item:
    if isinstance(item, Text):
        params = None if item.additional_params is None else compact(item.additional_params)
        return ("text", item.text, params)
    if isinstance(item, ToolCall):
        return ("call", item.id, item.name, compact(item.arguments), item.provider_call_id)
    if isinstance(item, ToolResult):
        texts = tuple(c.text if isinstance(c, Text) else repr(c) for c in item.content)
        return ("result", item.call_id, item.name, item.provider_call_id, texts)
    if isinstance(item, Reasoning):
        return ("reasoning", tuple((b.kind, b.text, b.signature) for b in item.content), item.id)
    raise AssertionError(f"unexpected content item {item!r}")


def n_msg(message: Any) -> Msg:
    if isinstance(message, UserMessage):
        return ("user", tuple(n_item(i) for i in message.content))
    if isinstance(message, AssistantMessage):
        return ("assistant", message.id, tuple(n_item(i) for i in message.content))
    assert isinstance(message, SystemMessage), message
    return ("system", message.content)


def n_hist(messages: Any) -> tuple[Msg, ...]:
    return tuple(n_msg(m) for m in messages)


def n_call(call: CompletionCall) -> tuple[Any, ...]:
    raw = None if call.raw is None else compact(call.raw)
    return (
        "CompletionCall",
        call.call_index,
        call.usage,
        call.message_id,
        call.response_id,
        call.provider_request_id,
        call.finish_reason,
        raw,
    )


def n_ctx(ctx: InvalidToolCallContext | None) -> tuple[Any, ...] | None:
    if ctx is None:
        return None
    return (
        "ctx",
        ctx.tool_name,
        ctx.tool_call_id,
        ctx.internal_call_id,
        ctx.args,
        ctx.available_tools,
        ctx.allowed_tools,
        ctx.tool_choice,
        n_hist(ctx.chat_history),
        ctx.is_streaming,
    )


def n_done(step: Done) -> tuple[Any, ...]:
    r = step.response
    return (
        "Done",
        r.output,
        r.usage,
        tuple(n_call(c) for c in r.completion_calls),
        n_hist(r.messages or ()),
        tuple(n_item(i) for i in r.content),
        r.output_tool_calls,
    )


def observe(fn: Any, *args: Any) -> tuple[Any, ...]:
    """Call a run method; return its outcome (value or error) in normal form."""
    try:
        value = fn(*args)
    except UnknownToolCall as err:
        return (
            "UnknownToolCall",
            err.tool_name,
            err.available_tools,
            err.allowed_tools,
            n_hist(err.chat_history),
        )
    except MaxTurnsError as err:
        return ("MaxTurnsError", err.max_turns, n_hist(err.chat_history), n_msg(err.prompt))
    except ProtocolViolation as err:
        return ("PV", err.reason, n_hist(err.chat_history))
    except PromptCancelled as err:
        return ("PromptCancelled", err.reason, n_hist(err.chat_history))
    except CompletionError as err:
        return ("CompletionError", err.message)
    except AgentRunError as err:  # pragma: no cover - an error kind the spec does not name
        raise AssertionError(f"unexpected error {err!r}") from err
    if value is None:
        return ("None",)
    if isinstance(value, CallModel):
        return ("CallModel", value.turn, n_msg(value.prompt), n_hist(value.history))
    if isinstance(value, CallTools):
        return (
            "CallTools",
            tuple(
                (
                    n_item(p.tool_call),
                    None if p.preresolved_result is None else n_item(p.preresolved_result),
                    p.internal_call_id,
                )
                for p in value.calls
            ),
        )
    if isinstance(value, Done):
        return n_done(value)
    if isinstance(value, Continue):
        return ("Continue", value.response_hook_suppressed)
    if isinstance(value, NeedsResolution):
        return ("NeedsResolution", n_ctx(value.context))
    if isinstance(value, TurnRetried):
        return ("TurnRetried",)
    if isinstance(value, Repaired):
        return ("Repaired", value.tool_name)
    if isinstance(value, TurnAbandoned):
        skipped = value.skipped_tool_result
        return ("TurnAbandoned", None if skipped is None else n_item(skipped))
    if isinstance(value, CompletionCall):
        return n_call(value)
    raise AssertionError(f"unexpected return value {value!r}")
