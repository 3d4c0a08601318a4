"""Strict decoding of a stored run's values (current schema; older ones go through serde's
upgraders). The `read_*` functions raise `Bad` and are composed by `app.core.phases` and
`app.core.state`; the `*_from` functions are the public form, raising `StateDecodeError`.

A field of the wrong JSON type or out of range is refused with `StateDecodeError` naming its
path (`state.ExecutingTools[0].tool_call.function.name`), never coerced: `"false"` is not a
bool, `2.9` not a count. Required and optional keys follow upstream's serde attributes
(an `Option` field may be absent or null, a `#[serde(default)]` field may be absent);
unknown keys are ignored, as upstream's deserializer does.

The field readers (and how a refusal's path is assembled) are in `app.core.fields`.
"""

from __future__ import annotations

from typing import Any

from app.core.content import (
    REASONING_KINDS,
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
from app.core.fields import (
    Bad,
    Doc,
    count,
    decoded,
    each,
    expected,
    field,
    flag,
    json_value,
    names,
    non_empty_text,
    obj,
    optional_text,
    params,
    string,
    tag,
    text,
    within,
)
from app.core.types import (
    KNOWN_FINISH_REASONS,
    USAGE_FIELDS,
    CompletionCall,
    FinishReason,
    ModelTurn,
    PendingToolCall,
    PromptResponse,
    ToolChoice,
    Usage,
)

# --- content --------------------------------------------------------------------------------

_ZERO_USAGE = Usage()


def read_usage(value: Any) -> Usage:
    """Upstream's `Usage`: every counter required except `tool_use_prompt_tokens`."""
    d = obj(value)
    return Usage(
        *(count(d, k, 0) if k == "tool_use_prompt_tokens" else count(d, k) for k in USAGE_FIELDS)
    )


def _call_usage(value: Any) -> Usage:
    """A completion call's usage; `null` is zero (upstream's pre-monoid tolerance)."""
    return _ZERO_USAGE if value is None else read_usage(value)


def _provider(d: Doc) -> tuple[str | None, str | None]:
    p = d.get("provider")
    if p is None:
        return None, None
    if type(p) is not dict:
        raise expected("an object or null", p, ".provider")
    try:
        return non_empty_text(p, "call_id"), optional_text(p, "item_id")
    except Bad as bad:
        bad.segments.append(".provider")
        raise


def _tool_call(value: Any) -> ToolCall:
    if type(value) is not dict:
        raise expected("an object", value)
    d = value
    call_id, item_id = _provider(d)
    function = d.get("function")
    if type(function) is not dict:
        field(d, "function")  # refuses a missing key first
        raise expected("an object", function, ".function")
    try:
        name = text(function, "name")
        arguments = json_value(function, "arguments")
    except Bad as bad:
        bad.segments.append(".function")
        raise
    return ToolCall(
        non_empty_text(d, "id"),
        name,
        arguments,
        call_id,
        item_id,
        optional_text(d, "signature"),
        json_value(d, "additional_params", None),
    )


def _text_item(d: Doc) -> Text:
    return Text(text(d, "text"), params(d, "additional_params"))


def _image_item(d: Doc) -> Image:
    return Image(
        text(d, "data"),
        optional_text(d, "media_type"),
        optional_text(d, "detail"),
        params(d, "additional_params"),
    )


def _reasoning_block(value: Any) -> ReasoningBlock:
    d = obj(value)
    kind = tag(d, REASONING_KINDS, "reasoning block")
    if kind == "text":
        c = within(".content", obj, field(d, "content"))
        try:
            return ReasoningBlock("text", text(c, "text"), optional_text(c, "signature"))
        except Bad as bad:
            bad.segments.append(".content")
            raise
    if kind == "redacted":
        return ReasoningBlock("redacted", within(".content", _redacted, field(d, "content")))
    return ReasoningBlock("encrypted" if kind == "encrypted" else "summary", text(d, "content"))


def _redacted(value: Any) -> str:
    return text(obj(value), "data")


ASSISTANT_TAGS = frozenset({"text", "toolcall", "reasoning", "image"})
USER_TAGS = frozenset({"text", "toolresult", "image"})
RESULT_TAGS = frozenset({"text", "json", "image"})
STORED_RESULT_TAGS = frozenset({"toolresult"})


def read_assistant_content(value: Any) -> AssistantContent:
    if type(value) is not dict:
        raise expected("an object", value)
    d = value
    kind = d.get("type")
    if type(kind) is not str or kind not in ASSISTANT_TAGS:
        kind = tag(d, ASSISTANT_TAGS, "assistant content")
    if kind == "text":
        return _text_item(d)
    if kind == "toolcall":
        return _tool_call(d)
    if kind == "reasoning":
        return Reasoning(tuple(each(d, "content", _reasoning_block)), optional_text(d, "id"))
    return _image_item(d)


def _result_content(value: Any) -> ToolResultContent:
    if type(value) is not dict:
        raise expected("an object", value)
    d = value
    kind = d.get("type")
    if type(kind) is not str or kind not in RESULT_TAGS:
        kind = tag(d, RESULT_TAGS, "tool result content")
    if kind == "text":
        return _text_item(d)
    if kind == "json":
        return Json(json_value(d, "value"))
    return _image_item(d)


def _tool_result(value: Any) -> ToolResult:
    if type(value) is not dict:
        raise expected("an object", value)
    d = value
    call_id, item_id = _provider(d)
    return ToolResult(
        non_empty_text(d, "call"),
        text(d, "name"),
        tuple(each(d, "content", _result_content)),
        call_id,
        item_id,
        is_error=flag(d, "is_error", False),
    )


def _user_content(value: Any) -> UserContent:
    if type(value) is not dict:
        raise expected("an object", value)
    d = value
    kind = d.get("type")
    if type(kind) is not str or kind not in USER_TAGS:
        kind = tag(d, USER_TAGS, "user content")
    if kind == "text":
        return _text_item(d)
    if kind == "toolresult":
        return _tool_result(d)
    return _image_item(d)


def read_stored_result(value: Any) -> ToolResult:
    """A preresolved/skipped result: user content that must be a tool result."""
    d = obj(value)
    tag(d, STORED_RESULT_TAGS, "stored tool result")
    return _tool_result(d)


def read_message(value: Any) -> Message:
    if type(value) is not dict:
        raise expected("an object", value)
    d = value
    role = d.get("role")
    if role == "system":
        return SystemMessage(text(d, "content"))
    if role == "user":
        return UserMessage(each(d, "content", _user_content))
    if role == "assistant":
        return AssistantMessage(each(d, "content", read_assistant_content), optional_text(d, "id"))
    text(d, "role")  # refuses a missing or non-string role
    raise Bad(": unknown message role", ".role")


# --- run records ----------------------------------------------------------------------------


def read_tool_choice(value: Any) -> ToolChoice | None:
    if value is None:
        return None
    if value in ("auto", "none", "required"):
        return ToolChoice(value)
    if type(value) is dict and list(value) == ["specific"]:
        specific = within(".specific", obj, value["specific"])
        function_names = within(".specific", lambda s: each(s, "function_names", string), specific)
        return ToolChoice.specific(function_names)
    raise Bad(": unknown tool choice")


def _finish_reason(value: Any) -> FinishReason:
    if value is None or (type(value) is str and value in KNOWN_FINISH_REASONS):
        return value
    if type(value) is dict and list(value) == ["other"]:
        return text(value, "other")
    raise Bad(": unknown finish reason")


def read_completion_call(value: Any) -> CompletionCall:
    d = obj(value)
    return CompletionCall(
        call_index=count(d, "call_index"),
        usage=within(".usage", _call_usage, d.get("usage")),
        message_id=optional_text(d, "message_id"),
        response_id=optional_text(d, "response_id"),
        provider_request_id=optional_text(d, "provider_request_id"),
        finish_reason=within(".finish_reason", _finish_reason, d.get("finish_reason")),
        raw=json_value(d, "raw", None),
    )


def read_response(value: Any) -> PromptResponse:
    d = obj(value)
    messages = d.get("messages")
    return PromptResponse(
        output=text(d, "output"),
        usage=within(".usage", read_usage, field(d, "usage")),
        completion_calls=tuple(each(d, "completion_calls", read_completion_call, [])),
        messages=None if messages is None else tuple(each(d, "messages", read_message)),
        content=tuple(each(d, "content", read_assistant_content)),
    )


def read_pending(value: Any) -> PendingToolCall:
    d = obj(value)
    pre = d.get("preresolved_result")
    return PendingToolCall(
        within(".tool_call", _tool_call, field(d, "tool_call")),
        None if pre is None else within(".preresolved_result", read_stored_result, pre),
        optional_text(d, "internal_call_id"),
    )


def _model_turn(value: Any) -> ModelTurn:
    d = obj(value)
    return ModelTurn(
        choice=tuple(each(d, "choice", read_assistant_content)),
        usage=within(".usage", read_usage, field(d, "usage")),
        executable_tool_names=names(d, "executable_tool_names"),
        allowed_tool_names=names(d, "allowed_tool_names"),
        message_id=optional_text(d, "message_id"),
        response_id=optional_text(d, "response_id"),
        provider_request_id=optional_text(d, "provider_request_id"),
        finish_reason=within(".finish_reason", _finish_reason, d.get("finish_reason")),
        raw=json_value(d, "raw", None),
    )


# --- the public decoders: each raises StateDecodeError naming the field ------------------


def message_from(d: Any, path: str = "message") -> Message:
    return decoded(read_message, d, path)


def tool_call_from(d: Any, path: str = "tool_call") -> ToolCall:
    return decoded(_tool_call, d, path)


def tool_result_from(d: Any, path: str = "tool_result") -> ToolResult:
    return decoded(_tool_result, d, path)


def assistant_content_from(d: Any, path: str = "content") -> AssistantContent:
    return decoded(read_assistant_content, d, path)


def user_content_from(d: Any, path: str = "content") -> UserContent:
    return decoded(_user_content, d, path)


def usage_from(d: Any, path: str = "usage") -> Usage:
    return decoded(read_usage, d, path)


def completion_call_from(d: Any, path: str = "completion_call") -> CompletionCall:
    return decoded(read_completion_call, d, path)


def model_turn_from(d: Any, path: str = "model_turn") -> ModelTurn:
    return decoded(_model_turn, d, path)


def tool_choice_from(v: Any, path: str = "tool_choice") -> ToolChoice | None:
    return decoded(read_tool_choice, v, path)


def finish_reason_from(v: Any, path: str = "finish_reason") -> FinishReason:
    return decoded(_finish_reason, v, path)
