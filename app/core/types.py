"""Value types of the step protocol: inputs, outputs, steps, outcomes and actions."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from app.core.content import (
    AssistantContent,
    Message,
    Reasoning,
    ToolCall,
    ToolResult,
)
from app.core.jsonvalue import freeze

TOOL_NOT_EXECUTED_DUE_TO_INVALID_PEER = (
    "Tool not executed because another tool call in the same assistant turn was invalid."
)

#: "stop" | "length" | "tool_calls" | "content_filter" | any other provider reason | None
FinishReason: TypeAlias = str | None
KNOWN_FINISH_REASONS = frozenset({"stop", "length", "tool_calls", "content_filter"})


def _set(obj: object, name: str, value: object) -> None:
    object.__setattr__(obj, name, value)


@dataclass(frozen=True, slots=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    cached_input_tokens: int = 0
    cache_creation_input_tokens: int = 0
    tool_use_prompt_tokens: int = 0
    reasoning_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.total_tokens + other.total_tokens,
            self.cached_input_tokens + other.cached_input_tokens,
            self.cache_creation_input_tokens + other.cache_creation_input_tokens,
            self.tool_use_prompt_tokens + other.tool_use_prompt_tokens,
            self.reasoning_tokens + other.reasoning_tokens,
        )


@dataclass(frozen=True, slots=True)
class ToolChoice:
    kind: Literal["auto", "none", "required", "specific"]
    function_names: tuple[str, ...] = ()

    @classmethod
    def auto(cls) -> ToolChoice:
        return cls("auto")

    @classmethod
    def none(cls) -> ToolChoice:
        return cls("none")

    @classmethod
    def required(cls) -> ToolChoice:
        return cls("required")

    @classmethod
    def specific(cls, function_names: Iterable[str]) -> ToolChoice:
        return cls("specific", tuple(function_names))


@dataclass(frozen=True, slots=True)
class CompletionCall:
    """One model call as recorded by the run (usage is counted even for rejected turns)."""

    call_index: int
    usage: Usage = Usage()
    message_id: str | None = None
    response_id: str | None = None
    provider_request_id: str | None = None
    finish_reason: FinishReason = None
    raw: Any = None

    def __post_init__(self) -> None:
        _set(self, "raw", freeze(self.raw))


@dataclass(frozen=True, slots=True)
class PromptResponse:
    output: str
    usage: Usage
    completion_calls: tuple[CompletionCall, ...]
    messages: tuple[Message, ...] | None
    content: tuple[AssistantContent, ...]
    output_tool_calls: int = 0  # never serialised, as upstream


@dataclass(frozen=True, slots=True)
class ModelTurn:
    """One blocking model answer, with the tool sets the driver advertised for that turn."""

    choice: tuple[AssistantContent, ...]
    usage: Usage = Usage()
    executable_tool_names: frozenset[str] = frozenset()
    allowed_tool_names: frozenset[str] = frozenset()
    message_id: str | None = None
    response_id: str | None = None
    provider_request_id: str | None = None
    finish_reason: FinishReason = None
    raw: Any = None

    def __post_init__(self) -> None:
        _set(self, "choice", tuple(self.choice))
        _set(self, "executable_tool_names", frozenset(self.executable_tool_names))
        _set(self, "allowed_tool_names", frozenset(self.allowed_tool_names))
        _set(self, "raw", freeze(self.raw))


@dataclass(frozen=True, slots=True)
class PendingToolCall:
    """A call to execute, or, with `preresolved_result`, to answer verbatim without running."""

    tool_call: ToolCall
    preresolved_result: ToolResult | None = None
    internal_call_id: str | None = None


# --- steps returned by next_step() ---------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CallModel:
    prompt: Message
    history: tuple[Message, ...]
    turn: int


@dataclass(frozen=True, slots=True)
class CallTools:
    calls: tuple[PendingToolCall, ...]


@dataclass(frozen=True, slots=True)
class Done:
    response: PromptResponse


AgentRunStep: TypeAlias = CallModel | CallTools | Done


# --- invalid tool-call handling -------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class InvalidToolCallContext:
    tool_name: str
    tool_call_id: str | None
    internal_call_id: str | None
    args: str
    available_tools: tuple[str, ...]
    allowed_tools: tuple[str, ...]
    tool_choice: ToolChoice | None
    chat_history: tuple[Message, ...]
    is_streaming: bool


@dataclass(frozen=True, slots=True)
class Continue:
    response_hook_suppressed: bool = False


@dataclass(frozen=True, slots=True)
class NeedsResolution:
    context: InvalidToolCallContext


@dataclass(frozen=True, slots=True)
class TurnRetried:
    pass


ModelTurnOutcome: TypeAlias = Continue | NeedsResolution | TurnRetried


@dataclass(frozen=True, slots=True)
class Fail:
    pass


@dataclass(frozen=True, slots=True)
class Retry:
    feedback: str


@dataclass(frozen=True, slots=True)
class Repair:
    tool_name: str


@dataclass(frozen=True, slots=True)
class Skip:
    reason: str


@dataclass(frozen=True, slots=True)
class Stop:
    reason: str


InvalidToolCallAction: TypeAlias = Fail | Retry | Repair | Skip | Stop


@dataclass(frozen=True, slots=True)
class Repeat:
    pass


@dataclass(frozen=True, slots=True)
class Feedback:
    text: str


RetryRequest: TypeAlias = Repeat | Feedback


# --- streamed path ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CompletionIdentity:
    message_id: str | None = None
    response_id: str | None = None
    provider_request_id: str | None = None


@dataclass(frozen=True, slots=True)
class StreamedTurn:
    """A complete streamed assistant turn, as assembled by the streaming driver."""

    choice: tuple[AssistantContent, ...]
    executable_tool_names: frozenset[str] = frozenset()
    allowed_tool_names: frozenset[str] = frozenset()
    message_id: str | None = None
    internal_call_ids: tuple[tuple[str, str], ...] = ()
    finish_reason: FinishReason = None

    def __post_init__(self) -> None:
        _set(self, "choice", tuple(self.choice))
        _set(self, "executable_tool_names", frozenset(self.executable_tool_names))
        _set(self, "allowed_tool_names", frozenset(self.allowed_tool_names))
        _set(self, "internal_call_ids", tuple(tuple(p) for p in self.internal_call_ids))


@dataclass(frozen=True, slots=True)
class PartialStreamedTurn:
    """What a stream delivered before an invalid tool call showed up."""

    message_id: str | None = None
    text: str | None = None
    reasoning: tuple[Reasoning, ...] = ()
    pending_tool_calls: tuple[ToolCall, ...] = ()

    def __post_init__(self) -> None:
        _set(self, "reasoning", tuple(self.reasoning))
        _set(self, "pending_tool_calls", tuple(self.pending_tool_calls))


@dataclass(frozen=True, slots=True)
class StreamedInvalidToolCall:
    tool_call: ToolCall
    internal_call_id: str
    args: str | None = None
    executable_tool_names: frozenset[str] = field(default_factory=frozenset)
    allowed_tool_names: frozenset[str] = field(default_factory=frozenset)

    def __post_init__(self) -> None:
        _set(self, "executable_tool_names", frozenset(self.executable_tool_names))
        _set(self, "allowed_tool_names", frozenset(self.allowed_tool_names))


@dataclass(frozen=True, slots=True)
class Repaired:
    tool_name: str


@dataclass(frozen=True, slots=True)
class TurnAbandoned:
    skipped_tool_result: ToolResult | None = None


StreamedResolution: TypeAlias = Repaired | TurnAbandoned
