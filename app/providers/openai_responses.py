"""OpenAI Responses (`POST {base}/responses`): codec, stream decoder, transport.

No server-side state is assumed: every call sends `store: false` and the full input.

Encrypted reasoning (`include: ["reasoning.encrypted_content"]`) is what lets a reasoning
model's reasoning be replayed statelessly, and OpenAI refuses it (400 "Encrypted content is
not supported with this model", `param: include`) for models that do not reason (gpt-4o,
gpt-4.1, gpt-5-chat, ...). So it is asked for only when the run's params carry `reasoning`
or the model is of a reasoning family (`is_reasoning_model`); a run's own `include` param
replaces the adapter's choice. If the provider still refuses it, the provider object
remembers that for the (base URL, model) in memory and retries the call once at once
without it; later calls for that model go without it.

Mapping notes:

* `preamble` → `instructions`; `SystemMessage` → a `message` input item with role system.
* `ToolCall` ↔ `function_call` item: `call_id` is `provider_call_id` (rig id as fallback),
  the item `id` is `provider_item_id` (omitted when absent).
* `ToolResult` → `function_call_output` with the call's `call_id`; text-only results are a
  string (`Json` items as compact JSON), results with images an `input_*` content list.
  The item has no error flag: a failed result (`ToolResult.is_error`) is sent as text
  starting with `Error: ` (`common.ERROR_PREFIX`; the first text part of a content list,
  or a leading `input_text` part `Error` when it has none).
* `Reasoning` ↔ `reasoning` item: blocks of kind `summary` ↔ `summary[].summary_text`, kind
  `text` ↔ `content[].reasoning_text`, kind `encrypted` ↔ `encrypted_content`; the item id
  is `Reasoning.id`. Only reasoning with both an id and encrypted content is sent back:
  with `store: false` an id alone refers to nothing on the server (404 "Items are not
  persisted"), and another provider's thinking cannot be verified here. A turn whose
  reasoning cannot be sent back is sent detached: without its output items' ids, which
  would refer the server to the missing reasoning.
* Assistant text → one `message` output item per assistant message, carrying the message
  id (`AssistantMessage.id`, the first output message's id of the decoded response). An
  assistant message without an id (history supplied by the client, another provider's
  turn) cannot be an output item (it requires one): each of its texts is sent as an easy
  input message `{"type": "message", "role": "assistant", "content": "<text>"}`.
* finish reason: `completed` → `tool_calls` when the output has function calls, else
  `stop`; `incomplete` → `length` (max_output_tokens) / `content_filter` / the reason.
* Output item types other than message / function_call / reasoning are a clear
  `ProviderError` (only function tools are ever requested).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx

from app.core import (
    AssistantMessage,
    Image,
    Json,
    Message,
    Reasoning,
    Text,
    ToolCall,
    ToolChoice,
    ToolResult,
    UserMessage,
)
from app.providers.base import (
    ModelRequest,
    ProviderError,
    ProviderTurn,
    StreamItem,
    ToolSpec,
)
from app.providers.common import (
    dump_arguments,
    error_marked,
    image_url,
    merge_params,
    result_text,
)
from app.providers.encrypted_reasoning import (
    ENCRYPTED_REASONING,
    REFUSED_ENCRYPTED_REASONING,
    EncryptedReasoningRefused,
    refuses_encrypted_reasoning,
    wants_encrypted_reasoning,
)
from app.providers.openai_responses_decode import PROVIDER, ResponsesStreamDecoder, decode_response
from app.providers.transport import HttpProvider

PATH = "/responses"


# --- encoding ------------------------------------------------------------------------------


def _tool(spec: ToolSpec) -> dict[str, Any]:
    return {
        "type": "function",
        "name": spec.name,
        "description": spec.description,
        "parameters": spec.parameters,
        "strict": False,
    }


def encode_tool_choice(choice: ToolChoice) -> Any:
    if choice.kind != "specific":
        return choice.kind
    names = choice.function_names
    if len(names) == 1:
        return {"type": "function", "name": names[0]}
    return {
        "type": "allowed_tools",
        "mode": "required",
        "tools": [{"type": "function", "name": n} for n in names],
    }


def _input_image(item: Image) -> dict[str, Any]:
    return {"type": "input_image", "image_url": image_url(item), "detail": item.detail or "auto"}


def _function_call_output(result: ToolResult) -> dict[str, Any]:
    output: Any
    items = result.content
    if len(items) == 1 and isinstance(items[0], Text | Json):
        output = result_text(items[0])
    elif not items:
        output = ""
    else:
        output = [
            _input_image(c)
            if isinstance(c, Image)
            else {"type": "input_text", "text": result_text(c)}
            for c in items
        ]
    if result.is_error:
        output = _error_marked_output(output)
    return {
        "type": "function_call_output",
        "call_id": result.provider_call_id or result.call_id,
        "output": output,
    }


def _error_marked_output(output: str | list[dict[str, Any]]) -> str | list[dict[str, Any]]:
    if isinstance(output, str):
        return error_marked(output)
    for index, part in enumerate(output):
        if part["type"] == "input_text":
            marked = {**part, "text": error_marked(part["text"])}
            return [*output[:index], marked, *output[index + 1 :]]
    return [{"type": "input_text", "text": error_marked("")}, *output]


def _encode_user(msg: UserMessage, out: list[dict[str, Any]]) -> None:
    parts: list[dict[str, Any]] = []
    for item in msg.content:
        if isinstance(item, ToolResult):
            out.append(_function_call_output(item))
        elif isinstance(item, Text):
            parts.append({"type": "input_text", "text": item.text})
        else:
            parts.append(_input_image(item))
    if parts:
        out.append({"type": "message", "role": "user", "content": parts})


def encode_reasoning(reasoning: Reasoning) -> dict[str, Any] | None:
    """The `reasoning` input item, or None when it cannot be replayed statelessly (no id or
    no encrypted content, see the module notes)."""
    summary: list[dict[str, Any]] = []
    content: list[dict[str, Any]] = []
    encrypted: str | None = None
    for block in reasoning.content:
        if block.kind == "summary":
            summary.append({"type": "summary_text", "text": block.text})
        elif block.kind == "text":
            content.append({"type": "reasoning_text", "text": block.text})
        elif block.kind == "encrypted" and encrypted is None:
            encrypted = block.text
    if reasoning.id is None or encrypted is None:
        return None
    item: dict[str, Any] = {"type": "reasoning", "id": reasoning.id, "summary": summary}
    if content:
        item["content"] = content
    item["encrypted_content"] = encrypted
    return item


def _output_text(item: Text) -> dict[str, Any]:
    params = item.additional_params
    if params is not None and params.get("type") == "refusal":
        return {"type": "refusal", "refusal": item.text}
    annotations = params.get("annotations", []) if params is not None else []
    return {"type": "output_text", "text": item.text, "annotations": annotations}


def _detached(msg: AssistantMessage) -> bool:
    """A turn of this provider whose reasoning cannot be sent back (no encrypted content):
    its items' ids would refer the server to reasoning it does not have."""
    return any(
        isinstance(i, Reasoning) and i.id is not None and encode_reasoning(i) is None
        for i in msg.content
    )


