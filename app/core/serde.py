"""JSON form of a run: upstream rig's field names and tagging, plus `schema_version`.

Version 0 is upstream's own format (no `schema_version` key); it is upgraded on load.
Every later change to the stored shape bumps `SCHEMA_VERSION` and registers one small
upgrader in `UPGRADERS`, so runs suspended by an older release still resume after a deploy.

Version 2 adds a tool result's `"is_error": true` (written only when set).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import orjson

from app.core.content import (
    AssistantContent,
    AssistantMessage,
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


def response_to_dict(r: PromptResponse) -> Doc:
    out: Doc = {"output": r.output, "usage": usage_to_dict(r.usage)}
    if r.completion_calls:
        out["completion_calls"] = [completion_call_to_dict(c) for c in r.completion_calls]
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


def run_to_dict(run: AgentRun) -> Doc:
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
        state_doc = {"Done": response_to_dict(state.response)}
    return {
        "schema_version": SCHEMA_VERSION,
        "max_turns": r._max_turns,
        "max_invalid_tool_call_retries": r._max_invalid_tool_call_retries,
        "tool_choice": tool_choice_to_json(r._tool_choice),
        "output_tool_name": r._output_tool_name,
        "output_schema": r._output_schema,
        "max_output_retries": r._max_output_retries,
        "output_retries": r._output_retries,
        "chat_history": None
        if r._chat_history is None
        else [message_to_dict(m) for m in r._chat_history],
        "new_messages": [message_to_dict(m) for m in r._new_messages],
        "current_turn": r._current_turn,
        "usage": usage_to_dict(r._usage),
        "completion_calls": [completion_call_to_dict(c) for c in r._completion_calls],
        "completion_call_index": r._completion_call_index,
        "invalid_tool_call_retries": r._invalid_tool_call_retries,
        "rollback_pending": r._rollback_pending,
        "streamed_completion_call_recorded": r._streamed_completion_call_recorded,
        "state": state_doc,
    }


def dumps(doc: Any) -> str:
    return orjson.dumps(doc).decode()


# --- decoding (strict: the current schema only; older ones go through UPGRADERS) ----------


def usage_from(d: Any) -> Usage:
    if d is None:
        return Usage()
    return Usage(**{k: int(d.get(k, 0)) for k in usage_to_dict(Usage())})


def _provider_ids(d: Mapping[str, Any]) -> tuple[str | None, str | None]:
    p = d.get("provider")
    if p is None:
        return None, None
    if not p.get("call_id"):
        raise StateDecodeError("a provider call id cannot be the empty string")
    return p["call_id"], p.get("item_id")


def tool_call_from(d: Mapping[str, Any]) -> ToolCall:
    if not d["id"]:
        raise StateDecodeError("a tool-call id cannot be the empty string")
    call_id, item_id = _provider_ids(d)
    f = d["function"]
    return ToolCall(
        d["id"],
        f["name"],
        f.get("arguments"),
        call_id,
        item_id,
        d.get("signature"),
        d.get("additional_params"),
    )


def _text_from(d: Mapping[str, Any]) -> Text:
    return Text(d["text"], d.get("additional_params") or None)


def _image_from(d: Mapping[str, Any]) -> Image:
    return Image(d["data"], d.get("media_type"), d.get("detail"), d.get("additional_params"))


def _reasoning_block_from(d: Mapping[str, Any]) -> ReasoningBlock:
    kind = d["type"]
    c = d["content"]
    if kind == "text":
        return ReasoningBlock("text", c["text"], c.get("signature"))
    if kind == "redacted":
        return ReasoningBlock("redacted", c["data"])
    if kind in ("encrypted", "summary"):
        return ReasoningBlock(kind, c)
    raise StateDecodeError(f"unknown reasoning block type {kind!r}")


def assistant_content_from(d: Mapping[str, Any]) -> AssistantContent:
    kind = d.get("type")
    if kind == "text":
        return _text_from(d)
    if kind == "toolcall":
        return tool_call_from(d)
    if kind == "reasoning":
        return Reasoning(tuple(_reasoning_block_from(b) for b in d["content"]), d.get("id"))
    if kind == "image":
        return _image_from(d)
    raise StateDecodeError(f"unknown assistant content type {kind!r}")


def _result_content_from(d: Mapping[str, Any]) -> ToolResultContent:
    kind = d.get("type")
    if kind == "text":
        return _text_from(d)
    if kind == "json":
        return Json(d["value"])
    if kind == "image":
        return _image_from(d)
    raise StateDecodeError(f"unknown tool result content type {kind!r}")


def tool_result_from(d: Mapping[str, Any]) -> ToolResult:
    if not d["call"]:
        raise StateDecodeError("a tool result's call id cannot be the empty string")
    call_id, item_id = _provider_ids(d)
    is_error = d.get("is_error", False)
    if not isinstance(is_error, bool):
        raise StateDecodeError(f"a tool result's is_error must be a boolean, not {is_error!r}")
    return ToolResult(
        d["call"],
        d["name"],
        tuple(_result_content_from(c) for c in d["content"]),
        call_id,
        item_id,
        is_error=is_error,
    )


def user_content_from(d: Mapping[str, Any]) -> UserContent:
    kind = d.get("type")
    if kind == "text":
        return _text_from(d)
    if kind == "toolresult":
        return tool_result_from(d)
    if kind == "image":
        return _image_from(d)
    raise StateDecodeError(f"unsupported user content type {kind!r}")


def message_from(d: Mapping[str, Any]) -> Message:
    role = d.get("role")
    if role == "system":
        return SystemMessage(d["content"])
    if role == "user":
        return UserMessage(user_content_from(c) for c in d["content"])
    if role == "assistant":
        return AssistantMessage((assistant_content_from(c) for c in d["content"]), d.get("id"))
    raise StateDecodeError(f"unknown message role {role!r}")


def tool_choice_from(v: Any) -> ToolChoice | None:
    if v is None:
        return None
    if v in ("auto", "none", "required"):
        return ToolChoice(v)
    if isinstance(v, Mapping) and "specific" in v:
        return ToolChoice.specific(v["specific"]["function_names"])
    raise StateDecodeError(f"unknown tool_choice {v!r}")


def finish_reason_from(v: Any) -> FinishReason:
    if v is None or (isinstance(v, str) and v in KNOWN_FINISH_REASONS):
        return v
    if isinstance(v, Mapping) and isinstance(v.get("other"), str):
        return str(v["other"])
    raise StateDecodeError(f"unknown finish_reason {v!r}")


def completion_call_from(d: Mapping[str, Any]) -> CompletionCall:
    return CompletionCall(
        call_index=int(d["call_index"]),
        usage=usage_from(d.get("usage")),
        message_id=d.get("message_id"),
        response_id=d.get("response_id"),
        provider_request_id=d.get("provider_request_id"),
        finish_reason=finish_reason_from(d.get("finish_reason")),
        raw=d.get("raw"),
    )


def response_from(d: Mapping[str, Any]) -> PromptResponse:
    messages = d.get("messages")
    return PromptResponse(
        output=d["output"],
        usage=usage_from(d.get("usage")),
        completion_calls=tuple(completion_call_from(c) for c in d.get("completion_calls", ())),
        messages=None if messages is None else tuple(message_from(m) for m in messages),
        content=tuple(assistant_content_from(c) for c in d.get("content", ())),
    )


def pending_from(d: Mapping[str, Any]) -> PendingToolCall:
    pre = d.get("preresolved_result")
    return PendingToolCall(
        tool_call_from(d["tool_call"]),
        None if pre is None else tool_result_from(pre),
        d.get("internal_call_id"),
    )


def model_turn_from(d: Mapping[str, Any]) -> ModelTurn:
    return ModelTurn(
        choice=tuple(assistant_content_from(c) for c in d["choice"]),
        usage=usage_from(d.get("usage")),
        executable_tool_names=frozenset(d.get("executable_tool_names", ())),
        allowed_tool_names=frozenset(d.get("allowed_tool_names", ())),
        message_id=d.get("message_id"),
        response_id=d.get("response_id"),
        provider_request_id=d.get("provider_request_id"),
        finish_reason=finish_reason_from(d.get("finish_reason")),
        raw=d.get("raw"),
    )


def _skipped_from(d: Mapping[str, Any]) -> dict[int, ToolResult]:
    return {int(k): tool_result_from(v) for k, v in d.items()}


def _state_from(doc: Any) -> Any:
    from app.core.run import (
        AWAITING_MODEL,
        FAILED,
        PREPARING_REQUEST,
        Advancing,
        Executing,
        Finished,
        Resolving,
    )

    if doc in (PREPARING_REQUEST, AWAITING_MODEL, FAILED):
        return doc
    if not isinstance(doc, Mapping) or len(doc) != 1:
        raise StateDecodeError(f"unknown run state {doc!r}")
    ((tag, body),) = doc.items()
    if tag == "ResolvingToolCalls":
        return Resolving(
            message_id=body.get("message_id"),
            original_choice=tuple(assistant_content_from(c) for c in body["original_choice"]),
            items=[assistant_content_from(c) for c in body["items"]],
            next_index=int(body["next_index"]),
            executable_tool_names=frozenset(body["executable_tool_names"]),
            allowed_tool_names=frozenset(body["allowed_tool_names"]),
            skipped=_skipped_from(body.get("skipped", {})),
            recovered=bool(body["recovered"]),
            any_skipped=bool(body["any_skipped"]),
            has_tool_calls=bool(body["has_tool_calls"]),
        )
    if tag == "AwaitingAdvance":
        return Advancing(
            message_id=body.get("message_id"),
            items=tuple(assistant_content_from(c) for c in body["items"]),
            has_tool_calls=bool(body["has_tool_calls"]),
            skipped=_skipped_from(body.get("skipped", {})),
            internal_call_ids=tuple((a, b) for a, b in body.get("internal_call_ids", ())),
        )
    if tag == "ExecutingTools":
        return Executing(tuple(pending_from(p) for p in body))
    if tag == "Done":
        return Finished(response_from(body))
    raise StateDecodeError(f"unknown run state {tag!r}")


def run_from_dict(doc: Mapping[str, Any]) -> AgentRun:
    from app.core.run import AgentRun

    run = AgentRun.__new__(AgentRun)
    history = doc.get("chat_history")
    run._max_turns = int(doc["max_turns"])
    run._max_invalid_tool_call_retries = int(doc.get("max_invalid_tool_call_retries", 0))
    run._tool_choice = tool_choice_from(doc.get("tool_choice"))
    run._output_tool_name = doc.get("output_tool_name")
    run._output_schema = doc.get("output_schema")
    run._max_output_retries = int(doc.get("max_output_retries", 0))
    run._output_retries = int(doc.get("output_retries", 0))
    run._chat_history = None if history is None else tuple(message_from(m) for m in history)
    run._new_messages = [message_from(m) for m in doc["new_messages"]]
    run._current_turn = int(doc["current_turn"])
    run._usage = usage_from(doc.get("usage"))
    run._completion_calls = [completion_call_from(c) for c in doc.get("completion_calls", ())]
    run._completion_call_index = int(doc.get("completion_call_index", 0))
    run._invalid_tool_call_retries = int(doc.get("invalid_tool_call_retries", 0))
    run._rollback_pending = bool(doc.get("rollback_pending", False))
    run._streamed_completion_call_recorded = bool(
        doc.get("streamed_completion_call_recorded", False)
    )
    run._state = _state_from(doc["state"])
    # Freeze the schema the same way the constructor does.
    from app.core.jsonvalue import freeze

    run._output_schema = freeze(run._output_schema)
    return run


# --- upgraders ------------------------------------------------------------------------------


def _upgrade_tool_call_v0(d: dict[str, Any]) -> dict[str, Any]:
    """Lift upstream's legacy `call_id` key (pre provider split) into `provider`."""
    out = dict(d)
    if "call_id" not in out:
        return out
    legacy = out.pop("call_id")
    if out.get("provider") is not None:
        return out
    if legacy:  # dual-id shape: call_id was the correlator, id the output item
        out["provider"] = {"call_id": legacy, "item_id": out["id"]}
        out["id"] = legacy
    else:  # single-id shape: the id was the provider's
        out["provider"] = {"call_id": out["id"]}
    return out


