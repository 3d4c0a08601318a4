"""Helpers shared by the wire codecs: tool arguments, tool-result text, error mapping.

Everything here is pure (no IO) so the codecs stay testable without a network.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import orjson

from app.core import Image, Json, Text
from app.core.content import ToolResultContent
from app.providers.base import ProviderError
from app.providers.ratelimit import retry_hint

#: Body keys owned by a codec: `ModelRequest.params` may not override them.
RESERVED_KEYS = frozenset(
    {
        "model",
        "messages",
        "input",
        "instructions",
        "system",
        "tools",
        "tool_choice",
        "stream",
        "stream_options",
        "store",
    }
)

#: Markers of a context-length error in a provider's error body (never retryable).
_CONTEXT_MARKERS = (
    "context_length_exceeded",
    "context length",
    "context window",
    "prompt is too long",
    "maximum context",
    "too many tokens",
)


def parse_arguments(raw: str | None) -> Any:
    """Tool arguments as sent on OpenAI wires (a JSON text) to a JSON value.

    An empty string means "no arguments" and becomes `{}`. Text that is not valid JSON
    (a model emitting a truncated or broken object) does **not** raise: the arguments
    become the raw string itself, so the call still reaches the run, which reports it
    through its invalid-tool-call path (argument validation fails on a string) instead of
    crashing the worker. `dump_arguments` sends such a string back verbatim, so the model
    sees exactly what it produced.
    """
    if raw is None:
        return {}
    if not raw.strip():
        return {}
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return raw


def dump_arguments(arguments: Any) -> str:
    """Arguments to the JSON text OpenAI wires carry: a `str` value is sent verbatim (it is
    what `parse_arguments` kept from an unparsable wire), anything else as compact JSON."""
    if isinstance(arguments, str):
        return arguments
    if arguments is None:
        return "{}"
    return orjson.dumps(arguments).decode()


def compact_json(value: Any) -> str:
    return orjson.dumps(value).decode()


def result_text(item: Text | Json) -> str:
    """A tool-result item as text: `Text` verbatim, `Json` as compact JSON."""
    if isinstance(item, Text):
        return item.text
    return compact_json(item.value)


#: The OpenAI wires (Chat Completions, Responses) have no error flag on a tool result, so a
#: failed result (`ToolResult.is_error`) reaches the model as text starting with this
#: marker, the form the OpenAI Agents SDK's default tool-error text uses ("... Error: <e>").
ERROR_PREFIX = "Error: "


def error_marked(text: str) -> str:
    """A failed result's text as the OpenAI wires send it: `Error: <text>` (`Error` alone
    for an empty text)."""
    return ERROR_PREFIX + text if text else ERROR_PREFIX.rstrip(": ")


def text_only_result(content: Iterable[ToolResultContent], wire: str) -> list[str]:
    """The texts of a tool result for wires that take no images in tool results."""
    out: list[str] = []
    for item in content:
        if isinstance(item, Image):
            raise ProviderError(f"{wire} does not accept images in tool results", provider=wire)
        out.append(result_text(item))
    return out


def image_url(image: Image) -> str:
    """An `Image` as a URL: URLs and data URLs verbatim, base64 data as a data URL."""
    data = image.data
    if data.startswith(("http://", "https://", "data:")):
        return data
    return f"data:{image.media_type or 'image/png'};base64,{data}"


def merge_params(body: dict[str, Any], params: Mapping[str, Any]) -> dict[str, Any]:
    """Provider params (temperature, max_tokens, ...) go into the body, then the entries of
    `extra_body` (parameters newer than the adapter), verbatim; keys the codec owns (model,
    messages, tools, stream, ...) are never overridden by a run's params."""
    extra = params.get("extra_body")
    for key, value in params.items():
        if key not in RESERVED_KEYS and not (key == "extra_body" and isinstance(extra, Mapping)):
            body[key] = value
    if isinstance(extra, Mapping):
        for key, value in extra.items():
            if key not in RESERVED_KEYS:
                body[key] = value
    return body


def as_int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def error_message(body: Any, fallback: str) -> tuple[str, str | None]:
    """(message, error type/code) from an OpenAI or Anthropic error body."""
    if isinstance(body, Mapping):
        err = body.get("error")
        if isinstance(err, Mapping):
            message = err.get("message")
            kind = err.get("code") or err.get("type")
            return (
                str(message) if message else fallback,
                str(kind) if kind is not None else None,
            )
        if isinstance(err, str):
            return err, None
        message = body.get("message")
        if isinstance(message, str):
            return message, None
    return fallback, None


def is_context_length_error(message: str, kind: str | None) -> bool:
    text = f"{kind or ''} {message}".lower()
    return any(marker in text for marker in _CONTEXT_MARKERS)


def error_from_response(
    provider: str,
    status: int,
    content: bytes,
    headers: Mapping[str, str],
    now: float,
) -> ProviderError:
    """Map an HTTP error response to `ProviderError`.

    429, 408, 409 (Anthropic's lock contention) and every 5xx (including Anthropic's 529
    overloaded) are retryable, with the provider's word on when (`Retry-After`, or for a
    429 the reset of the exhausted rate limit: `app.providers.ratelimit`); 400/401/403/
    404/422, other 4xx and any context-length error are not. The message is the
    provider's own.
    """
    try:
        body: Any = orjson.loads(content) if content else None
    except orjson.JSONDecodeError:
        body = None
    fallback = content.decode("utf-8", "replace")[:500] if content else f"HTTP {status}"
    message, kind = error_message(body, fallback)
    retryable = status in (408, 409, 429) or status >= 500
    if is_context_length_error(message, kind):
        retryable = False
    hint = retry_hint(headers, status, now) if retryable else None
    return ProviderError(
        message,
        status=status,
        retryable=retryable,
        retry_after=hint.seconds if hint else None,
        retry_header=hint.header if hint else None,
        provider=provider,
        headers=_rate_headers(headers) if status == 429 else None,
    )


def _rate_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """A 429's rate-limit headers, lower-cased (what `app.limits.rates` learns from)."""
    return {
        k.lower(): v
        for k, v in headers.items()
        if k.lower().startswith(("x-ratelimit-", "anthropic-ratelimit-", "retry-after"))
    }


def malformed(provider: str, what: str, exc: BaseException | None = None) -> ProviderError:
    """A clear, non-retryable error for provider output we cannot interpret."""
    detail = f": {exc!r}" if exc is not None else ""
    return ProviderError(f"malformed {provider} {what}{detail}", provider=provider)


def first_header(headers: Mapping[str, str], *names: str) -> str | None:
    for name in names:
        value = headers.get(name)
        if value:
            return value
    return None


def stream_payload(data: str, provider: str) -> dict[str, Any] | None:
    """One SSE event's JSON object; None for blank, `[DONE]` or non-object data. Bad
    JSON is a retryable error (the stream was cut or garbled)."""
    if not data.strip() or data == "[DONE]":
        return None
    try:
        payload = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise ProviderError(
            f"malformed {provider} stream event: {data[:200]!r}",
            provider=provider,
            retryable=True,
        ) from exc
    return payload if isinstance(payload, dict) else None
