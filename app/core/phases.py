"""The phase a run is in (upstream's `AgentRunState`) and its JSON form.

A phase is a bare name (`PreparingRequest`, `AwaitingModel`, `Failed`) or one of the
classes below with its data. In JSON it is externally tagged, as upstream's serde writes
it: the name as a string, or a one-key object such as `{"ExecutingTools": [...]}`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, TypeAlias

from app.core.content import AssistantContent, ToolResult
from app.core.decode import read_assistant_content, read_pending, read_response, read_stored_result
from app.core.encode import (
    Lists,
    assistant_content_to_dict,
    pending_to_dict,
    response_to_dict,
    tool_result_to_dict,
)
from app.core.fields import (
    Bad,
    Doc,
    count,
    each,
    each_item,
    expected,
    field,
    flag,
    names,
    obj,
    optional_text,
    string,
    within,
)
from app.core.types import PendingToolCall, PromptResponse

PREPARING_REQUEST = "PreparingRequest"
AWAITING_MODEL = "AwaitingModel"
FAILED = "Failed"
NAMED = (PREPARING_REQUEST, AWAITING_MODEL, FAILED)


@dataclass(slots=True)
class Resolving:
    """`ResolvingToolCalls`: scanning a turn's tool calls, parked on an invalid one."""

    message_id: str | None
    original_choice: tuple[AssistantContent, ...]
    items: list[AssistantContent]
    next_index: int
    executable_tool_names: frozenset[str]
    allowed_tool_names: frozenset[str]
    skipped: dict[int, ToolResult]
    recovered: bool
    any_skipped: bool
    has_tool_calls: bool


@dataclass(frozen=True, slots=True)
class Advancing:
    """`AwaitingAdvance`: an accepted turn, not yet in history."""

    message_id: str | None
    items: tuple[AssistantContent, ...]
    has_tool_calls: bool
    skipped: dict[int, ToolResult]
    internal_call_ids: tuple[tuple[str, str], ...]


@dataclass(frozen=True, slots=True)
class Executing:
    """`ExecutingTools`: waiting for one `tool_results` call answering every call."""

    calls: tuple[PendingToolCall, ...]


@dataclass(frozen=True, slots=True)
class Finished:
    """`Done`."""

    response: PromptResponse


Phase: TypeAlias = str | Resolving | Advancing | Executing | Finished

_NAMES: dict[type, str] = {
    Resolving: "ResolvingToolCalls",
    Advancing: "AwaitingAdvance",
    Executing: "ExecutingTools",
    Finished: "Done",
}


def phase_name(phase: Phase) -> str:
    return phase if isinstance(phase, str) else _NAMES[type(phase)]


def copy_phase(phase: Phase) -> Phase:
    """The phase with its own containers, so that changing one leaves the other alone."""
    if isinstance(phase, Resolving):
        return replace(phase, items=list(phase.items), skipped=dict(phase.skipped))
    if isinstance(phase, Advancing):
        return replace(phase, skipped=dict(phase.skipped))
    return phase  # a name, or frozen all the way down


# --- JSON -----------------------------------------------------------------------------------


def _skipped_to_json(skipped: dict[int, ToolResult]) -> Doc:
    return {str(k): tool_result_to_dict(v) for k, v in skipped.items()}


def phase_to_json(phase: Phase, log: Lists | None = None) -> Any:
    """`log`: the run's own messages and calls, which a finished run's response counts
    instead of repeating (`encode.response_to_dict`)."""
    if isinstance(phase, str):
        return phase
    if isinstance(phase, Resolving):
        body: Any = {
            "message_id": phase.message_id,
            "original_choice": [assistant_content_to_dict(c) for c in phase.original_choice],
            "items": [assistant_content_to_dict(c) for c in phase.items],
            "next_index": phase.next_index,
            "executable_tool_names": sorted(phase.executable_tool_names),
            "allowed_tool_names": sorted(phase.allowed_tool_names),
            "skipped": _skipped_to_json(phase.skipped),
            "recovered": phase.recovered,
            "any_skipped": phase.any_skipped,
            "has_tool_calls": phase.has_tool_calls,
        }
    elif isinstance(phase, Advancing):
        body = {
            "message_id": phase.message_id,
            "items": [assistant_content_to_dict(c) for c in phase.items],
            "has_tool_calls": phase.has_tool_calls,
            "skipped": _skipped_to_json(phase.skipped),
            "internal_call_ids": [list(p) for p in phase.internal_call_ids],
        }
    elif isinstance(phase, Executing):
        body = [pending_to_dict(p) for p in phase.calls]
    else:
        body = response_to_dict(phase.response, log)
    return {_NAMES[type(phase)]: body}


def _skipped(d: Doc, count_of_items: int) -> dict[int, ToolResult]:
    """Skipped results keyed by item position (upstream writes the positions as strings)."""
    skipped = within(".skipped", obj, field(d, "skipped"))
    out: dict[int, ToolResult] = {}
    for position, value in skipped.items():
        segments = ("." + position, ".skipped")
        if not (position.isascii() and position.isdigit()) or int(position) >= count_of_items:
            raise Bad(": not the position of one of the items", *segments)
        try:
            out[int(position)] = read_stored_result(value)
        except Bad as bad:
            bad.segments += segments
            raise
    return out


def _pair(value: Any) -> tuple[str, str]:
    if type(value) is not list or len(value) != 2:
        raise expected("a [tool call id, internal call id] pair", value)
    return within("[0]", string, value[0]), within("[1]", string, value[1])


def _resolving(value: Any) -> Resolving:
    d = obj(value)
    turn_items = each(d, "items", read_assistant_content)
    next_index = count(d, "next_index")
    if next_index > len(turn_items):
        raise Bad(" is past the last item", ".next_index")
    return Resolving(
        message_id=optional_text(d, "message_id"),
        original_choice=tuple(each(d, "original_choice", read_assistant_content)),
        items=turn_items,
        next_index=next_index,
        executable_tool_names=names(d, "executable_tool_names"),
        allowed_tool_names=names(d, "allowed_tool_names"),
        skipped=_skipped(d, len(turn_items)),
        recovered=flag(d, "recovered"),
        any_skipped=flag(d, "any_skipped"),
        has_tool_calls=flag(d, "has_tool_calls"),
    )


def _advancing(value: Any) -> Advancing:
    d = obj(value)
    turn_items = tuple(each(d, "items", read_assistant_content))
    return Advancing(
        message_id=optional_text(d, "message_id"),
        items=turn_items,
        has_tool_calls=flag(d, "has_tool_calls"),
        skipped=_skipped(d, len(turn_items)),
        internal_call_ids=tuple(each(d, "internal_call_ids", _pair, [])),
    )


def _executing(value: Any) -> Executing:
    if type(value) is not list:
        raise expected("an array", value)
    return Executing(tuple(each_item(value, read_pending)))


def _finished(value: Any) -> Finished:
    return Finished(read_response(value))


_READERS: dict[str, Callable[[Any], Phase]] = {
    "ResolvingToolCalls": _resolving,
    "AwaitingAdvance": _advancing,
    "ExecutingTools": _executing,
    "Done": _finished,
}


def read_phase(value: Any) -> Phase:
    """A phase from its JSON (raises `Bad`)."""
    if value in NAMED:
        return value  # type: ignore[no-any-return]
    if type(value) is str:
        raise Bad(": unknown run state")
    if type(value) is not dict or len(value) != 1:
        raise expected("a state name or a one-key object", value)
    ((name, body),) = value.items()
    reader = _READERS.get(name)
    if reader is None:
        raise Bad(": unknown run state")
    return within("." + name, reader, body)
