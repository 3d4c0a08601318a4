"""JSON form of a run: upstream rig's field names and tagging, plus `schema_version`.

This module writes runs and loads them; the strict field-by-field reading is in
`app.core.decode` (re-exported here).

Version 0 is upstream's own format (no `schema_version` key); it is upgraded on load.
Every later change to the stored shape bumps `SCHEMA_VERSION` and registers one small
upgrader in `UPGRADERS`, so runs suspended by an older release still resume after a deploy.

Version 2 adds a tool result's `"is_error": true` (written only when set).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import orjson

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
from app.core.decode import (
    assistant_content_from,
    completion_call_from,
    finish_reason_from,
    message_from,
    model_turn_from,
    run_from_dict,
    tool_call_from,
    tool_choice_from,
    tool_result_from,
    usage_from,
    user_content_from,
)
from app.core.errors import StateDecodeError
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

if TYPE_CHECKING:
    from app.core.run import AgentRun

__all__ = [
    "SCHEMA_VERSION",
    "UPGRADERS",
    "assistant_content_from",
    "assistant_content_to_dict",
    "completion_call_from",
    "completion_call_to_dict",
    "dumps",
    "finish_reason_from",
    "load_doc",
    "loads",
    "message_from",
    "message_to_dict",
    "model_turn_from",
    "model_turn_to_dict",
    "run_from_dict",
    "run_to_dict",
    "tool_call_from",
    "tool_call_to_dict",
    "tool_choice_from",
    "tool_result_from",
    "tool_result_to_dict",
    "upgrade",
    "usage_from",
    "usage_to_dict",
    "user_content_from",
    "user_content_to_dict",
]

SCHEMA_VERSION = 2

Doc = dict[str, Any]

# --- encoding -------------------------------------------------------------------------------


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


def _repeats(items: tuple[Any, ...] | None, of: list[Any]) -> bool:
    return (
        items is not None
        and len(items) == len(of)
        and all(a is b for a, b in zip(items, of, strict=True))
    )


def response_to_dict(r: PromptResponse, run: AgentRun | None = None) -> Doc:
    """A response; with `run`, the messages and calls it repeats from the run's own
    lists are written as their count (the stored layout's log holds them)."""
    out: Doc = {"output": r.output, "usage": usage_to_dict(r.usage)}
    if r.completion_calls:
        if run is not None and _repeats(r.completion_calls, run._completion_calls):
            out["completion_calls"] = len(r.completion_calls)
        else:
            out["completion_calls"] = [completion_call_to_dict(c) for c in r.completion_calls]
    if run is not None and _repeats(r.messages, run._new_messages):
        out["messages"] = len(run._new_messages)
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


def run_to_dict(run: AgentRun, *, log: bool = False) -> Doc:
    """The whole run; `log`: without its conversation lists (`chat_history`,
    `new_messages`, `completion_calls`), and a finished run's response counting the
    messages and calls it repeats from them (`app.core.stored` writes those once)."""
    from app.core.run import Advancing, Executing, Finished, Resolving

    r = run
    state = r._state
    state_doc: Any
    if isinstance(state, str):
        state_doc = state
    elif isinstance(state, Resolving):
        state_doc = {
            "ResolvingToolCalls": {
                "message_id": state.message_id,
                "original_choice": [assistant_content_to_dict(c) for c in state.original_choice],
                "items": [assistant_content_to_dict(c) for c in state.items],
                "next_index": state.next_index,
                "executable_tool_names": sorted(state.executable_tool_names),
                "allowed_tool_names": sorted(state.allowed_tool_names),
                "skipped": {str(k): tool_result_to_dict(v) for k, v in state.skipped.items()},
                "recovered": state.recovered,
                "any_skipped": state.any_skipped,
                "has_tool_calls": state.has_tool_calls,
            }
        }
    elif isinstance(state, Advancing):
        state_doc = {
            "AwaitingAdvance": {
                "message_id": state.message_id,
                "items": [assistant_content_to_dict(c) for c in state.items],
                "has_tool_calls": state.has_tool_calls,
                "skipped": {str(k): tool_result_to_dict(v) for k, v in state.skipped.items()},
                "internal_call_ids": [list(p) for p in state.internal_call_ids],
            }
        }
    elif isinstance(state, Executing):
        state_doc = {"ExecutingTools": [pending_to_dict(p) for p in state.calls]}
    else:
        assert isinstance(state, Finished)
        state_doc = {"Done": response_to_dict(state.response, r if log else None)}
    doc: Doc = {
        "schema_version": SCHEMA_VERSION,
        "max_turns": r._max_turns,
        "max_invalid_tool_call_retries": r._max_invalid_tool_call_retries,
        "tool_choice": tool_choice_to_json(r._tool_choice),
        "output_tool_name": r._output_tool_name,
        "output_schema": r._output_schema,
        "max_output_retries": r._max_output_retries,
        "output_retries": r._output_retries,
    }
    if not log:  # (key order as upstream's)
        doc["chat_history"] = (
            None if r._chat_history is None else [message_to_dict(m) for m in r._chat_history]
        )
        doc["new_messages"] = [message_to_dict(m) for m in r._new_messages]
    doc["current_turn"] = r._current_turn
    doc["usage"] = usage_to_dict(r._usage)
    if not log:
        doc["completion_calls"] = [completion_call_to_dict(c) for c in r._completion_calls]
    doc["completion_call_index"] = r._completion_call_index
    doc["invalid_tool_call_retries"] = r._invalid_tool_call_retries
    doc["rollback_pending"] = r._rollback_pending
    doc["streamed_completion_call_recorded"] = r._streamed_completion_call_recorded
    doc["state"] = state_doc
    return doc


def dumps(doc: Any) -> str:
    return orjson.dumps(doc).decode()


# --- upgraders ------------------------------------------------------------------------------


def _upgrade_assistant_item_v0(item: Any) -> Any:
    """Upstream once wrote assistant content untagged; infer the tag from the keys.

    A legacy `call_id` key on a tool call (the pre provider-split shape) is not lifted into
    `provider`: upstream at the pinned commit ignores it as an unknown key (its test
    `legacy_call_id_key_is_ignored_not_lifted`), so `id` stays rig's handle and the call
    has no provider id. Anything not shaped as expected is left to the strict decoder."""
    if not isinstance(item, dict) or "type" in item:
        return item
    if "function" in item:
        tag = "toolcall"
    elif "text" in item:
        tag = "text"
    elif "data" in item:
        tag = "image"
    else:
        tag = "reasoning"
    return {**item, "type": tag}


def _upgrade_items_v0(items: Any) -> Any:
    return [_upgrade_assistant_item_v0(c) for c in items] if isinstance(items, list) else items


def _upgrade_messages_v0(messages: Any) -> Any:
    if not isinstance(messages, list):
        return messages
    return [
        {**m, "content": _upgrade_items_v0(m.get("content"))}
        if isinstance(m, dict) and m.get("role") == "assistant" and "content" in m
        else m
        for m in messages
    ]


def _upgrade_v0_to_v1(doc: Doc) -> Doc:
    """Upstream rig's own format → ours: tag untagged assistant content."""
    doc = dict(doc)
    for key in ("chat_history", "new_messages"):
        if key in doc:
            doc[key] = _upgrade_messages_v0(doc[key])
    state = doc.get("state")
    if isinstance(state, dict) and len(state) == 1:
        ((tag, body),) = state.items()
        if isinstance(body, dict) and tag == "ResolvingToolCalls":
            body = {
                **body,
                "original_choice": _upgrade_items_v0(body.get("original_choice")),
                "items": _upgrade_items_v0(body.get("items")),
            }
        elif isinstance(body, dict) and tag == "AwaitingAdvance":
            body = {**body, "items": _upgrade_items_v0(body.get("items"))}
        elif isinstance(body, dict) and tag == "Done":
            body = {
                **body,
                "messages": _upgrade_messages_v0(body.get("messages")),
                "content": _upgrade_items_v0(body.get("content")),
            }
        doc["state"] = {tag: body}
    doc["schema_version"] = 1
    return doc


def _lift_error_v1(result: Any, *, feedback: bool = False) -> Any:
    """A v1 tool result → v2: the service stored a client's `is_error` as the text item's
    `{"is_error": true}` annotation (no wire sent it); it becomes the result's flag. The
    run's own feedback results (`feedback`: the skipped / preresolved ones) are errors."""
    if not isinstance(result, dict):
        return result
    flagged = feedback
    content = []
    for item in result.get("content") or ():
        params = item.get("additional_params") if isinstance(item, dict) else None
        if isinstance(params, dict) and params.get("is_error") is True:
            flagged = True
            rest = {k: v for k, v in params.items() if k != "is_error"}
            item = {k: v for k, v in item.items() if k != "additional_params"}
            if rest:
                item["additional_params"] = rest
        content.append(item)
    out = {**result, "content": content}
    if flagged:
        out["is_error"] = True
    return out


def _upgrade_messages_v1(messages: Any) -> Any:
    if not isinstance(messages, list):
        return messages
    out = []
    for m in messages:
        if isinstance(m, dict) and m.get("role") == "user" and isinstance(m.get("content"), list):
            content = [
                _lift_error_v1(c) if isinstance(c, dict) and c.get("type") == "toolresult" else c
                for c in m["content"]
            ]
            m = {**m, "content": content}
        out.append(m)
    return out


def _upgrade_v1_to_v2(doc: Doc) -> Doc:
    """Tool results gain `is_error` (see `_lift_error_v1`)."""
    doc = dict(doc)
    for key in ("chat_history", "new_messages"):
        doc[key] = _upgrade_messages_v1(doc.get(key))
    state = doc.get("state")
    if isinstance(state, dict) and len(state) == 1:
        ((tag, body),) = state.items()
        if tag in ("ResolvingToolCalls", "AwaitingAdvance") and isinstance(body, dict):
            skipped = body.get("skipped")
            if isinstance(skipped, dict):
                lifted = {k: _lift_error_v1(v, feedback=True) for k, v in skipped.items()}
                body = {**body, "skipped": lifted}
        elif tag == "ExecutingTools" and isinstance(body, list):
            body = [
                {**p, "preresolved_result": _lift_error_v1(p["preresolved_result"], feedback=True)}
                if isinstance(p, dict) and p.get("preresolved_result") is not None
                else p
                for p in body
            ]
        elif tag == "Done" and isinstance(body, dict):
            body = {**body, "messages": _upgrade_messages_v1(body.get("messages"))}
        doc["state"] = {tag: body}
    doc["schema_version"] = 2
    return doc


#: UPGRADERS[n] turns a version-n document into a version-(n+1) document.
UPGRADERS: dict[int, Callable[[Doc], Doc]] = {0: _upgrade_v0_to_v1, 1: _upgrade_v1_to_v2}


def upgrade(doc: Doc) -> Doc:
    version = doc.get("schema_version", 0)
    if not isinstance(version, int) or isinstance(version, bool) or version < 0:
        raise StateDecodeError("invalid schema_version: it must be a non-negative integer")
    if version > SCHEMA_VERSION:
        raise StateDecodeError(
            f"serialized run has schema_version {version}, newer than this release "
            f"supports ({SCHEMA_VERSION}); upgrade the service before resuming it"
        )
    while version < SCHEMA_VERSION:
        doc = UPGRADERS[version](doc)
        version += 1
    return doc


def loads(data: str | bytes) -> AgentRun:
    """A run from its JSON text; every failure is a `StateDecodeError`."""
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise StateDecodeError(f"serialized run is not valid JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise StateDecodeError("serialized run must be a JSON object")
    return load_doc(doc, upgraded=False)


def load_doc(doc: Doc, *, upgraded: bool = True) -> AgentRun:
    """A run from its document (`upgraded`: already at the current schema version)."""
    try:
        return run_from_dict(doc if upgraded else upgrade(doc))
    except StateDecodeError:
        raise
    except RecursionError:  # the decoder is bounded; this only keeps the promise absolute
        raise StateDecodeError("serialized run is nested too deeply") from None
    except (KeyError, IndexError, TypeError, ValueError, AttributeError) as exc:
        raise StateDecodeError(f"serialized run has an invalid shape: {exc!r}") from None