def _upgrade_assistant_item_v0(d: dict[str, Any]) -> dict[str, Any]:
    """Upstream once wrote assistant content untagged; infer the tag from the keys."""
    out = dict(d)
    if "type" not in out:
        if "function" in out:
            out["type"] = "toolcall"
        elif "text" in out:
            out["type"] = "text"
        elif "data" in out:
            out["type"] = "image"
        else:
            out["type"] = "reasoning"
    if out["type"] == "toolcall":
        out = _upgrade_tool_call_v0(out)
    return out


def _upgrade_messages_v0(messages: Any) -> Any:
    if messages is None:
        return None
    out = []
    for m in messages:
        if m.get("role") == "assistant":
            m = {**m, "content": [_upgrade_assistant_item_v0(c) for c in m["content"]]}
        out.append(m)
    return out


def _upgrade_v0_to_v1(doc: Doc) -> Doc:
    """Upstream rig's own format → ours: tag assistant content, lift legacy call ids."""
    doc = dict(doc)
    doc["chat_history"] = _upgrade_messages_v0(doc.get("chat_history"))
    doc["new_messages"] = _upgrade_messages_v0(doc.get("new_messages"))
    state = doc.get("state")
    if isinstance(state, dict) and len(state) == 1:
        ((tag, body),) = state.items()
        if tag == "ResolvingToolCalls":
            body = {
                **body,
                "original_choice": [_upgrade_assistant_item_v0(c) for c in body["original_choice"]],
                "items": [_upgrade_assistant_item_v0(c) for c in body["items"]],
            }
        elif tag == "AwaitingAdvance":
            body = {**body, "items": [_upgrade_assistant_item_v0(c) for c in body["items"]]}
        elif tag == "ExecutingTools":
            body = [{**p, "tool_call": _upgrade_tool_call_v0(p["tool_call"])} for p in body]
        elif tag == "Done":
            body = {
                **body,
                "messages": _upgrade_messages_v0(body.get("messages")),
                "content": [_upgrade_assistant_item_v0(c) for c in body.get("content", ())],
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
        raise StateDecodeError(f"invalid schema_version {version!r}")
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
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise StateDecodeError(f"serialized run is not valid JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise StateDecodeError("serialized run must be a JSON object")
    doc = upgrade(doc)
    try:
        return run_from_dict(doc)
    except StateDecodeError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise StateDecodeError(f"serialized run has an invalid shape: {exc!r}") from None
