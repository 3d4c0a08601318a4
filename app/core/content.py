"""Messages and their content items: rig's message model as frozen dataclasses."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from app.core.checks import check_optional_str, check_str, items_of
from app.core.ids import mint_id
from app.core.jsonvalue import freeze, freeze_object

JsonObject: TypeAlias = Mapping[str, Any]


def _set(obj: object, name: str, value: object) -> None:
    object.__setattr__(obj, name, value)


def _object_params(obj: Text | Image) -> None:
    """Text/image `additional_params`: a non-empty JSON object, or None (`{}` is None)."""
    owner = type(obj).__name__
    value = freeze_object(obj.additional_params, f"{owner}.additional_params")
    _set(obj, "additional_params", value)


def _provider_ids(obj: ToolCall | ToolResult) -> None:
    """Upstream's `ProviderCallId`: an empty call id is no id, an empty item id no item id,
    and there is no item id without a call id."""
    owner = type(obj).__name__
    call_id = obj.provider_call_id
    item_id = obj.provider_item_id
    if call_id is None and item_id is None:
        return
    if not (type(call_id) is str and call_id.isascii()):
        check_optional_str(owner, "provider_call_id", call_id)
    if not (type(item_id) is str and item_id.isascii()):
        check_optional_str(owner, "provider_item_id", item_id)
    if not call_id:
        _set(obj, "provider_call_id", None)
        _set(obj, "provider_item_id", None)
    elif item_id == "":
        _set(obj, "provider_item_id", None)


@dataclass(frozen=True, slots=True)
class Text:
    """A text item. `additional_params` is a provider annotation: a non-empty JSON object,
    or None (an empty one is None, as upstream)."""

    text: str
    additional_params: JsonObject | None = None

    def __post_init__(self) -> None:
        if not (type(self.text) is str and self.text.isascii()):
            check_str("Text", "text", self.text)
        if self.additional_params is not None:
            _object_params(self)


@dataclass(frozen=True, slots=True)
class Json:
    """Structured tool output; providers must not reinterpret it as text."""

    value: Any

    def __post_init__(self) -> None:
        _set(self, "value", freeze(self.value, "Json.value"))


@dataclass(frozen=True, slots=True)
class Image:
    """An image, as base64 data or a URL."""

    data: str
    media_type: str | None = None
    detail: str | None = None
    additional_params: JsonObject | None = None

    def __post_init__(self) -> None:
        check_str("Image", "data", self.data)
        check_optional_str("Image", "media_type", self.media_type)
        check_optional_str("Image", "detail", self.detail)
        _object_params(self)


ReasoningKind = Literal["text", "encrypted", "redacted", "summary"]
REASONING_KINDS = frozenset({"text", "encrypted", "redacted", "summary"})


@dataclass(frozen=True, slots=True)
class ReasoningBlock:
    """One block of a reasoning item: visible text (with a signature), an encrypted or
    redacted payload, or a summary. Kept verbatim because providers demand them back."""

    kind: ReasoningKind
    text: str
    signature: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in REASONING_KINDS:
            raise ValueError(f"ReasoningBlock.kind must be one of {sorted(REASONING_KINDS)}")
        check_str("ReasoningBlock", "text", self.text)
        check_optional_str("ReasoningBlock", "signature", self.signature)
        if self.signature is not None and self.kind != "text":
            raise ValueError("only a text reasoning block carries a signature")


@dataclass(frozen=True, slots=True)
class Reasoning:
    """Model reasoning: never part of the output, always kept in history."""

    content: tuple[ReasoningBlock, ...]
    id: str | None = None

    def __post_init__(self) -> None:
        _set(self, "content", items_of("Reasoning", "content", self.content, ReasoningBlock))
        check_optional_str("Reasoning", "id", self.id)

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
        if not (type(self.id) is str and self.id.isascii()):
            check_str("ToolCall", "id", self.id)
        if not self.id:
            _set(self, "id", mint_id())
        if not (type(self.name) is str and self.name.isascii()):
            check_str("ToolCall", "name", self.name)
        _provider_ids(self)
        if self.signature is not None:
            check_str("ToolCall", "signature", self.signature)
        _set(self, "arguments", freeze(self.arguments, "ToolCall.arguments"))
        if self.additional_params is not None:
            params = freeze(self.additional_params, "ToolCall.additional_params")
            _set(self, "additional_params", params)

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
TOOL_RESULT_ITEMS = (Text, Json, Image)


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
        if not (type(self.call_id) is str and self.call_id.isascii()):
            check_str("ToolResult", "call_id", self.call_id)
        if not self.call_id:
            _set(self, "call_id", mint_id())
        if not (type(self.name) is str and self.name.isascii()):
            check_str("ToolResult", "name", self.name)
        _provider_ids(self)
        _set(self, "content", items_of("ToolResult", "content", self.content, TOOL_RESULT_ITEMS))

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
USER_ITEMS = (Text, ToolResult, Image)
ASSISTANT_ITEMS = (Text, ToolCall, Reasoning, Image)


@dataclass(frozen=True, slots=True)
class SystemMessage:
    content: str

    def __post_init__(self) -> None:
        check_str("SystemMessage", "content", self.content)


@dataclass(frozen=True, slots=True)
class UserMessage:
    """A user message; a plain string becomes one text item."""

    content: tuple[UserContent, ...]

    def __init__(self, content: str | Iterable[UserContent]) -> None:
        if isinstance(content, str):
            items: tuple[UserContent, ...] = (Text(content),)
        else:
            items = items_of("UserMessage", "content", content, USER_ITEMS)
        _set(self, "content", items)


@dataclass(frozen=True, slots=True)
class AssistantMessage:
    """An assistant message; `id` is the provider's message id."""

    content: tuple[AssistantContent, ...]
    id: str | None = None

    def __init__(self, content: str | Iterable[AssistantContent], id: str | None = None) -> None:
        if isinstance(content, str):
            items: tuple[AssistantContent, ...] = (Text(content),)
        else:
            items = items_of("AssistantMessage", "content", content, ASSISTANT_ITEMS)
        if id is not None and not (type(id) is str and id.isascii()):
            check_str("AssistantMessage", "id", id)
        _set(self, "content", items)
        _set(self, "id", id)


Message: TypeAlias = SystemMessage | UserMessage | AssistantMessage
MESSAGE_TYPES = (SystemMessage, UserMessage, AssistantMessage)
