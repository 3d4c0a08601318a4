"""The provider interface the worker drives: one model call in, one `ProviderTurn` out.

Providers map `app.core` messages to a wire format and back. They never decide anything
about the run (that is `AgentRun`'s job) and never retry by themselves: they raise
`ProviderError` with `retryable` / `retry_after`, and the worker schedules the retry so
the wait is durable and visible (`waiting_reason = backoff`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from app.core import AssistantContent, Message, ToolChoice, Usage


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool advertised to the model: name, description and a JSON Schema."""

    name: str
    description: str = ""
    parameters: Mapping[str, Any] = field(default_factory=lambda: {"type": "object"})


@dataclass(frozen=True, slots=True)
class ModelRequest:
    """Everything one model call needs. `history` + `prompt` come from `CallModel`."""

    model: str
    prompt: Message
    history: tuple[Message, ...] = ()
    preamble: str | None = None
    tools: tuple[ToolSpec, ...] = ()
    tool_choice: ToolChoice | None = None
    params: Mapping[str, Any] = field(default_factory=dict)  # temperature, max_tokens, ...
    turn: int = 1  # the run's model-call number (CallModel.turn)
    attempt: int = 1  # 1 for the first try of this model call, 2 after one retry, ...
    purpose: str | None = None  # None: a turn of the run; else a hook's call ("compaction")
    # The model spec a hook's call goes to (None: the run's own model): the gates price,
    # cap and key the call by it (a summary written by another model).
    spec: Mapping[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class ProviderTurn:
    """A decoded model answer; the worker adds the tool sets and builds a `ModelTurn`."""

    choice: tuple[AssistantContent, ...]
    usage: Usage = Usage()
    message_id: str | None = None
    response_id: str | None = None
    provider_request_id: str | None = None
    finish_reason: str | None = None
    raw: Any = None


@dataclass(frozen=True, slots=True)
class TextDelta:
    """A streamed text fragment, published as a `model.delta` run event."""

    text: str


@dataclass(frozen=True, slots=True)
class TurnComplete:
    """The last item of a stream: the assembled turn."""

    turn: ProviderTurn


@dataclass(frozen=True, slots=True)
class UsageReport:
    """The usage the provider has reported so far in a stream (Anthropic's
    `message_start` input tokens, a `message_delta`'s output tokens): what an aborted
    call is billed. The stream's `TurnComplete` carries the final usage regardless."""

    usage: Usage


StreamItem = TextDelta | TurnComplete | UsageReport


class ProviderError(Exception):
    """A failed model call. `retryable` errors (429, 5xx, timeouts, connection errors) are
    retried by the worker with backoff; others fail the run with `status` and `message`.
    `retry_after` is the provider's own word on when to retry (seconds), `retry_header`
    the header that said so (`retry-after`, `x-ratelimit-reset-tokens`, ...); `headers`:
    a 429's rate-limit headers (lower-cased; the shared limits learn from them)."""

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        retryable: bool = False,
        retry_after: float | None = None,
        retry_header: str | None = None,
        provider: str = "",
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.headers = dict(headers or {})
        self.message = message
        self.status = status
        self.retryable = retryable
        self.retry_after = retry_after
        self.retry_header = retry_header
        self.provider = provider

    def to_dict(self) -> dict[str, Any]:
        return {
            "provider": self.provider,
            "status": self.status,
            "message": self.message,
            "retryable": self.retryable,
        }


class Provider(Protocol):
    """A model provider adapter (wire codec + transport)."""

    name: str

    async def complete(self, request: ModelRequest) -> ProviderTurn: ...

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamItem]: ...
