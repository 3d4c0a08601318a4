"""Encoding of a run's values into upstream rig's JSON shape (field names and tagging).

The strict reading back is `app.core.decode`; a whole run is written by `app.core.serde`
from the fields of `app.core.state.RunState`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from app.core.content import (
    AssistantContent,
    Image,
    Json,
    Message,
    Reasoning,
    ReasoningBlock,
    SystemMessage,
    Text,
    ToolCall,
    ToolResult,
    ToolResultContent,
    UserContent,
    UserMessage,
)
from app.core.types import (
    KNOWN_FINISH_REASONS,
    CompletionCall,
    FinishReason,
    ModelTurn,
    PendingToolCall,
    PromptResponse,
    ToolChoice,
    Usage,
)

Doc = dict[str, Any]
#: A run's own messages and completion calls, for the stored layout's log form (see
#: `response_to_dict`).
Lists = tuple[Sequence[Message], Sequence[CompletionCall]]


def usage_to_dict(u: Usage) -> Doc:
    return {
        "input_tokens": u.input_tokens,
        "output_tokens": u.output_tokens,
        "total_tokens": u.total_tokens,
        "cached_input_tokens": u.cached_input_tokens,
        "cache_creation_input_tokens": u.cache_creation_input_tokens,
        "tool_use_prompt_tokens": u.tool_use_prompt_tokens,
        "reasoning_tokens": u.reasoning_tokens,
    }


def _provider(call_id: str | None, item_id: str | None) -> Doc | None:
    if call_id is None:
        return None
    out: Doc = {"call_id": call_id}
    if item_id is not None:
        out["item_id"] = item_id
    return out


def tool_call_to_dict(c: ToolCall) -> Doc:
    out: Doc = {"id": c.id}
    provider = _provider(c.provider_call_id, c.provider_item_id)
    if provider is not None:
        out["provider"] = provider
    out["function"] = {"name": c.name, "arguments": c.arguments}
    out["signature"] = c.signature
    out["additional_params"] = c.additional_params
    return out


def _text(t: Text) -> Doc:
    out: Doc = {"type": "text", "text": t.text}
    if t.additional_params:
        out["additional_params"] = t.additional_params
    return out


def _image(i: Image) -> Doc:
    out: Doc = {"type": "image", "data": i.data, "media_type": i.media_type, "detail": i.detail}
    if i.additional_params:
        out["additional_params"] = i.additional_params
    return out


def _reasoning_block(b: ReasoningBlock) -> Doc:
    if b.kind == "text":
        inner: Doc = {"text": b.text}
        if b.signature is not None:
            inner["signature"] = b.signature
        return {"type": "text", "content": inner}
    if b.kind == "redacted":
        return {"type": "redacted", "content": {"data": b.text}}
    return {"type": b.kind, "content": b.text}


def assistant_content_to_dict(item: AssistantContent) -> Doc:
    if isinstance(item, Text):
        return _text(item)
    if isinstance(item, ToolCall):
        return {"type": "toolcall", **tool_call_to_dict(item)}
    if isinstance(item, Reasoning):
        return {
            "type": "reasoning",
            "id": item.id,
            "content": [_reasoning_block(b) for b in item.content],
        }
    return _image(item)


def _result_content(item: ToolResultContent) -> Doc:
    if isinstance(item, Text):
        return _text(item)
    if isinstance(item, Json):
        return {"type": "json", "value": item.value}
    return _image(item)


def tool_result_to_dict(r: ToolResult) -> Doc:
    out: Doc = {"type": "toolresult", "call": r.call_id}
    provider = _provider(r.provider_call_id, r.provider_item_id)
    if provider is not None:
        out["provider"] = provider
    out["name"] = r.name
    out["content"] = [_result_content(c) for c in r.content]
    if r.is_error:
        out["is_error"] = True
    return out


def user_content_to_dict(item: UserContent) -> Doc:
    if isinstance(item, Text):
        return _text(item)
    if isinstance(item, ToolResult):
        return tool_result_to_dict(item)
    return _image(item)


def message_to_dict(m: Message) -> Doc:
    if isinstance(m, SystemMessage):
        return {"role": "system", "content": m.content}
    if isinstance(m, UserMessage):
        return {"role": "user", "content": [user_content_to_dict(c) for c in m.content]}
    return {
        "role": "assistant",
        "id": m.id,
        "content": [assistant_content_to_dict(c) for c in m.content],
    }


def tool_choice_to_json(tc: ToolChoice | None) -> Any:
    if tc is None:
        return None
    if tc.kind == "specific":
        return {"specific": {"function_names": list(tc.function_names)}}
    return tc.kind


def finish_reason_to_json(reason: FinishReason) -> Any:
    if reason is None or reason in KNOWN_FINISH_REASONS:
        return reason
    return {"other": reason}


def completion_call_to_dict(c: CompletionCall) -> Doc:
    out: Doc = {"call_index": c.call_index, "usage": usage_to_dict(c.usage)}
    for key in ("message_id", "response_id", "provider_request_id"):
        value = getattr(c, key)
        if value is not None:
            out[key] = value
    if c.finish_reason is not None:
        out["finish_reason"] = finish_reason_to_json(c.finish_reason)
    if c.raw is not None:
        out["raw"] = c.raw
    return out


def _repeats(items: tuple[Any, ...] | None, of: Sequence[Any]) -> bool:
    return (
        items is not None
        and len(items) == len(of)
        and all(a is b for a, b in zip(items, of, strict=True))
    )


def response_to_dict(r: PromptResponse, log: Lists | None = None) -> Doc:
    """A response; with `log` (the run's own messages and calls), the messages and calls
    it repeats from them are written as their count (the stored layout's log holds them)."""
    out: Doc = {"output": r.output, "usage": usage_to_dict(r.usage)}
    if r.completion_calls:
        if log is not None and _repeats(r.completion_calls, log[1]):
            out["completion_calls"] = len(r.completion_calls)
        else:
            out["completion_calls"] = [completion_call_to_dict(c) for c in r.completion_calls]
    if log is not None and _repeats(r.messages, log[0]):
        out["messages"] = len(log[0])
    else:
        out["messages"] = None if r.messages is None else [message_to_dict(m) for m in r.messages]
    out["content"] = [assistant_content_to_dict(c) for c in r.content]
    return out


def pending_to_dict(p: PendingToolCall) -> Doc:
    return {
        "tool_call": tool_call_to_dict(p.tool_call),
        "preresolved_result": None
        if p.preresolved_result is None
        else tool_result_to_dict(p.preresolved_result),
        "internal_call_id": p.internal_call_id,
    }


def model_turn_to_dict(t: ModelTurn) -> Doc:
    out: Doc = {
        "message_id": t.message_id,
        "response_id": t.response_id,
        "provider_request_id": t.provider_request_id,
        "choice": [assistant_content_to_dict(c) for c in t.choice],
        "usage": usage_to_dict(t.usage),
        "executable_tool_names": sorted(t.executable_tool_names),
        "allowed_tool_names": sorted(t.allowed_tool_names),
        "finish_reason": finish_reason_to_json(t.finish_reason),
    }
    if t.raw is not None:
        out["raw"] = t.raw
    return out
