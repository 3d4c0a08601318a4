"""Strict decoding of a stored run (current schema; older ones go through serde's upgraders).

A field of the wrong JSON type or out of range is refused with `StateDecodeError` naming its
path (`state.ExecutingTools[0].tool_call.function.name`), never coerced: `"false"` is not a
bool, `2.9` not a count. Required and optional keys follow upstream's serde attributes
(an `Option` field may be absent or null, a `#[serde(default)]` field may be absent);
unknown keys are ignored, as upstream's deserializer does.

The field readers (and how a refusal's path is assembled) are in `app.core.fields`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

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
    each_item,
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

if TYPE_CHECKING:
    from app.core.run import AgentRun, State


# --- content --------------------------------------------------------------------------------

_ZERO_USAGE = Usage()


def _usage(value: Any) -> Usage:
    """Upstream's `Usage`: every counter required except `tool_use_prompt_tokens`."""
    d = obj(value)
    return Usage(
        *(count(d, k, 0) if k == "tool_use_prompt_tokens" else count(d, k) for k in USAGE_FIELDS)
    )


def _call_usage(value: Any) -> Usage:
    """A completion call's usage; `null` is zero (upstream's pre-monoid tolerance)."""
    return _ZERO_USAGE if value is None else _usage(value)


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


def _assistant_content(value: Any) -> AssistantContent:
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


def _stored_result(value: Any) -> ToolResult:
    """A preresolved/skipped result: user content that must be a tool result."""
    d = obj(value)
    tag(d, STORED_RESULT_TAGS, "stored tool result")
    return _tool_result(d)


def _message(value: Any) -> Message:
    if type(value) is not dict:
        raise expected("an object", value)
    d = value
    role = d.get("role")
    if role == "system":
        return SystemMessage(text(d, "content"))
    if role == "user":
        return UserMessage(each(d, "content", _user_content))
    if role == "assistant":
        return AssistantMessage(each(d, "content", _assistant_content), optional_text(d, "id"))
    text(d, "role")  # refuses a missing or non-string role
    raise Bad(": unknown message role", ".role")


# --- run records ----------------------------------------------------------------------------


def _tool_choice(value: Any) -> ToolChoice | None:
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


def _completion_call(value: Any) -> CompletionCall:
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


def _response(value: Any) -> PromptResponse:
    d = obj(value)
    messages = d.get("messages")
    return PromptResponse(
        output=text(d, "output"),
        usage=within(".usage", _usage, field(d, "usage")),
        completion_calls=tuple(each(d, "completion_calls", _completion_call, [])),
        messages=None if messages is None else tuple(each(d, "messages", _message)),
        content=tuple(each(d, "content", _assistant_content)),
    )


def _pending(value: Any) -> PendingToolCall:
    d = obj(value)
    pre = d.get("preresolved_result")
    return PendingToolCall(
        within(".tool_call", _tool_call, field(d, "tool_call")),
        None if pre is None else within(".preresolved_result", _stored_result, pre),
        optional_text(d, "internal_call_id"),
    )


def _model_turn(value: Any) -> ModelTurn:
    d = obj(value)
    return ModelTurn(
        choice=tuple(each(d, "choice", _assistant_content)),
        usage=within(".usage", _usage, field(d, "usage")),
        executable_tool_names=names(d, "executable_tool_names"),
        allowed_tool_names=names(d, "allowed_tool_names"),
        message_id=optional_text(d, "message_id"),
        response_id=optional_text(d, "response_id"),
        provider_request_id=optional_text(d, "provider_request_id"),
        finish_reason=within(".finish_reason", _finish_reason, d.get("finish_reason")),
        raw=json_value(d, "raw", None),
    )


def _skipped(d: Doc, count_of_items: int) -> dict[int, ToolResult]:
    """Skipped results keyed by item position (upstream writes the positions as strings)."""
    skipped = within(".skipped", obj, field(d, "skipped"))
    out: dict[int, ToolResult] = {}
    for position, value in skipped.items():
        segments = ("." + position, ".skipped")
        if not (position.isascii() and position.isdigit()) or int(position) >= count_of_items:
            raise Bad(": not the position of one of the items", *segments)
        try:
            out[int(position)] = _stored_result(value)
        except Bad as bad:
            bad.segments += segments
            raise
    return out


def _pair(value: Any) -> tuple[str, str]:
    if type(value) is not list or len(value) != 2:
        raise expected("a [tool call id, internal call id] pair", value)
    return within("[0]", string, value[0]), within("[1]", string, value[1])


