"""Anthropic Messages (`POST {base}/v1/messages`): codec, stream decoder, transport.

Mapping notes:

* `preamble` and every `SystemMessage` (wherever it sits in history) go to the top-level
  `system` field, in order: Messages has no system role inside `messages`.
* Consecutive messages of the same role are merged into one (the API wants alternation);
  in a user message `tool_result` blocks come first, as the API requires.
* `ToolCall` ↔ `tool_use` (`id` = `provider_call_id`, rig id as fallback); `ToolResult` →
  `tool_result` with `tool_use_id`; `Text` items as text blocks, `Json` items as text
  blocks holding compact JSON, `Image` items as image blocks; a failed result
  (`ToolResult.is_error`) carries the API's own `"is_error": true`, its content unchanged.
* `Reasoning` ↔ `thinking` (block kind `text` with its `signature`) and
  `redacted_thinking` (kind `redacted`, the opaque `data`). One `Reasoning` per block so
  interleaved thinking keeps its position. Blocks that cannot be verified by this API
  (thinking without a signature, other providers' summaries / encrypted content) are not
  sent back.
* `tool_use.input` must be an object: arguments that are not (a raw string kept from a
  malformed streamed `input_json_delta`) are sent as `{"_raw_arguments": <value>}`.
* Usage: `input_tokens` is the whole prompt (`input_tokens` + `cache_read_input_tokens` +
  `cache_creation_input_tokens`), so `cached_input_tokens` is a part of it as on OpenAI.
* `message_id` and `response_id` are both the message's `id` (the response is the message).
* Empty text blocks are dropped (the API rejects them); unknown response block types raise
  a clear `ProviderError`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from app.core import (
    AssistantMessage,
    Image,
    Message,
    Reasoning,
    SystemMessage,
    Text,
    ToolCall,
    ToolChoice,
    ToolResult,
    Usage,
    UserMessage,
)
from app.core.content import AssistantContent, ReasoningBlock
from app.providers.base import ModelRequest, ProviderError, ProviderTurn, TextDelta, ToolSpec
from app.providers.common import (
    as_int,
    malformed,
    merge_params,
    parse_arguments,
    result_text,
    stream_payload,
)
from app.providers.sse import SSEEvent
from app.providers.transport import HttpProvider

PROVIDER = "anthropic"
PATH = "/v1/messages"
API_VERSION = "2023-06-01"
DEFAULT_MAX_TOKENS = 4096

STOP_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "tool_calls",
    "refusal": "content_filter",
}
_RETRYABLE_ERRORS = frozenset(
    {"overloaded_error", "api_error", "rate_limit_error", "timeout_error"}
)


# --- encoding ------------------------------------------------------------------------------


def _tool(spec: ToolSpec) -> dict[str, Any]:
    return {"name": spec.name, "description": spec.description, "input_schema": spec.parameters}


def encode_tool_choice(choice: ToolChoice) -> dict[str, Any]:
    """auto → auto, none → none, required → any, one specific tool → tool. Several
    specific tools have no direct form: the tool list is narrowed to them and `any` is
    used (see `encode_request`)."""
    if choice.kind == "required":
        return {"type": "any"}
    if choice.kind == "specific":
        if len(choice.function_names) == 1:
            return {"type": "tool", "name": choice.function_names[0]}
        return {"type": "any"}
    return {"type": choice.kind}


def _image(item: Image) -> dict[str, Any]:
    data = item.data
    if data.startswith(("http://", "https://")):
        return {"type": "image", "source": {"type": "url", "url": data}}
    media_type = item.media_type or "image/png"
    if data.startswith("data:"):
        header, _, data = data.partition(",")
        media_type = header[5:].split(";")[0] or media_type
    return {"type": "image", "source": {"type": "base64", "media_type": media_type, "data": data}}


def _tool_result(result: ToolResult) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    for item in result.content:
        if isinstance(item, Image):
            content.append(_image(item))
        else:
            text = result_text(item)
            if text:
                content.append({"type": "text", "text": text})
    block: dict[str, Any] = {
        "type": "tool_result",
        "tool_use_id": result.provider_call_id or result.call_id,
        "content": content,
    }
    if result.is_error:
        block["is_error"] = True
    return block


def _user_blocks(msg: UserMessage) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for item in msg.content:
        if isinstance(item, ToolResult):
            blocks.append(_tool_result(item))
        elif isinstance(item, Text):
            if item.text:
                blocks.append({"type": "text", "text": item.text})
        else:
            blocks.append(_image(item))
    return blocks


def encode_reasoning(reasoning: Reasoning) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for block in reasoning.content:
        if block.kind == "text" and block.signature is not None:
            blocks.append(
                {"type": "thinking", "thinking": block.text, "signature": block.signature}
            )
        elif block.kind == "redacted":
            blocks.append({"type": "redacted_thinking", "data": block.text})
    return blocks


def _tool_input(arguments: Any) -> Any:
    if isinstance(arguments, Mapping):
        return arguments
    if arguments is None:
        return {}
    return {"_raw_arguments": arguments}


def _assistant_blocks(msg: AssistantMessage) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for item in msg.content:
        if isinstance(item, Text):
            if item.text:
                blocks.append({"type": "text", "text": item.text})
        elif isinstance(item, ToolCall):
            blocks.append(
                {
                    "type": "tool_use",
                    "id": item.provider_call_id or item.id,
                    "name": item.name,
                    "input": _tool_input(item.arguments),
                }
            )
        elif isinstance(item, Reasoning):
            blocks.extend(encode_reasoning(item))
        else:
            raise ProviderError("anthropic does not accept assistant images", provider=PROVIDER)
    return blocks


def encode_messages(messages: tuple[Message, ...]) -> tuple[list[str], list[dict[str, Any]]]:
    """(system texts, messages) with same-role runs merged."""
    system: list[str] = []
    out: list[dict[str, Any]] = []
    for msg in messages:
        if isinstance(msg, SystemMessage):
            system.append(msg.content)
            continue
        if isinstance(msg, UserMessage):
            role, blocks = "user", _user_blocks(msg)
        else:
            role, blocks = "assistant", _assistant_blocks(msg)
        if not blocks:
            continue
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})
    for message in out:
        if message["role"] == "user":
            content = message["content"]
            results = [b for b in content if b["type"] == "tool_result"]
            if results and len(results) != len(content):
                message["content"] = results + [b for b in content if b["type"] != "tool_result"]
    return system, out


def encode_request(request: ModelRequest, *, stream: bool = False) -> dict[str, Any]:
    """The JSON body of a Messages call (`max_tokens` defaults to 4096 when not in params)."""
    body: dict[str, Any] = {"model": request.model, "max_tokens": DEFAULT_MAX_TOKENS}
    merge_params(body, request.params)
    system, messages = encode_messages((*request.history, request.prompt))
    if request.preamble:
        system.insert(0, request.preamble)
    if len(system) == 1:
        body["system"] = system[0]
    elif system:
        body["system"] = [{"type": "text", "text": s} for s in system]
    body["messages"] = messages
    if request.tools:
        tools = request.tools
        choice = request.tool_choice
        if choice is not None and choice.kind == "specific" and len(choice.function_names) > 1:
            wanted = set(choice.function_names)
            tools = tuple(t for t in tools if t.name in wanted)
        body["tools"] = [_tool(t) for t in tools]
        if choice is not None:
            body["tool_choice"] = encode_tool_choice(choice)
    if stream:
        body["stream"] = True
    return body


# --- decoding ------------------------------------------------------------------------------


def decode_usage(usage: Any) -> Usage:
    if not isinstance(usage, Mapping):
        return Usage()
    cache_read = as_int(usage.get("cache_read_input_tokens"))
    cache_creation = as_int(usage.get("cache_creation_input_tokens"))
    input_tokens = as_int(usage.get("input_tokens")) + cache_read + cache_creation
    output_tokens = as_int(usage.get("output_tokens"))
    return Usage(
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        total_tokens=input_tokens + output_tokens,
        cached_input_tokens=cache_read,
        cache_creation_input_tokens=cache_creation,
    )


def normalise_stop(reason: Any) -> str | None:
    if reason is None:
        return None
    return STOP_REASONS.get(str(reason), str(reason))


def decode_content(content: Any) -> list[AssistantContent]:
    choice: list[AssistantContent] = []
    for block in content or ():
        kind = block.get("type")
        if kind == "text":
            citations = block.get("citations")
            choice.append(Text(block["text"], {"citations": citations} if citations else None))
        elif kind == "tool_use":
            choice.append(
                ToolCall.from_wire(block.get("id") or "", block["name"], block.get("input"))
            )
        elif kind == "thinking":
            choice.append(
                Reasoning((ReasoningBlock("text", block["thinking"], block.get("signature")),))
            )
        elif kind == "redacted_thinking":
            choice.append(Reasoning((ReasoningBlock("redacted", block["data"]),)))
        else:
            raise malformed(PROVIDER, f"message: unsupported content block type {kind!r}")
    return choice


def decode_response(body: dict[str, Any], *, request_id: str | None = None) -> ProviderTurn:
    """A Messages `message` object to a `ProviderTurn`."""
    if body.get("type") == "error":
        err = body.get("error") or {}
        raise ProviderError(
            str(err.get("message") or err),
            provider=PROVIDER,
            retryable=err.get("type") in _RETRYABLE_ERRORS,
        )
    try:
        choice = decode_content(body["content"])
    except (KeyError, TypeError, AttributeError) as exc:
        raise malformed(PROVIDER, "message", exc) from exc
    message_id = body.get("id")
    return ProviderTurn(
        choice=tuple(choice),
        usage=decode_usage(body.get("usage")),
        message_id=message_id,
        response_id=message_id,
        provider_request_id=request_id,
        finish_reason=normalise_stop(body.get("stop_reason")),
        raw=body,
    )


# --- streaming -----------------------------------------------------------------------------


class AnthropicStreamDecoder:
    """Incremental decoder for Messages streaming events (`message_start`,
    `content_block_start/delta/stop`, `message_delta`, `message_stop`, `ping`, `error`).

    `finish()` rebuilds the `message` object and decodes it with `decode_response`, so the
    streamed and blocking paths give the same `ProviderTurn`. Streamed tool input is the
    concatenated `input_json_delta`s, parsed like OpenAI arguments (unparsable → raw string).
    """

    def __init__(self, *, request_id: str | None = None) -> None:
        self.request_id = request_id
        self.done = False
        self._message: dict[str, Any] | None = None
        self._usage: dict[str, Any] = {}
        self.usage_changed = False  # message_start's input tokens, message_delta's output
        self._blocks: dict[int, dict[str, Any]] = {}
        self._parts: dict[int, list[str]] = {}
        self._stop_reason: Any = None
        self._stop_sequence: Any = None

    def feed(self, event: SSEEvent) -> list[TextDelta]:
        payload = stream_payload(event.data, PROVIDER)
        if payload is None:
            return []
        kind = payload.get("type") or event.event
        if kind == "content_block_delta":
            return self._delta(int(payload.get("index", 0)), payload.get("delta") or {})
        if kind == "content_block_start":
            index = int(payload.get("index", len(self._blocks)))
            self._blocks[index] = dict(payload.get("content_block") or {})
            self._parts[index] = []
        elif kind == "content_block_stop":
            self._close_block(int(payload.get("index", 0)))
        elif kind == "message_start":
            message = payload.get("message")
            if not isinstance(message, Mapping):
                raise malformed(PROVIDER, "message_start event")
            self._message = dict(message)
            self._usage.update(message.get("usage") or {})
            self.usage_changed = bool(self._usage)
        elif kind == "message_delta":
            delta = payload.get("delta") or {}
            if "stop_reason" in delta:
                self._stop_reason = delta["stop_reason"]
            if "stop_sequence" in delta:
                self._stop_sequence = delta["stop_sequence"]
            for key, value in (payload.get("usage") or {}).items():
                if value is not None:
                    self._usage[key] = value
                    self.usage_changed = True
        elif kind == "message_stop":
            self.done = True
        elif kind == "error":
            err = payload.get("error") or {}
            raise ProviderError(
                str(err.get("message") or err),
                provider=PROVIDER,
                retryable=err.get("type") in _RETRYABLE_ERRORS,
            )
        return []

    def usage_so_far(self) -> Usage:
        return decode_usage(self._usage)

    def _delta(self, index: int, delta: Mapping[str, Any]) -> list[TextDelta]:
        block = self._blocks.get(index)
        if block is None:
            raise malformed(PROVIDER, f"stream: delta for unknown content block {index}")
        dtype = delta.get("type")
        if dtype == "text_delta":
            text = delta.get("text") or ""
            block["text"] = block.get("text", "") + text
            return [TextDelta(text)] if text else []
        if dtype == "input_json_delta":
            self._parts[index].append(delta.get("partial_json") or "")
        elif dtype == "thinking_delta":
            block["thinking"] = block.get("thinking", "") + (delta.get("thinking") or "")
        elif dtype == "signature_delta":
            block["signature"] = (block.get("signature") or "") + (delta.get("signature") or "")
        elif dtype == "citations_delta":
            block.setdefault("citations", []).append(delta.get("citation"))
        return []

    def _close_block(self, index: int) -> None:
        block = self._blocks.get(index)
        if block is not None and block.get("type") == "tool_use":
            raw = "".join(self._parts.get(index, ()))
            if raw:
                block["input"] = parse_arguments(raw)
            elif "input" not in block:
                block["input"] = {}

    def body(self) -> dict[str, Any]:
        """The `message` object equivalent to the events seen so far."""
        for index in self._blocks:
            self._close_block(index)
        message = dict(self._message or {"type": "message", "role": "assistant"})
        message["content"] = [self._blocks[i] for i in sorted(self._blocks)]
        message["stop_reason"] = self._stop_reason
        message["stop_sequence"] = self._stop_sequence
        message["usage"] = dict(self._usage)
        return message

    def finish(self) -> ProviderTurn:
        if self._message is None or (not self.done and self._stop_reason is None):
            raise ProviderError(
                "anthropic stream ended before message_stop",
                provider=PROVIDER,
                retryable=True,
            )
        return decode_response(self.body(), request_id=self.request_id)


# --- transport -----------------------------------------------------------------------------


class AnthropicProvider(HttpProvider):
    """Messages over HTTP; `base_url` excludes the version (`https://api.anthropic.com`),
    as for the official SDK and `ANTHROPIC_BASE_URL`."""

    name = "anthropic"
    path = PATH
    request_id_headers = ("request-id", "x-request-id")

    def auth_headers(self) -> dict[str, str]:
        headers = {"anthropic-version": API_VERSION}
        if self.api_key:
            headers["x-api-key"] = self.api_key
        return headers

    def encode(self, request: ModelRequest, *, stream: bool) -> dict[str, Any]:
        return encode_request(request, stream=stream)

    def decode(self, body: dict[str, Any], *, request_id: str | None) -> ProviderTurn:
        return decode_response(body, request_id=request_id)

    def stream_decoder(self, *, request_id: str | None) -> AnthropicStreamDecoder:
        return AnthropicStreamDecoder(request_id=request_id)
