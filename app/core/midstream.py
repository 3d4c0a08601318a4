"""Resolving an invalid tool call in the middle of a stream (behaviour spec §1.4, §6.6;
scenarios 70-81): the values `AgentRun._resolve_streamed_invalid_tool_call` takes and
returns.

Not part of the core's public API. The port keeps upstream's mid-stream resolution, but
the worker reads a whole stream before it validates anything and resolves an invalid call
through the blocking path (`app.worker.streaming.ingest_streamed`); the streamed path it
uses is `record_streamed_completion_call` and `streamed_turn` with a `StreamedTurn`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypeAlias

from app.core.checks import check_instance, check_optional_str, check_str, items_of, names_of
from app.core.content import Reasoning, ToolCall, ToolResult
from app.core.types import check_identity


@dataclass(frozen=True, slots=True)
class PartialStreamedTurn:
    """What a stream delivered before an invalid tool call showed up."""

    message_id: str | None = None
    text: str | None = None
    reasoning: tuple[Reasoning, ...] = ()
    pending_tool_calls: tuple[ToolCall, ...] = ()

    def __post_init__(self) -> None:
        check_identity(self, "message_id", "text")
        reasoning = items_of("PartialStreamedTurn", "reasoning", self.reasoning, Reasoning)
        object.__setattr__(self, "reasoning", reasoning)
        calls = items_of(
            "PartialStreamedTurn", "pending_tool_calls", self.pending_tool_calls, ToolCall
        )
        object.__setattr__(self, "pending_tool_calls", calls)


@dataclass(frozen=True, slots=True)
class StreamedInvalidToolCall:
    tool_call: ToolCall
    internal_call_id: str
    args: str | None = None
    executable_tool_names: frozenset[str] = field(default_factory=frozenset)
    allowed_tool_names: frozenset[str] = field(default_factory=frozenset)

    def __post_init__(self) -> None:
        owner = "StreamedInvalidToolCall"
        check_instance(owner, "tool_call", self.tool_call, ToolCall)
        check_str(owner, "internal_call_id", self.internal_call_id)
        check_optional_str(owner, "args", self.args)
        for name in ("executable_tool_names", "allowed_tool_names"):
            object.__setattr__(self, name, names_of(owner, name, getattr(self, name)))


@dataclass(frozen=True, slots=True)
class Repaired:
    tool_name: str


@dataclass(frozen=True, slots=True)
class TurnAbandoned:
    skipped_tool_result: ToolResult | None = None


StreamedResolution: TypeAlias = Repaired | TurnAbandoned
