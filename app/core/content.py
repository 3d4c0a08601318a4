"""Messages and their content items: rig's message model as frozen dataclasses."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from app.core.ids import mint_id
from app.core.jsonvalue import freeze

JsonObject: TypeAlias = Mapping[str, Any]


def _set(obj: object, name: str, value: object) -> None:
    object.__setattr__(obj, name, value)


def _freeze_params(obj: object, name: str) -> None:
    value = getattr(obj, name)
    if value is not None:
        _set(obj, name, freeze(value))


@dataclass(frozen=True, slots=True)
class Text:
    """A text item. `additional_params` is a provider annotation (None when absent)."""

    text: str
    additional_params: JsonObject | None = None

    def __post_init__(self) -> None:
        _freeze_params(self, "additional_params")


@dataclass(frozen=True, slots=True)
class Json:
    """Structured tool output; providers must not reinterpret it as text."""

    value: Any

    def __post_init__(self) -> None:
        _set(self, "value", freeze(self.value))


@dataclass(frozen=True, slots=True)
class Image:
    """An image, as base64 data or a URL."""

    data: str
    media_type: str | None = None
    detail: str | None = None
    additional_params: JsonObject | None = None

    def __post_init__(self) -> None:
        _freeze_params(self, "additional_params")


ReasoningKind = Literal["text", "encrypted", "redacted", "summary"]


@dataclass(frozen=True, slots=True)
class ReasoningBlock:
    """One block of a reasoning item: visible text (with a signature), an encrypted or
    redacted payload, or a summary. Kept verbatim because providers demand them back."""

    kind: ReasoningKind
    text: str
    signature: str | None = None


@dataclass(frozen=True, slots=True)
class Reasoning:
    """Model reasoning: never part of the output, always kept in history."""

    content: tuple[ReasoningBlock, ...]
    id: str | None = None

    def __post_init__(self) -> None:
        _set(self, "content", tuple(self.content))

    @classmethod
    def of_text(cls, text: str, signature: str | None = None, id: str | None = None) -> Reasoning:
        return cls((ReasoningBlock("text", text, signature),), id)


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A tool call requested by the model.

    `id` is rig's correlation handle and is never empty: an empty id is replaced by a fresh
    21-character id. `provider_call_id` / `provider_item_id` are what the provider issued
    (the only ids that may travel back on its wire).
    """

    id: str
    name: str
    arguments: Any = field(default=None)
    provider_call_id: str | None = None
    provider_item_id: str | None = None
    signature: str | None = None
    additional_params: Any = None

    def __post_init__(self) -> None:
        if not self.id:
            _set(self, "id", mint_id())
        if self.provider_call_id == "":
            _set(self, "provider_call_id", None)
        if self.provider_call_id is None:
            _set(self, "provider_item_id", None)
        _set(self, "arguments", freeze(self.arguments))
        _freeze_params(self, "additional_params")

    @classmethod
    def from_wire(cls, wire_id: str, name: str, arguments: Any) -> ToolCall:
        """The single-id provider boundary: adopt a non-empty wire id as both rig id and
        provider id; mint (with no provider id) when the wire gave none."""
        return cls(wire_id, name, arguments, provider_call_id=wire_id or None)

    def renamed(self, name: str) -> ToolCall:
        return ToolCall(
            self.id,
            name,
            self.arguments,
            self.provider_call_id,
            self.provider_item_id,
            self.signature,
            self.additional_params,
        )


ToolResultContent: TypeAlias = Text | Json | Image


@dataclass(frozen=True, slots=True)
class ToolResult:
    """The result answering tool call `call_id`; `name` is the executed tool.

    `is_error` marks a failed call (a client's `"is_error": true`, the run's own
    invalid-call feedback): every wire tells the model, in its own form or a convention.
    """

    call_id: str
    name: str
    content: tuple[ToolResultContent, ...]
    provider_call_id: str | None = None
    provider_item_id: str | None = None
    is_error: bool = False

    def __post_init__(self) -> None:
        if not self.call_id:
            _set(self, "call_id", mint_id())
        _set(self, "content", tuple(self.content))

    @classmethod
    def for_call(
        cls, call: ToolCall, content: Iterable[ToolResultContent], *, is_error: bool = False
    ) -> ToolResult:
        """A result copying the call's id, provider ids and name."""
        return cls(
            call.id,
            call.name,
            tuple(content),
            call.provider_call_id,
            call.provider_item_id,
            is_error=is_error,
        )

    @classmethod
    def text(cls, call: ToolCall, text: str, *, is_error: bool = False) -> ToolResult:
        return cls.for_call(call, (Text(text),), is_error=is_error)


UserContent: TypeAlias = Text | ToolResult | Image
AssistantContent: TypeAlias = Text | ToolCall | Reasoning | Image


@dataclass(frozen=True, slots=True)
class SystemMessage:
    content: str


@dataclass(frozen=True, slots=True)
class UserMessage:
    """A user message; a plain string becomes one text item."""

    content: tuple[UserContent, ...]

    def __init__(self, content: str | Iterable[UserContent]) -> None:
        items = (Text(content),) if isinstance(content, str) else tuple(content)
        _set(self, "content", items)


@dataclass(frozen=True, slots=True)
class AssistantMessage:
    """An assistant message; `id` is the provider's message id."""

    content: tuple[AssistantContent, ...]
    id: str | None = None

    def __init__(self, content: str | Iterable[AssistantContent], id: str | None = None) -> None:
        items = (Text(content),) if isinstance(content, str) else tuple(content)
        _set(self, "content", items)
        _set(self, "id", id)


Message: TypeAlias = SystemMessage | UserMessage | AssistantMessage