def _encode_assistant(msg: AssistantMessage, out: list[dict[str, Any]]) -> None:
    detached = _detached(msg)
    message_id = None if detached else msg.id
    message: dict[str, Any] | None = None
    for item in msg.content:
        if isinstance(item, Text):
            if not message_id:
                if item.text:  # an easy input message: no id needed, plain text content
                    out.append({"type": "message", "role": "assistant", "content": item.text})
                continue
            if message is None:
                message = {
                    "type": "message",
                    "role": "assistant",
                    "id": message_id,
                    "status": "completed",
                    "content": [],
                }
                out.append(message)
            message["content"].append(_output_text(item))
        elif isinstance(item, ToolCall):
            call: dict[str, Any] = {"type": "function_call"}
            if item.provider_item_id and not detached:
                call["id"] = item.provider_item_id
            call["call_id"] = item.provider_call_id or item.id
            call["name"] = item.name
            call["arguments"] = dump_arguments(item.arguments)
            call["status"] = "completed"
            out.append(call)
        elif isinstance(item, Reasoning):
            encoded = encode_reasoning(item)
            if encoded is not None:
                out.append(encoded)
        else:
            raise ProviderError("responses does not accept assistant images", provider=PROVIDER)


def _encode_message(msg: Message, out: list[dict[str, Any]]) -> None:
    if isinstance(msg, UserMessage):
        _encode_user(msg, out)
    elif isinstance(msg, AssistantMessage):
        _encode_assistant(msg, out)
    else:
        out.append({"type": "message", "role": "system", "content": msg.content})


