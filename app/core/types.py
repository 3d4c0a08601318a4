"""Value types of the step protocol: inputs, outputs, steps, outcomes and actions."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

from app.core.checks import (
    check_count,
    check_instance,
    check_optional_str,
    check_str,
    items_of,
    names_of,
)
from app.core.content import (
    ASSISTANT_ITEMS,
    AssistantContent,
    Message,
    ToolCall,
    ToolResult,
)
from app.core.jsonvalue import MAX_JSON_INT, freeze

TOOL_NOT_EXECUTED_DUE_TO_INVALID_PEER = (
    "Tool not executed because another tool call in the same assistant turn was invalid."
)

#: "stop" | "length" | "tool_calls" | "content_filter" | any other provider reason | None
FinishReason: TypeAlias = str | None
KNOWN_FINISH_REASONS = frozenset({"stop", "length", "tool_calls", "content_filter"})


def _set(obj: object, name: str, value: object) -> None:
    object.__setattr__(obj, name, value)


def check_identity(obj: object, *fields: str) -> None:
    """Optional string fields (ids, a finish reason): None or a valid str."""
    for name in fields:
        value = getattr(obj, name)
        if value is not None and not (type(value) is str and value.isascii()):
            check_optional_str(type(obj).__name__, name, value)


USAGE_FIELDS = (
    "input_tokens",
    "output_tokens",
    "total_tokens",
    "cached_input_tokens",
    "cache_creation_input_tokens",
    "tool_use_prompt_tokens",
    "reasoning_tokens",
)


@dataclass(frozen=True, slots=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    cached_input_tokens: int = 0
    cache_creation_input_tokens: int = 0
    tool_use_prompt_tokens: int = 0
    reasoning_tokens: int = 0

    def __post_init__(self) -> None:
        for name in USAGE_FIELDS:
            value = getattr(self, name)
            if type(value) is not int or not 0 <= value <= MAX_JSON_INT:
                check_count("Usage", name, value)

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

    def __post_init__(self) -> None:
        if self.kind not in ("auto", "none", "required", "specific"):
            raise ValueError(f"unknown ToolChoice kind {self.kind!r}")
        names = items_of("ToolChoice", "function_names", self.function_names, str)
        for name in names:
            check_str("ToolChoice", "function_names item", name)
        if names and self.kind != "specific":
            raise ValueError("only ToolChoice.specific carries function names")
        _set(self, "function_names", names)

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
        if type(self.call_index) is not int or not 0 <= self.call_index <= MAX_JSON_INT:
            check_count("CompletionCall", "call_index", self.call_index)
        if type(self.usage) is not Usage:
            check_instance("CompletionCall", "usage", self.usage, Usage)
        check_identity(self, "message_id", "response_id", "provider_request_id", "finish_reason")
        _set(self, "raw", freeze(self.raw, "CompletionCall.raw"))


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
        _set(self, "choice", items_of("ModelTurn", "choice", self.choice, ASSISTANT_ITEMS))
        check_instance("ModelTurn", "usage", self.usage, Usage)
        for name in ("executable_tool_names", "allowed_tool_names"):
            _set(self, name, names_of("ModelTurn", name, getattr(self, name)))
        check_identity(self, "message_id", "response_id", "provider_request_id", "finish_reason")
        _set(self, "raw", freeze(self.raw, "ModelTurn.raw"))


@dataclass(frozen=True, slots=True)
class PendingToolCall:
    """A call to execute, or, with `preresolved_result`, to answer verbatim without running."""

    tool_call: ToolCall
    preresolved_result: ToolResult | None = None
    internal_call_id: str | None = None

    def __post_init__(self) -> None:
        if type(self.tool_call) is not ToolCall:
            check_instance("PendingToolCall", "tool_call", self.tool_call, ToolCall)
        if self.preresolved_result is not None:
            check_instance(
                "PendingToolCall", "preresolved_result", self.preresolved_result, ToolResult
            )
        if self.internal_call_id is not None:
            check_str("PendingToolCall", "internal_call_id", self.internal_call_id)


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

    def __post_init__(self) -> None:
        check_str("Retry", "feedback", self.feedback)


@dataclass(frozen=True, slots=True)
class Repair:
    tool_name: str

    def __post_init__(self) -> None:
        check_str("Repair", "tool_name", self.tool_name)


@dataclass(frozen=True, slots=True)
class Skip:
    reason: str

    def __post_init__(self) -> None:
        check_str("Skip", "reason", self.reason)


@dataclass(frozen=True, slots=True)
class Stop:
    reason: str

    def __post_init__(self) -> None:
        check_str("Stop", "reason", self.reason)


InvalidToolCallAction: TypeAlias = Fail | Retry | Repair | Skip | Stop


@dataclass(frozen=True, slots=True)
class Repeat:
    pass


@dataclass(frozen=True, slots=True)
class Feedback:
    text: str

    def __post_init__(self) -> None:
        check_str("Feedback", "text", self.text)


RetryRequest: TypeAlias = Repeat | Feedback


# --- streamed path ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CompletionIdentity:
    message_id: str | None = None
    response_id: str | None = None
    provider_request_id: str | None = None

    def __post_init__(self) -> None:
        check_identity(self, "message_id", "response_id", "provider_request_id")


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
        _set(self, "choice", items_of("StreamedTurn", "choice", self.choice, ASSISTANT_ITEMS))
        for name in ("executable_tool_names", "allowed_tool_names"):
            _set(self, name, names_of("StreamedTurn", name, getattr(self, name)))
        check_identity(self, "message_id", "finish_reason")
        pairs = tuple(
            tuple(p)
            for p in items_of(
                "StreamedTurn", "internal_call_ids", self.internal_call_ids, (tuple, list)
            )
        )
        for pair in pairs:
            if len(pair) != 2:
                raise ValueError(
                    "StreamedTurn.internal_call_ids holds (tool call id, internal id) pairs"
                )
            for part in pair:
                check_str("StreamedTurn", "internal_call_ids item", part)
        _set(self, "internal_call_ids", pairs)