def _resolving(value: Any) -> State:
    from app.core.run import Resolving

    d = obj(value)
    turn_items = each(d, "items", _assistant_content)
    next_index = count(d, "next_index")
    if next_index > len(turn_items):
        raise Bad(" is past the last item", ".next_index")
    return Resolving(
        message_id=optional_text(d, "message_id"),
        original_choice=tuple(each(d, "original_choice", _assistant_content)),
        items=turn_items,
        next_index=next_index,
        executable_tool_names=names(d, "executable_tool_names"),
        allowed_tool_names=names(d, "allowed_tool_names"),
        skipped=_skipped(d, len(turn_items)),
        recovered=flag(d, "recovered"),
        any_skipped=flag(d, "any_skipped"),
        has_tool_calls=flag(d, "has_tool_calls"),
    )


def _advancing(value: Any) -> State:
    from app.core.run import Advancing

    d = obj(value)
    turn_items = tuple(each(d, "items", _assistant_content))
    return Advancing(
        message_id=optional_text(d, "message_id"),
        items=turn_items,
        has_tool_calls=flag(d, "has_tool_calls"),
        skipped=_skipped(d, len(turn_items)),
        internal_call_ids=tuple(each(d, "internal_call_ids", _pair, [])),
    )


def _executing(value: Any) -> State:
    from app.core.run import Executing

    if type(value) is not list:
        raise expected("an array", value)
    return Executing(tuple(each_item(value, _pending)))


def _state(value: Any) -> State:
    from app.core.run import AWAITING_MODEL, FAILED, PREPARING_REQUEST, Finished

    if value in (PREPARING_REQUEST, AWAITING_MODEL, FAILED):
        return value  # type: ignore[no-any-return]
    if type(value) is str:
        raise Bad(": unknown run state")
    if type(value) is not dict or len(value) != 1:
        raise expected("a state name or a one-key object", value)
    ((state_name, body),) = value.items()
    decoders: dict[str, Callable[[Any], State]] = {
        "ResolvingToolCalls": _resolving,
        "AwaitingAdvance": _advancing,
        "ExecutingTools": _executing,
        "Done": lambda b: Finished(_response(b)),
    }
    decoder = decoders.get(state_name)
    if decoder is None:
        raise Bad(": unknown run state")
    return within("." + state_name, decoder, body)


def _run(value: Any) -> AgentRun:
    """A run from its (current-schema) document; field by field, as upstream's `AgentRun`."""
    from app.core.run import AgentRun

    d = obj(value)
    history = d.get("chat_history")
    run = AgentRun.__new__(AgentRun)
    run._max_turns = count(d, "max_turns")
    run._max_invalid_tool_call_retries = count(d, "max_invalid_tool_call_retries")
    run._tool_choice = within(".tool_choice", _tool_choice, d.get("tool_choice"))
    run._output_tool_name = optional_text(d, "output_tool_name")
    run._output_schema = json_value(d, "output_schema", None)
    run._max_output_retries = count(d, "max_output_retries", 0)
    run._output_retries = count(d, "output_retries", 0)
    run._chat_history = None if history is None else tuple(each(d, "chat_history", _message))
    run._new_messages = each(d, "new_messages", _message)
    run._current_turn = count(d, "current_turn")
    run._usage = within(".usage", _usage, field(d, "usage"))
    run._completion_calls = each(d, "completion_calls", _completion_call)
    run._completion_call_index = count(d, "completion_call_index")
    run._invalid_tool_call_retries = count(d, "invalid_tool_call_retries")
    run._rollback_pending = flag(d, "rollback_pending", False)
    run._streamed_completion_call_recorded = flag(d, "streamed_completion_call_recorded", False)
    run._state = within(".state", _state, field(d, "state"))
    return run


# --- the public decoders: each raises StateDecodeError naming the field ------------------


def run_from_dict(doc: Any) -> AgentRun:
    return decoded(_run, doc, "")


def message_from(d: Any, path: str = "message") -> Message:
    return decoded(_message, d, path)


def tool_call_from(d: Any, path: str = "tool_call") -> ToolCall:
    return decoded(_tool_call, d, path)


def tool_result_from(d: Any, path: str = "tool_result") -> ToolResult:
    return decoded(_tool_result, d, path)


def assistant_content_from(d: Any, path: str = "content") -> AssistantContent:
    return decoded(_assistant_content, d, path)


def user_content_from(d: Any, path: str = "content") -> UserContent:
    return decoded(_user_content, d, path)


def usage_from(d: Any, path: str = "usage") -> Usage:
    return decoded(_usage, d, path)


def completion_call_from(d: Any, path: str = "completion_call") -> CompletionCall:
    return decoded(_completion_call, d, path)


def model_turn_from(d: Any, path: str = "model_turn") -> ModelTurn:
    return decoded(_model_turn, d, path)


def tool_choice_from(v: Any, path: str = "tool_choice") -> ToolChoice | None:
    return decoded(_tool_choice, v, path)


def finish_reason_from(v: Any, path: str = "finish_reason") -> FinishReason:
    return decoded(_finish_reason, v, path)
