"""Upstream's helper predicates and builders (behaviour spec §0.2; rig's prompt module):
pure functions of a turn's content that `AgentRun` decides with."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from app.core.content import AssistantContent, Image, Text, ToolCall, ToolResult, UserMessage
from app.core.types import TOOL_NOT_EXECUTED_DUE_TO_INVALID_PEER


def is_empty_assistant_turn(items: Sequence[AssistantContent]) -> bool:
    if not items:
        return True
    if len(items) == 1:
        only = items[0]
        return isinstance(only, Text) and only.text == "" and only.additional_params is None
    return False


def turn_delivered_no_answer(items: Sequence[AssistantContent]) -> bool:
    return not any(
        (isinstance(i, Text) and i.text != "") or isinstance(i, ToolCall | Image) for i in items
    )


def assistant_text_from_choice(items: Sequence[AssistantContent]) -> str:
    return "".join(i.text for i in items if isinstance(i, Text))


def has_tool_call(items: Iterable[AssistantContent]) -> bool:
    return any(isinstance(i, ToolCall) for i in items)


def retry_result_message(
    items: Sequence[AssistantContent], invalid_id: str, feedback: str
) -> UserMessage | None:
    """One user message answering every tool call of `items`: the invalid id gets the
    feedback, every other call TOOL_NOT_EXECUTED_DUE_TO_INVALID_PEER. None without calls."""
    results = [
        ToolResult.text(
            i,
            feedback if i.id == invalid_id else TOOL_NOT_EXECUTED_DUE_TO_INVALID_PEER,
            is_error=True,
        )
        for i in items
        if isinstance(i, ToolCall)
    ]
    return UserMessage(results) if results else None


def missing_required_fields(schema: Any, arguments: Any) -> list[str]:
    """The schema's top-level `required` strings absent from the arguments (all of them
    when the arguments are not an object)."""
    if not isinstance(schema, Mapping):
        return []
    required = schema.get("required")
    if not isinstance(required, list):
        return []
    names = [r for r in required if isinstance(r, str)]
    if not isinstance(arguments, Mapping):
        return names
    return [n for n in names if n not in arguments]


def reject_constant(name: str) -> Any:
    """NaN and Infinity are not JSON (upstream's parser refuses them too)."""
    raise ValueError(f"{name} is not valid JSON")


def truncation_message(finish_reason: str) -> str:
    if finish_reason == "length":
        shown = "Length"
        remedy = (
            "the turn ran out of output budget before producing one — raise max_tokens for "
            "this request"
        )
    else:
        shown = "ContentFilter"
        remedy = (
            "the provider filtered the response — the content, not the budget, is what it "
            "objected to"
        )
    return f"the model produced no answer and stopped with finish_reason={shown}; {remedy}"