def encode_input(request: ModelRequest) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for msg in (*request.history, request.prompt):
        _encode_message(msg, out)
    return out


def encode_request(
    request: ModelRequest, *, stream: bool = False, encrypted_reasoning: bool | None = None
) -> dict[str, Any]:
    """The JSON body of a stateless Responses call. `encrypted_reasoning` overrides
    `wants_encrypted_reasoning` (the provider passes False once the model refused it)."""
    body: dict[str, Any] = {"model": request.model}
    if encrypted_reasoning is None:
        encrypted_reasoning = wants_encrypted_reasoning(request.model, request.params)
    if encrypted_reasoning:
        body["include"] = [ENCRYPTED_REASONING]
    merge_params(body, request.params)
    if request.preamble:
        body["instructions"] = request.preamble
    body["input"] = encode_input(request)
    body["store"] = False
    if request.tools:
        body["tools"] = [_tool(t) for t in request.tools]
        if request.tool_choice is not None:
            body["tool_choice"] = encode_tool_choice(request.tool_choice)
    if stream:
        body["stream"] = True
    return body


# --- transport -----------------------------------------------------------------------------


class OpenAIResponsesProvider(HttpProvider):
    """Responses over HTTP; `base_url` includes the version (`.../v1`).

    `refused` is the memory of models that refused encrypted reasoning (by default the
    process-wide `REFUSED_ENCRYPTED_REASONING`; tests pass their own)."""

    name = "openai_responses"
    path = PATH
    request_id_headers = ("x-request-id",)

    def __init__(self, *, refused: set[tuple[str, str]] | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.refused = REFUSED_ENCRYPTED_REASONING if refused is None else refused

    def auth_headers(self) -> dict[str, str]:
        return {"authorization": f"Bearer {self.api_key}"} if self.api_key else {}

    def asks_encrypted_reasoning(self, request: ModelRequest) -> bool:
        """Whether this provider adds the `include` for `request` (never over the run's own
        `include` param, never for a model that refused it)."""
        return (
            "include" not in request.params
            and (self.base_url, request.model) not in self.refused
            and wants_encrypted_reasoning(request.model, request.params)
        )

    def encode(self, request: ModelRequest, *, stream: bool) -> dict[str, Any]:
        return encode_request(
            request, stream=stream, encrypted_reasoning=self.asks_encrypted_reasoning(request)
        )

    def decode(self, body: dict[str, Any], *, request_id: str | None) -> ProviderTurn:
        return decode_response(body, request_id=request_id)

    def stream_decoder(self, *, request_id: str | None) -> ResponsesStreamDecoder:
        return ResponsesStreamDecoder(request_id=request_id)

    def _status_error(self, response: httpx.Response) -> ProviderError:
        err = super()._status_error(response)
        if not refuses_encrypted_reasoning(response.status_code, response.content):
            return err
        return EncryptedReasoningRefused(
            err.message,
            status=err.status,
            retryable=err.retryable,
            retry_after=err.retry_after,
            provider=err.provider,
        )

    # A refusal of the adapter's own `include` is learnt and the call retried once without
    # it; a refusal of the run's own `include` param (or without one) is the run's error.

    async def complete(self, request: ModelRequest) -> ProviderTurn:
        asked = self.asks_encrypted_reasoning(request)
        try:
            return await super().complete(request)
        except EncryptedReasoningRefused:
            if not asked:
                raise
            self.refused.add((self.base_url, request.model))
        return await super().complete(request)

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamItem]:
        asked = self.asks_encrypted_reasoning(request)
        try:
            async for item in super().stream(request):
                yield item
            return
        except EncryptedReasoningRefused:  # raised before the first item (HTTP status)
            if not asked:
                raise
            self.refused.add((self.base_url, request.model))
        async for item in super().stream(request):
            yield item
