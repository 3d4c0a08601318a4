"""Decoding the OpenAI Responses API: a response body and its event stream into a
`ProviderTurn` (the mapping notes are in `app.providers.openai_responses`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from app.core import (
    Reasoning,
    Text,
    ToolCall,
    Usage,
)
from app.core.content import AssistantContent, ReasoningBlock
from app.providers.base import (
    ProviderError,
    ProviderTurn,
    TextDelta,
)
from app.providers.common import (
    as_int,
    malformed,
    parse_arguments,
    stream_payload,
)
from app.providers.sse import SSEEvent

PROVIDER = "openai_responses"

INCOMPLETE_REASONS = {"max_output_tokens": "length", "content_filter": "content_filter"}
_RETRYABLE_CODES = frozenset({"server_error", "rate_limit_exceeded", "internal_error"})

# --- decoding ------------------------------------------------------------------------------


def decode_usage(usage: Any) -> Usage:
    if not isinstance(usage, Mapping):
        return Usage()
    inp = usage.get("input_tokens_details")
    out = usage.get("output_tokens_details")
    input_tokens = as_int(usage.get("input_tokens"))
    output_tokens = as_int(usage.get("output_tokens"))
    return Usage(
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        total_tokens=as_int(usage.get("total_tokens")) or input_tokens + output_tokens,
        cached_input_tokens=as_int(inp.get("cached_tokens")) if isinstance(inp, Mapping) else 0,
        reasoning_tokens=as_int(out.get("reasoning_tokens")) if isinstance(out, Mapping) else 0,
    )


def decode_reasoning(item: Mapping[str, Any]) -> Reasoning:
    blocks: list[ReasoningBlock] = []
    for part in item.get("summary") or ():
        blocks.append(ReasoningBlock("summary", str(part.get("text", ""))))
    for part in item.get("content") or ():
        blocks.append(ReasoningBlock("text", str(part.get("text", ""))))
    encrypted = item.get("encrypted_content")
    if isinstance(encrypted, str) and encrypted:
        blocks.append(ReasoningBlock("encrypted", encrypted))
    return Reasoning(tuple(blocks), item.get("id"))


def _decode_output(output: Any) -> tuple[list[AssistantContent], str | None, bool]:
    choice: list[AssistantContent] = []
    message_id: str | None = None
    has_calls = False
    for item in output or ():
        kind = item.get("type")
        if kind == "message":
            if message_id is None:
                message_id = item.get("id")
            for part in item.get("content") or ():
                ptype = part.get("type")
                if ptype == "output_text":
                    annotations = part.get("annotations")
                    choice.append(
                        Text(part["text"], {"annotations": annotations} if annotations else None)
                    )
                elif ptype == "refusal":
                    choice.append(Text(part["refusal"], {"type": "refusal"}))
                else:
                    raise malformed(PROVIDER, f"response: unknown message content type {ptype!r}")
        elif kind == "function_call":
            has_calls = True
            call_id = item.get("call_id") or ""
            choice.append(
                ToolCall(
                    call_id,
                    item["name"],
                    parse_arguments(item.get("arguments")),
                    provider_call_id=call_id or None,
                    provider_item_id=item.get("id"),
                )
            )
        elif kind == "reasoning":
            choice.append(decode_reasoning(item))
        else:
            raise malformed(PROVIDER, f"response: unsupported output item type {kind!r}")
    return choice, message_id, has_calls


def _raise_failed(body: Mapping[str, Any]) -> None:
    err = body.get("error")
    message = "response failed"
    code = None
    if isinstance(err, Mapping):
        message = str(err.get("message") or message)
        code = err.get("code")
    raise ProviderError(message, provider=PROVIDER, retryable=code in _RETRYABLE_CODES)


def decode_response(body: dict[str, Any], *, request_id: str | None = None) -> ProviderTurn:
    """A `response` object to a `ProviderTurn`."""
    status = body.get("status")
    if status == "failed" or (status is None and isinstance(body.get("error"), Mapping)):
        _raise_failed(body)
    try:
        choice, message_id, has_calls = _decode_output(body.get("output"))
    except (KeyError, TypeError, AttributeError) as exc:
        raise malformed(PROVIDER, "response", exc) from exc
    finish: str | None
    if status == "completed":
        finish = "tool_calls" if has_calls else "stop"
    elif status == "incomplete":
        details = body.get("incomplete_details")
        reason = details.get("reason") if isinstance(details, Mapping) else None
        finish = INCOMPLETE_REASONS.get(str(reason), str(reason)) if reason else "incomplete"
    else:
        finish = str(status) if status is not None else None
    return ProviderTurn(
        choice=tuple(choice),
        usage=decode_usage(body.get("usage")),
        message_id=message_id,
        response_id=body.get("id"),
        provider_request_id=request_id,
        finish_reason=finish,
        raw=body,
    )


# --- streaming -----------------------------------------------------------------------------

_TERMINAL = frozenset({"response.completed", "response.incomplete", "response.failed"})


class ResponsesStreamDecoder:
    """Incremental decoder for Responses streaming events.

    Text deltas come from `response.output_text.delta`. The terminal event
    (`response.completed` / `response.incomplete`) carries the full response object, which
    is decoded with `decode_response`; if a server leaves its `output` empty, the items
    collected from `response.output_item.done` are used instead.
    """

    def __init__(self, *, request_id: str | None = None) -> None:
        self.request_id = request_id
        self.done = False
        self._items: dict[int, Any] = {}
        self._response: dict[str, Any] | None = None
        # Usage comes with the terminal event only, which completes the turn: nothing to
        # report before it.
        self.usage_changed = False

    def usage_so_far(self) -> Usage:
        return Usage()

    def feed(self, event: SSEEvent) -> list[TextDelta]:
        payload = stream_payload(event.data, PROVIDER)
        if payload is None:
            return []
        kind = payload.get("type") or event.event
        if kind == "response.output_text.delta":
            delta = payload.get("delta")
            return [TextDelta(delta)] if delta else []
        if kind == "response.output_item.done":
            self._items[int(payload.get("output_index", len(self._items)))] = payload.get("item")
        elif kind in _TERMINAL:
            response = payload.get("response")
            if not isinstance(response, dict):
                raise malformed(PROVIDER, f"stream event {kind}")
            self._response = response
            self.done = True
        elif kind == "error":
            code = payload.get("code")
            raise ProviderError(
                str(payload.get("message") or "stream error"),
                provider=PROVIDER,
                retryable=code in _RETRYABLE_CODES or code is None,
            )
        return []

    def finish(self) -> ProviderTurn:
        if self._response is None:
            raise ProviderError(
                "openai_responses stream ended before the response completed",
                provider=PROVIDER,
                retryable=True,
            )
        body = self._response
        if not body.get("output") and self._items:
            body = {**body, "output": [self._items[i] for i in sorted(self._items)]}
        return decode_response(body, request_id=self.request_id)
