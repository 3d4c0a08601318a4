"""OpenAI Chat Completions (`POST {base}/chat/completions`): codec, stream decoder, transport.

Also the wire of most OpenAI-compatible servers (Ollama, vLLM, llama.cpp, OpenRouter).

Mapping notes:

* `preamble` and `SystemMessage`s become `system` messages, in place.
* A `UserMessage`'s `ToolResult`s become `tool` messages (in order, before the message's
  other content, so they directly follow the assistant turn they answer); the id sent is the
  result's `provider_call_id`, falling back to its rig `call_id`.
* A failed result (`ToolResult.is_error`): a `tool` message has no error flag, so its text
  starts with `Error: ` (`common.ERROR_PREFIX`; `Error` alone when the result is empty).
* Assistant `Reasoning` is not sent back: Chat Completions has no reasoning input. Reasoning
  text that compatible servers return (`reasoning_content` / `reasoning`) is decoded.
* Chat Completions issues no message id: `message_id` is None, `response_id` is the
  completion's `id`.
* Tool arguments: see `common.parse_arguments` (unparsable JSON is kept as the raw string).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from app.core import (
    AssistantMessage,
    Image,
    Message,
    Reasoning,
    Text,
    ToolCall,
    ToolChoice,
    ToolResult,
    Usage,
    UserMessage,
)
from app.core.content import AssistantContent
from app.providers.base import ModelRequest, ProviderError, ProviderTurn, TextDelta, ToolSpec
from app.providers.common import (
    as_int,
    dump_arguments,
    error_marked,
    image_url,
    malformed,
    merge_params,
    parse_arguments,
    stream_payload,
    text_only_result,
)
from app.providers.sse import SSEEvent
from app.providers.transport import HttpProvider

PROVIDER = "openai"
PATH = "/chat/completions"

FINISH_REASONS = {
    "stop": "stop",
    "length": "length",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
    "content_filter": "content_filter",
}


# --- encoding ------------------------------------------------------------------------------


def _tool(spec: ToolSpec) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": spec.name,
            "description": spec.description,
            "parameters": spec.parameters,
        },
    }


def encode_tool_choice(choice: ToolChoice) -> Any:
    """auto/none/required as strings; one specific function as a named choice; several as
    `allowed_tools` in required mode."""
    if choice.kind != "specific":
        return choice.kind
    names = choice.function_names
    if len(names) == 1:
        return {"type": "function", "function": {"name": names[0]}}
    return {
        "type": "allowed_tools",
        "allowed_tools": {
            "mode": "required",
            "tools": [{"type": "function", "function": {"name": n}} for n in names],
        },
    }


def _user_part(item: Text | Image) -> dict[str, Any]:
    if isinstance(item, Text):
        return {"type": "text", "text": item.text}
    url: dict[str, Any] = {"url": image_url(item)}
    if item.detail:
        url["detail"] = item.detail
    return {"type": "image_url", "image_url": url}


def _tool_message(result: ToolResult) -> dict[str, Any]:
    texts = text_only_result(result.content, PROVIDER)
    if result.is_error:
        texts = [error_marked(texts[0] if texts else ""), *texts[1:]]
    content: Any = texts[0] if len(texts) == 1 else [{"type": "text", "text": t} for t in texts]
    return {
        "role": "tool",
        "tool_call_id": result.provider_call_id or result.call_id,
        "content": content,
    }


def _encode_user(msg: UserMessage, out: list[dict[str, Any]]) -> None:
    parts: list[Text | Image] = []
    for item in msg.content:
        if isinstance(item, ToolResult):
            out.append(_tool_message(item))
        else:
            parts.append(item)
    if not parts:
        return
    if len(parts) == 1 and isinstance(parts[0], Text):
        out.append({"role": "user", "content": parts[0].text})
    else:
        out.append({"role": "user", "content": [_user_part(p) for p in parts]})


def _is_refusal(item: Text) -> bool:
    return item.additional_params is not None and item.additional_params.get("type") == "refusal"


def _encode_assistant(msg: AssistantMessage) -> dict[str, Any]:
    texts: list[Text] = []
    calls: list[dict[str, Any]] = []
    for item in msg.content:
        if isinstance(item, Text):
            texts.append(item)
        elif isinstance(item, ToolCall):
            calls.append(
                {
                    "id": item.provider_call_id or item.id,
                    "type": "function",
                    "function": {"name": item.name, "arguments": dump_arguments(item.arguments)},
                }
            )
        elif isinstance(item, Image):
            raise ProviderError(
                "chat completions does not accept assistant images", provider=PROVIDER
            )
        # Reasoning: no input form on this wire.
    out: dict[str, Any] = {"role": "assistant"}
    if not texts:
        out["content"] = None
    elif len(texts) == 1 and not _is_refusal(texts[0]):
        out["content"] = texts[0].text
    else:
        out["content"] = [
            {"type": "refusal", "refusal": t.text}
            if _is_refusal(t)
            else {"type": "text", "text": t.text}
            for t in texts
        ]
    if calls:
        out["tool_calls"] = calls
    return out


def encode_messages(request: ModelRequest) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if request.preamble:
        out.append({"role": "system", "content": request.preamble})
    for msg in (*request.history, request.prompt):
        _encode_message(msg, out)
    return out


def _encode_message(msg: Message, out: list[dict[str, Any]]) -> None:
    if isinstance(msg, UserMessage):
        _encode_user(msg, out)
    elif isinstance(msg, AssistantMessage):
        out.append(_encode_assistant(msg))
    else:
        out.append({"role": "system", "content": msg.content})


def encode_request(request: ModelRequest, *, stream: bool = False) -> dict[str, Any]:
    """The JSON body of a Chat Completions call."""
    body: dict[str, Any] = {"model": request.model}
    merge_params(body, request.params)
    body["messages"] = encode_messages(request)
    if request.tools:
        body["tools"] = [_tool(t) for t in request.tools]
        if request.tool_choice is not None:
            body["tool_choice"] = encode_tool_choice(request.tool_choice)
    # Without tools, tool_choice is omitted: the API rejects tool_choice without tools.
    if stream:
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
    return body


# --- decoding ------------------------------------------------------------------------------


def decode_usage(usage: Any) -> Usage:
    if not isinstance(usage, Mapping):
        return Usage()
    prompt = usage.get("prompt_tokens_details")
    completion = usage.get("completion_tokens_details")
    input_tokens = as_int(usage.get("prompt_tokens"))
    output_tokens = as_int(usage.get("completion_tokens"))
    total = as_int(usage.get("total_tokens")) or input_tokens + output_tokens
    return Usage(
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        total_tokens=total,
        cached_input_tokens=as_int(prompt.get("cached_tokens"))
        if isinstance(prompt, Mapping)
        else 0,
        reasoning_tokens=as_int(completion.get("reasoning_tokens"))
        if isinstance(completion, Mapping)
        else 0,
    )


def normalise_finish(reason: Any) -> str | None:
    if reason is None:
        return None
    return FINISH_REASONS.get(str(reason), str(reason))


def _decode_message(message: Mapping[str, Any]) -> list[AssistantContent]:
    choice: list[AssistantContent] = []
    reasoning = message.get("reasoning_content") or message.get("reasoning")
    if isinstance(reasoning, str) and reasoning:
        choice.append(Reasoning.of_text(reasoning))
    content = message.get("content")
    if isinstance(content, str):
        if content:
            choice.append(Text(content))
    elif isinstance(content, list):
        for part in content:
            if isinstance(part, Mapping) and part.get("type") == "text":
                choice.append(Text(str(part.get("text", ""))))
    refusal = message.get("refusal")
    if isinstance(refusal, str) and refusal:
        choice.append(Text(refusal, {"type": "refusal"}))
    for call in message.get("tool_calls") or ():
        function = call["function"]
        choice.append(
            ToolCall.from_wire(
                call.get("id") or "",
                function["name"],
                parse_arguments(function.get("arguments")),
            )
        )
    return choice


def decode_response(body: dict[str, Any], *, request_id: str | None = None) -> ProviderTurn:
    """A `chat.completion` object to a `ProviderTurn` (first choice)."""
    if isinstance(body.get("error"), Mapping):
        err = body["error"]
        raise ProviderError(str(err.get("message") or err), provider=PROVIDER)
    try:
        first = body["choices"][0]
        choice = _decode_message(first["message"])
        finish = normalise_finish(first.get("finish_reason"))
    except (KeyError, IndexError, TypeError, AttributeError) as exc:
        raise malformed(PROVIDER, "chat completion", exc) from exc
    return ProviderTurn(
        choice=tuple(choice),
        usage=decode_usage(body.get("usage")),
        message_id=None,
        response_id=body.get("id"),
        provider_request_id=request_id,
        finish_reason=finish,
        raw=body,
    )


# --- streaming -----------------------------------------------------------------------------


class ChatStreamDecoder:
    """Incremental decoder for `chat.completion.chunk` events.

    Feed each SSE event; text deltas come back as they arrive. `finish()` rebuilds the
    equivalent `chat.completion` body and decodes it with `decode_response`, so the streamed
    and blocking paths produce the same `ProviderTurn`.
    """

    def __init__(self, *, request_id: str | None = None) -> None:
        self.request_id = request_id
        self.done = False
        self._meta: dict[str, Any] = {}
        self._content: list[str] = []
        self._refusal: list[str] = []
        self._reasoning: list[str] = []
        self._calls: dict[int, dict[str, Any]] = {}
        self._finish: Any = None
        self._usage: Any = None
        self.usage_changed = False  # (the chunk that carries usage is the last but one)

    def usage_so_far(self) -> Usage:
        return decode_usage(self._usage)

    def feed(self, event: SSEEvent) -> list[TextDelta]:
        data = event.data
        if data == "[DONE]":
            self.done = True
            return []
        chunk = stream_payload(data, PROVIDER)
        if chunk is None:
            return []
        if isinstance(chunk.get("error"), Mapping):
            err = chunk["error"]
            raise ProviderError(str(err.get("message") or err), provider=PROVIDER, retryable=True)
        for key in ("id", "created", "model", "system_fingerprint", "service_tier"):
            if key in chunk and key not in self._meta:
                self._meta[key] = chunk[key]
        if chunk.get("usage") is not None:
            self._usage = chunk["usage"]
            self.usage_changed = True
        deltas: list[TextDelta] = []
        for choice in chunk.get("choices") or ():
            if choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta") or {}
            text = delta.get("content")
            if text:
                self._content.append(text)
                deltas.append(TextDelta(text))
            if delta.get("refusal"):
                self._refusal.append(delta["refusal"])
            reasoning = delta.get("reasoning_content") or delta.get("reasoning")
            if isinstance(reasoning, str) and reasoning:
                self._reasoning.append(reasoning)
            for call in delta.get("tool_calls") or ():
                self._feed_call(call)
            if choice.get("finish_reason") is not None:
                self._finish = choice["finish_reason"]
        return deltas

    def _feed_call(self, call: Mapping[str, Any]) -> None:
        index = call.get("index", len(self._calls))
        slot = self._calls.get(index)
        if slot is None:
            slot = {"id": "", "name": "", "arguments": []}
            self._calls[index] = slot
        if call.get("id"):
            slot["id"] = call["id"]
        function = call.get("function") or {}
        if function.get("name"):
            slot["name"] += function["name"]
        if function.get("arguments"):
            slot["arguments"].append(function["arguments"])

    def body(self) -> dict[str, Any]:
        """The `chat.completion` object equivalent to the events seen so far."""
        message: dict[str, Any] = {
            "role": "assistant",
            "content": "".join(self._content) if self._content else None,
            "refusal": "".join(self._refusal) if self._refusal else None,
        }
        if self._reasoning:
            message["reasoning_content"] = "".join(self._reasoning)
        if self._calls:
            message["tool_calls"] = [
                {
                    "id": slot["id"],
                    "type": "function",
                    "function": {"name": slot["name"], "arguments": "".join(slot["arguments"])},
                }
                for _, slot in sorted(self._calls.items())
            ]
        body: dict[str, Any] = {
            "id": self._meta.get("id"),
            "object": "chat.completion",
            "created": self._meta.get("created"),
            "model": self._meta.get("model"),
            "choices": [{"index": 0, "message": message, "finish_reason": self._finish}],
        }
        for key in ("system_fingerprint", "service_tier"):
            if key in self._meta:
                body[key] = self._meta[key]
        if self._usage is not None:
            body["usage"] = self._usage
        return body

    def finish(self) -> ProviderTurn:
        if not self.done and self._finish is None:
            raise ProviderError(
                "openai stream ended before the completion finished",
                provider=PROVIDER,
                retryable=True,
            )
        return decode_response(self.body(), request_id=self.request_id)


# --- transport -----------------------------------------------------------------------------


class OpenAIChatProvider(HttpProvider):
    """Chat Completions over HTTP. `base_url` includes the version (`.../v1`), as for the
    official SDK and compatible servers."""

    name = "openai"
    path = PATH
    request_id_headers = ("x-request-id",)

    def auth_headers(self) -> dict[str, str]:
        return {"authorization": f"Bearer {self.api_key}"} if self.api_key else {}

    def encode(self, request: ModelRequest, *, stream: bool) -> dict[str, Any]:
        return encode_request(request, stream=stream)

    def decode(self, body: dict[str, Any], *, request_id: str | None) -> ProviderTurn:
        return decode_response(body, request_id=request_id)

    def stream_decoder(self, *, request_id: str | None) -> ChatStreamDecoder:
        return ChatStreamDecoder(request_id=request_id)
