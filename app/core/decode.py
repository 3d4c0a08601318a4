"""Strict decoding of a stored run (current schema; older ones go through serde's upgraders).

A field of the wrong JSON type or out of range is refused with `StateDecodeError` naming its
path (`state.ExecutingTools[0].tool_call.function.name`), never coerced: `"false"` is not a
bool, `2.9` not a count. Required and optional keys follow upstream's serde attributes
(an `Option` field may be absent or null, a `#[serde(default)]` field may be absent);
unknown keys are ignored, as upstream's deserializer does.

The path is assembled only when something is wrong: a refusal is raised as `_Bad` with the
innermost segment and every enclosing object or array adds its own while it unwinds
(`try` costs nothing when nothing is raised), so a good document pays no string building.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

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
from app.core.errors import StateDecodeError
from app.core.jsonvalue import MAX_JSON_INT, InvalidJsonValue, freeze, freeze_object
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

T = TypeVar("T")
Doc = dict[str, Any]
_MISSING: Any = object()


def json_kind(value: Any) -> str:
    """The JSON type of a decoded value, for error messages (never its repr: it may be huge
    or nested beyond repr's recursion limit)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


class _Bad(Exception):
    """A refusal on its way out; `segments` are innermost first (".key", "[3]")."""

    def __init__(self, problem: str, *segments: str) -> None:
        self.problem = problem
        self.segments = list(segments)

    def error(self, root: str = "") -> StateDecodeError:
        path = (root + "".join(reversed(self.segments))).lstrip(".")
        if not path:
            return StateDecodeError(f"the document {self.problem.removeprefix(': ')}")
        return StateDecodeError(f"field `{path}`{self.problem}")


def _expected(expected: str, value: Any, *segments: str) -> _Bad:
    return _Bad(f" must be {expected}, not {json_kind(value)}", *segments)


def _decoded(fn: Callable[[Any], T], d: Any, root: str) -> T:
    """Run a decoder, turning a refusal into the public StateDecodeError."""
    try:
        return fn(d)
    except _Bad as bad:
        raise bad.error(root) from None


def _in(segment: str, fn: Callable[[Any], T], value: Any) -> T:
    """Decode a nested value, adding its path segment to a refusal."""
    try:
        return fn(value)
    except _Bad as bad:
        bad.segments.append(segment)
        raise


def _obj(value: Any) -> Doc:
    if type(value) is not dict:
        raise _expected("an object", value)
    return value


def _field(d: Doc, key: str) -> Any:
    value = d.get(key, _MISSING)
    if value is _MISSING:
        raise _Bad(" is missing", "." + key)
    return value


def _text(d: Doc, key: str) -> str:
    value = d.get(key, _MISSING)
    if type(value) is str:
        return value
    if value is _MISSING:
        raise _Bad(" is missing", "." + key)
    raise _expected("a string", value, "." + key)


def _non_empty_text(d: Doc, key: str) -> str:
    value = _text(d, key)
    if not value:
        raise _Bad(" cannot be the empty string", "." + key)
    return value


def _optional_text(d: Doc, key: str) -> str | None:
    """An upstream `Option<String>`: absent or null is None."""
    value = d.get(key)
    if value is None or type(value) is str:
        return value
    raise _expected("a string or null", value, "." + key)


def _count(d: Doc, key: str, default: Any = _MISSING) -> int:
    """An upstream `usize`/`u64`: an integer from 0 to 2**64 - 1 (no bool, no float)."""
    value = d.get(key, default)
    if type(value) is int and 0 <= value <= MAX_JSON_INT:
        return value
    if value is _MISSING:
        raise _Bad(" is missing", "." + key)
    if type(value) is int:
        raise _Bad(f" must be between 0 and {MAX_JSON_INT}, not {value}", "." + key)
    raise _expected("a non-negative integer", value, "." + key)


def _flag(d: Doc, key: str, default: Any = _MISSING) -> bool:
    value = d.get(key, default)
    if value is True or value is False:
        return bool(value)
    if value is _MISSING:
        raise _Bad(" is missing", "." + key)
    raise _expected("a boolean", value, "." + key)


def _array(d: Doc, key: str, default: Any = _MISSING) -> list[Any]:
    value = d.get(key, default)
    if type(value) is list:
        return value
    if value is _MISSING:
        raise _Bad(" is missing", "." + key)
    raise _expected("an array", value, "." + key)


def _items(items: list[Any], fn: Callable[[Any], T]) -> list[T]:
    """`fn` applied to every item of an array."""
    out: list[T] = []
    index = 0
    try:
        for index, item in enumerate(items):  # noqa: B007 (index is read on a refusal)
            out.append(fn(item))
    except _Bad as bad:
        bad.segments.append(f"[{index}]")
        raise
    return out


def _each(d: Doc, key: str, fn: Callable[[Any], T], default: Any = _MISSING) -> list[T]:
    """`fn` applied to every item of an array field."""
    items = _array(d, key, default)
    try:
        return _items(items, fn)
    except _Bad as bad:
        bad.segments.append("." + key)
        raise


def _json(d: Doc, key: str, default: Any = _MISSING) -> Any:
    """Any JSON value within the core's rule (`app.core.jsonvalue`)."""
    value = d.get(key, default)
    if value is _MISSING:
        raise _Bad(" is missing", "." + key)
    try:
        return freeze(value)
    except InvalidJsonValue as exc:
        raise _Bad(": " + exc.reason, exc.path, "." + key) from None


def _params(d: Doc, key: str) -> Any:
    """Text/image `additional_params`: absent, null and `{}` are None; else an object."""
    value = d.get(key)
    if value is None:
        return None
    try:
        return freeze_object(value)
    except InvalidJsonValue as exc:
        raise _Bad(": " + exc.reason, exc.path, "." + key) from None


def _names(d: Doc, key: str) -> frozenset[str]:
    """A set of tool names, stored as an array of strings."""
    return frozenset(_each(d, key, _string))


def _string(value: Any) -> str:
    if type(value) is not str:
        raise _expected("a string", value)
    return value


def _tag(d: Doc, known: frozenset[str], what: str) -> str:
    kind = _text(d, "type")
    if kind not in known:
        raise _Bad(f": unknown {what} type", ".type")
    return kind


# --- content --------------------------------------------------------------------------------

_ZERO_USAGE = Usage()


def _usage(value: Any) -> Usage:
    """Upstream's `Usage`: every counter required except `tool_use_prompt_tokens`."""
    d = _obj(value)
    return Usage(
        *(_count(d, k, 0) if k == "tool_use_prompt_tokens" else _count(d, k) for k in USAGE_FIELDS)
    )


def _call_usage(value: Any) -> Usage:
    """A completion call's usage; `null` is zero (upstream's pre-monoid tolerance)."""
    return _ZERO_USAGE if value is None else _usage(value)


def _provider(d: Doc) -> tuple[str | None, str | None]:
    p = d.get("provider")
    if p is None:
        return None, None
    if type(p) is not dict:
        raise _expected("an object or null", p, ".provider")
    try:
        return _non_empty_text(p, "call_id"), _optional_text(p, "item_id")
    except _Bad as bad:
        bad.segments.append(".provider")
        raise


def _tool_call(value: Any) -> ToolCall:
    if type(value) is not dict:
        raise _expected("an object", value)
    d = value
    call_id, item_id = _provider(d)
    function = d.get("function")
    if type(function) is not dict:
        _field(d, "function")  # refuses a missing key first
        raise _expected("an object", function, ".function")
    try:
        name = _text(function, "name")
        arguments = _json(function, "arguments")
    except _Bad as bad:
        bad.segments.append(".function")
        raise
    return ToolCall(
        _non_empty_text(d, "id"),
        name,
        arguments,
        call_id,
        item_id,
        _optional_text(d, "signature"),
        _json(d, "additional_params", None),
    )


def _text_item(d: Doc) -> Text:
    return Text(_text(d, "text"), _params(d, "additional_params"))


def _image_item(d: Doc) -> Image:
    return Image(
        _text(d, "data"),
        _optional_text(d, "media_type"),
        _optional_text(d, "detail"),
        _params(d, "additional_params"),
    )


def _reasoning_block(value: Any) -> ReasoningBlock:
    d = _obj(value)
    kind = _tag(d, REASONING_KINDS, "reasoning block")
    if kind == "text":
        c = _in(".content", _obj, _field(d, "content"))
        try:
            return ReasoningBlock("text", _text(c, "text"), _optional_text(c, "signature"))
        except _Bad as bad:
            bad.segments.append(".content")
            raise
    if kind == "redacted":
        return ReasoningBlock("redacted", _in(".content", _redacted, _field(d, "content")))
    return ReasoningBlock("encrypted" if kind == "encrypted" else "summary", _text(d, "content"))


def _redacted(value: Any) -> str:
    return _text(_obj(value), "data")


ASSISTANT_TAGS = frozenset({"text", "toolcall", "reasoning", "image"})
USER_TAGS = frozenset({"text", "toolresult", "image"})
RESULT_TAGS = frozenset({"text", "json", "image"})
STORED_RESULT_TAGS = frozenset({"toolresult"})


def _assistant_content(value: Any) -> AssistantContent:
    if type(value) is not dict:
        raise _expected("an object", value)
    d = value
    kind = d.get("type")
    if type(kind) is not str or kind not in ASSISTANT_TAGS:
        kind = _tag(d, ASSISTANT_TAGS, "assistant content")
    if kind == "text":
        return _text_item(d)
    if kind == "toolcall":
        return _tool_call(d)
    if kind == "reasoning":
        return Reasoning(tuple(_each(d, "content", _reasoning_block)), _optional_text(d, "id"))
    return _image_item(d)


def _result_content(value: Any) -> ToolResultContent:
    if type(value) is not dict:
        raise _expected("an object", value)
    d = value
    kind = d.get("type")
    if type(kind) is not str or kind not in RESULT_TAGS:
        kind = _tag(d, RESULT_TAGS, "tool result content")
    if kind == "text":
        return _text_item(d)
    if kind == "json":
        return Json(_json(d, "value"))
    return _image_item(d)


def _tool_result(value: Any) -> ToolResult:
    if type(value) is not dict:
        raise _expected("an object", value)
    d = value
    call_id, item_id = _provider(d)
    return ToolResult(
        _non_empty_text(d, "call"),
        _text(d, "name"),
        tuple(_each(d, "content", _result_content)),
        call_id,
        item_id,
    )


def _user_content(value: Any) -> UserContent:
    if type(value) is not dict:
        raise _expected("an object", value)
    d = value
    kind = d.get("type")
    if type(kind) is not str or kind not in USER_TAGS:
        kind = _tag(d, USER_TAGS, "user content")
    if kind == "text":
        return _text_item(d)
    if kind == "toolresult":
        return _tool_result(d)
    return _image_item(d)


def _stored_result(value: Any) -> ToolResult:
    """A preresolved/skipped result: user content that must be a tool result."""
    d = _obj(value)
    _tag(d, STORED_RESULT_TAGS, "stored tool result")
    return _tool_result(d)


def _message(value: Any) -> Message:
    if type(value) is not dict:
        raise _expected("an object", value)
    d = value
    role = d.get("role")
    if role == "system":
        return SystemMessage(_text(d, "content"))
    if role == "user":
        return UserMessage(_each(d, "content", _user_content))
    if role == "assistant":
        return AssistantMessage(_each(d, "content", _assistant_content), _optional_text(d, "id"))
    _text(d, "role")  # refuses a missing or non-string role
    raise _Bad(": unknown message role", ".role")


# --- run records ----------------------------------------------------------------------------


def _tool_choice(value: Any) -> ToolChoice | None:
    if value is None:
        return None
    if value in ("auto", "none", "required"):
        return ToolChoice(value)
    if type(value) is dict and list(value) == ["specific"]:
        specific = _in(".specific", _obj, value["specific"])
        names = _in(".specific", lambda s: _each(s, "function_names", _string), specific)
        return ToolChoice.specific(names)
    raise _Bad(": unknown tool choice")


def _finish_reason(value: Any) -> FinishReason:
    if value is None or (type(value) is str and value in KNOWN_FINISH_REASONS):
        return value
    if type(value) is dict and list(value) == ["other"]:
        return _text(value, "other")
    raise _Bad(": unknown finish reason")


def _completion_call(value: Any) -> CompletionCall:
    d = _obj(value)
    return CompletionCall(
        call_index=_count(d, "call_index"),
        usage=_in(".usage", _call_usage, d.get("usage")),
        message_id=_optional_text(d, "message_id"),
        response_id=_optional_text(d, "response_id"),
        provider_request_id=_optional_text(d, "provider_request_id"),
        finish_reason=_in(".finish_reason", _finish_reason, d.get("finish_reason")),
        raw=_json(d, "raw", None),
    )


def _response(value: Any) -> PromptResponse:
    d = _obj(value)
    messages = d.get("messages")
    return PromptResponse(
        output=_text(d, "output"),
        usage=_in(".usage", _usage, _field(d, "usage")),
        completion_calls=tuple(_each(d, "completion_calls", _completion_call, [])),
        messages=None if messages is None else tuple(_each(d, "messages", _message)),
        content=tuple(_each(d, "content", _assistant_content)),
    )


def _pending(value: Any) -> PendingToolCall:
    d = _obj(value)
    pre = d.get("preresolved_result")
    return PendingToolCall(
        _in(".tool_call", _tool_call, _field(d, "tool_call")),
        None if pre is None else _in(".preresolved_result", _stored_result, pre),
        _optional_text(d, "internal_call_id"),
    )


def _model_turn(value: Any) -> ModelTurn:
    d = _obj(value)
    return ModelTurn(
        choice=tuple(_each(d, "choice", _assistant_content)),
        usage=_in(".usage", _usage, _field(d, "usage")),
        executable_tool_names=_names(d, "executable_tool_names"),
        allowed_tool_names=_names(d, "allowed_tool_names"),
        message_id=_optional_text(d, "message_id"),
        response_id=_optional_text(d, "response_id"),
        provider_request_id=_optional_text(d, "provider_request_id"),
        finish_reason=_in(".finish_reason", _finish_reason, d.get("finish_reason")),
        raw=_json(d, "raw", None),
    )


def _skipped(d: Doc, items: int) -> dict[int, ToolResult]:
    """Skipped results keyed by item position (upstream writes the positions as strings)."""
    skipped = _in(".skipped", _obj, _field(d, "skipped"))
    out: dict[int, ToolResult] = {}
    for position, value in skipped.items():
        segments = ("." + position, ".skipped")
        if not (position.isascii() and position.isdigit()) or int(position) >= items:
            raise _Bad(": not the position of one of the items", *segments)
        try:
            out[int(position)] = _stored_result(value)
        except _Bad as bad:
            bad.segments += segments
            raise
    return out


def _pair(value: Any) -> tuple[str, str]:
    if type(value) is not list or len(value) != 2:
        raise _expected("a [tool call id, internal call id] pair", value)
    return _in("[0]", _string, value[0]), _in("[1]", _string, value[1])


def _resolving(value: Any) -> State:
    from app.core.run import Resolving

    d = _obj(value)
    items = _each(d, "items", _assistant_content)
    next_index = _count(d, "next_index")
    if next_index > len(items):
        raise _Bad(" is past the last item", ".next_index")
    return Resolving(
        message_id=_optional_text(d, "message_id"),
        original_choice=tuple(_each(d, "original_choice", _assistant_content)),
        items=items,
        next_index=next_index,
        executable_tool_names=_names(d, "executable_tool_names"),
        allowed_tool_names=_names(d, "allowed_tool_names"),
        skipped=_skipped(d, len(items)),
        recovered=_flag(d, "recovered"),
        any_skipped=_flag(d, "any_skipped"),
        has_tool_calls=_flag(d, "has_tool_calls"),
    )


def _advancing(value: Any) -> State:
    from app.core.run import Advancing

    d = _obj(value)
    items = tuple(_each(d, "items", _assistant_content))
    return Advancing(
        message_id=_optional_text(d, "message_id"),
        items=items,
        has_tool_calls=_flag(d, "has_tool_calls"),
        skipped=_skipped(d, len(items)),
        internal_call_ids=tuple(_each(d, "internal_call_ids", _pair, [])),
    )


def _executing(value: Any) -> State:
    from app.core.run import Executing

    if type(value) is not list:
        raise _expected("an array", value)
    return Executing(tuple(_items(value, _pending)))


def _state(value: Any) -> State:
    from app.core.run import AWAITING_MODEL, FAILED, PREPARING_REQUEST, Finished

    if value in (PREPARING_REQUEST, AWAITING_MODEL, FAILED):
        return value  # type: ignore[no-any-return]
    if type(value) is str:
        raise _Bad(": unknown run state")
    if type(value) is not dict or len(value) != 1:
        raise _expected("a state name or a one-key object", value)
    ((tag, body),) = value.items()
    decoders: dict[str, Callable[[Any], State]] = {
        "ResolvingToolCalls": _resolving,
        "AwaitingAdvance": _advancing,
        "ExecutingTools": _executing,
        "Done": lambda b: Finished(_response(b)),
    }
    decoder = decoders.get(tag)
    if decoder is None:
        raise _Bad(": unknown run state")
    return _in("." + tag, decoder, body)


def _run(value: Any) -> AgentRun:
    """A run from its (current-schema) document; field by field, as upstream's `AgentRun`."""
    from app.core.run import AgentRun

    d = _obj(value)
    history = d.get("chat_history")
    run = AgentRun.__new__(AgentRun)
    run._max_turns = _count(d, "max_turns")
    run._max_invalid_tool_call_retries = _count(d, "max_invalid_tool_call_retries")
    run._tool_choice = _in(".tool_choice", _tool_choice, d.get("tool_choice"))
    run._output_tool_name = _optional_text(d, "output_tool_name")
    run._output_schema = _json(d, "output_schema", None)
    run._max_output_retries = _count(d, "max_output_retries", 0)
    run._output_retries = _count(d, "output_retries", 0)
    run._chat_history = None if history is None else tuple(_each(d, "chat_history", _message))
    run._new_messages = _each(d, "new_messages", _message)
    run._current_turn = _count(d, "current_turn")
    run._usage = _in(".usage", _usage, _field(d, "usage"))
    run._completion_calls = _each(d, "completion_calls", _completion_call)
    run._completion_call_index = _count(d, "completion_call_index")
    run._invalid_tool_call_retries = _count(d, "invalid_tool_call_retries")
    run._rollback_pending = _flag(d, "rollback_pending", False)
    run._streamed_completion_call_recorded = _flag(d, "streamed_completion_call_recorded", False)
    run._state = _in(".state", _state, _field(d, "state"))
    return run


# --- the public decoders: each raises StateDecodeError naming the field ------------------


def run_from_dict(doc: Any) -> AgentRun:
    return _decoded(_run, doc, "")


def message_from(d: Any, path: str = "message") -> Message:
    return _decoded(_message, d, path)


def tool_call_from(d: Any, path: str = "tool_call") -> ToolCall:
    return _decoded(_tool_call, d, path)


def tool_result_from(d: Any, path: str = "tool_result") -> ToolResult:
    return _decoded(_tool_result, d, path)


def assistant_content_from(d: Any, path: str = "content") -> AssistantContent:
    return _decoded(_assistant_content, d, path)


def user_content_from(d: Any, path: str = "content") -> UserContent:
    return _decoded(_user_content, d, path)


def usage_from(d: Any, path: str = "usage") -> Usage:
    return _decoded(_usage, d, path)


def completion_call_from(d: Any, path: str = "completion_call") -> CompletionCall:
    return _decoded(_completion_call, d, path)


def model_turn_from(d: Any, path: str = "model_turn") -> ModelTurn:
    return _decoded(_model_turn, d, path)


def tool_choice_from(v: Any, path: str = "tool_choice") -> ToolChoice | None:
    return _decoded(_tool_choice, v, path)


def finish_reason_from(v: Any, path: str = "finish_reason") -> FinishReason:
    return _decoded(_finish_reason, v, path)
