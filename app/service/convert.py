"""Mapping between API shapes and `app.core` values (kept out of the core and the store)."""

from __future__ import annotations

import hashlib
from typing import Any

import orjson

from app.core import (
    AssistantMessage,
    Json,
    Message,
    PendingToolCall,
    SystemMessage,
    Text,
    ToolChoice,
    ToolResult,
    UserMessage,
)
from app.core.serde import message_from
from app.service.errors import InvalidRequest
from app.service.schemas import HistoryMessage, SpecificTool, ToolChoiceIn
from app.store.config import tool_choice_of


def canonical_hash(value: Any) -> str:
    return hashlib.sha256(orjson.dumps(value, option=orjson.OPT_SORT_KEYS)).hexdigest()


def history_message(m: HistoryMessage) -> Message:
    if isinstance(m.content, str):
        if m.role == "system":
            return SystemMessage(m.content)
        if m.role == "user":
            return UserMessage(m.content)
        return AssistantMessage(m.content, m.id)
    doc: dict[str, Any] = {"role": m.role, "content": m.content}
    if m.role == "assistant":
        doc["id"] = m.id
    try:
        return message_from(doc)
    except (KeyError, TypeError, ValueError) as exc:
        raise InvalidRequest(f"history message is malformed: {exc}") from None


def tool_choice(choice: ToolChoiceIn | None) -> ToolChoice | None:
    if choice is None:
        return None
    if isinstance(choice, SpecificTool):
        return ToolChoice.specific([choice.name])
    return ToolChoice(choice)


def tool_choice_from_config(value: Any) -> ToolChoice | None:
    """A stored `tool_choice` as the core's value (`app.store.config`)."""
    return tool_choice_of(value)


def allowed_tool_names(tools: list[str], choice: ToolChoice | None) -> frozenset[str]:
    """Upstream's per-turn allowed set: none → {}, specific → those names, else all."""
    if choice is None or choice.kind in ("auto", "required"):
        return frozenset(tools)
    if choice.kind == "none":
        return frozenset()
    return frozenset(choice.function_names)


#: What follows the result of a call approved with edited arguments, so that the model
#: knows what ran (its own arguments stay in its history): then the arguments executed, as
#: compact JSON with sorted keys.
EDITED_NOTE = "Note: this call's arguments were edited on approval; it ran with: "


def submitted_result(
    pending: PendingToolCall, result: dict[str, Any], executed: Any = None
) -> ToolResult:
    """A client's `{"output", "is_error"}` as the tool result answering `pending`: a string
    output is text, anything else JSON; `is_error` is the result's flag, which every wire
    carries to the model (see `app.providers`). A call approved with edited arguments
    (`executed`) gets a second, text part: `EDITED_NOTE` and those arguments."""
    output = result["output"]
    content: tuple[Text | Json, ...] = (Text(output) if isinstance(output, str) else Json(output),)
    if executed is not None:
        shown = orjson.dumps(executed, option=orjson.OPT_SORT_KEYS).decode()
        content = (*content, Text(EDITED_NOTE + shown))
    return ToolResult.for_call(pending.tool_call, content, is_error=bool(result.get("is_error")))
