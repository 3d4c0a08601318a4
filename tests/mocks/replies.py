"""Wire-neutral scripted replies and their rendering in the three real wire formats.

A `Reply` describes one model answer (text, tool calls, reasoning, usage, finish reason) or
one fault (an HTTP error status, a delay, a raw body). The renderers turn it into the
blocking JSON body or the SSE event sequence of Chat Completions, Responses or Messages,
following the providers' public API references. Pure functions: the ASGI mock serves them,
and codec tests use them directly.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

CREATED = 1_700_000_000

#: Wire-neutral finish → wire-native reason, per wire.
CHAT_FINISH = {"stop": "stop", "length": "length", "tool_calls": "tool_calls"}
ANTHROPIC_STOP = {"stop": "end_turn", "length": "max_tokens", "tool_calls": "tool_use"}


@dataclass
class MockToolCall:
    name: str
    arguments: str = "{}"  # the raw JSON text the model produced (may be malformed)
    id: str | None = None  # call id (Chat `id`, Responses `call_id`, Anthropic `id`)
    item_id: str | None = None  # Responses item id


@dataclass
class MockReasoning:
    text: str = ""  # visible reasoning (Anthropic thinking / Responses summary / Chat)
    signature: str | None = None  # Anthropic thinking signature
    encrypted: str | None = None  # Responses encrypted_content
    redacted: str | None = None  # Anthropic redacted_thinking data (replaces text)
    id: str | None = None  # Responses reasoning item id


@dataclass
class MockUsage:
    input: int = 12
    output: int = 7
    cached: int = 0
    cache_creation: int = 0
    reasoning: int = 0


@dataclass
class Reply:
    text: str | None = None
    tool_calls: list[MockToolCall] = field(default_factory=list)
    reasoning: list[MockReasoning] = field(default_factory=list)
    usage: MockUsage = field(default_factory=MockUsage)
    #: Wire-native finish/stop reason (e.g. "max_tokens", "refusal", "content_filter",
    #: Responses incomplete reason "max_output_tokens"); None derives it from the content.
    finish: str | None = None
    id: str | None = None
    status: int = 200
    error_message: str = "mock error"
    error_type: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0  # seconds before the response starts
    chunk_delay: float = 0.0  # seconds between SSE events
    raw_body: bytes | None = None  # sent verbatim (with `status`) instead of a rendered body
    stop_after_events: int | None = None  # cut the stream after this many events
    model: str | None = None  # the model the answer names (default: the requested one)

    @classmethod
    def fault(
        cls,
        status: int,
        message: str = "mock error",
        *,
        retry_after: str | None = None,
        error_type: str | None = None,
        delay: float = 0.0,
    ) -> Reply:
        headers = {"retry-after": retry_after} if retry_after is not None else {}
        return cls(
            status=status,
            error_message=message,
            error_type=error_type,
            headers=headers,
            delay=delay,
        )


def _chunks(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def _call_id(reply_seq: int, index: int, call: MockToolCall, prefix: str) -> str:
    return call.id if call.id is not None else f"{prefix}_{reply_seq}_{index}"


def _wire_neutral_finish(reply: Reply) -> str:
    return "tool_calls" if reply.tool_calls else "stop"


# --- errors --------------------------------------------------------------------------------

_OPENAI_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "invalid_request_error",
    403: "permission_denied",
    404: "invalid_request_error",
    429: "rate_limit_exceeded",
}
_ANTHROPIC_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    529: "overloaded_error",
}


def openai_error_body(reply: Reply) -> dict[str, Any]:
    kind = reply.error_type or _OPENAI_ERROR_TYPES.get(reply.status, "server_error")
    code = {401: "invalid_api_key", 429: "rate_limit_exceeded"}.get(reply.status)
    if reply.error_type == "context_length_exceeded":
        kind, code = "invalid_request_error", "context_length_exceeded"
    return {"error": {"message": reply.error_message, "type": kind, "param": None, "code": code}}


def anthropic_error_body(reply: Reply) -> dict[str, Any]:
    kind = reply.error_type or _ANTHROPIC_ERROR_TYPES.get(reply.status, "api_error")
    return {"type": "error", "error": {"type": kind, "message": reply.error_message}}


# --- Chat Completions -----------------------------------------------------------------------


def _chat_usage(u: MockUsage) -> dict[str, Any]:
    return {
        "prompt_tokens": u.input,
        "completion_tokens": u.output,
        "total_tokens": u.input + u.output,
        "prompt_tokens_details": {"cached_tokens": u.cached, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": u.reasoning,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    }


def _chat_finish(reply: Reply) -> str:
    return reply.finish or CHAT_FINISH[_wire_neutral_finish(reply)]


def chat_body(reply: Reply, model: str, seq: int) -> dict[str, Any]:
    message: dict[str, Any] = {
        "role": "assistant",
        "content": reply.text,
        "refusal": None,
        "annotations": [],
    }
    reasoning = "".join(r.text for r in reply.reasoning)
    if reasoning:
        message["reasoning_content"] = reasoning
    if reply.tool_calls:
        message["tool_calls"] = [
            {
                "id": _call_id(seq, i, c, "call"),
                "type": "function",
                "function": {"name": c.name, "arguments": c.arguments},
            }
            for i, c in enumerate(reply.tool_calls)
        ]
    return {
        "id": reply.id or f"chatcmpl-mock{seq}",
        "object": "chat.completion",
        "created": CREATED,
        "model": model,
        "choices": [
            {"index": 0, "message": message, "logprobs": None, "finish_reason": _chat_finish(reply)}
        ],
        "usage": _chat_usage(reply.usage),
        "service_tier": "default",
        "system_fingerprint": "fp_mock",
    }


def chat_events(reply: Reply, model: str, seq: int) -> list[tuple[str | None, str]]:
    """`chat.completion.chunk` events (with `stream_options.include_usage`), then [DONE]."""
    head = {
        "id": reply.id or f"chatcmpl-mock{seq}",
        "object": "chat.completion.chunk",
        "created": CREATED,
        "model": model,
        "service_tier": "default",
        "system_fingerprint": "fp_mock",
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> tuple[str | None, str]:
        body = {
            **head,
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
            "usage": None,
        }
        return None, json.dumps(body)

    events = [chunk({"role": "assistant", "content": "", "refusal": None})]
    for r in reply.reasoning:
        for piece in _chunks(r.text, 6) if r.text else []:
            events.append(chunk({"reasoning_content": piece}))
    if reply.text:
        for piece in _chunks(reply.text, 5):
            events.append(chunk({"content": piece}))
    for i, c in enumerate(reply.tool_calls):
        start = {
            "index": i,
            "id": _call_id(seq, i, c, "call"),
            "type": "function",
            "function": {"name": c.name, "arguments": ""},
        }
        events.append(chunk({"tool_calls": [start]}))
        for piece in _chunks(c.arguments, 7) if c.arguments else []:
            events.append(chunk({"tool_calls": [{"index": i, "function": {"arguments": piece}}]}))
    events.append(chunk({}, _chat_finish(reply)))
    usage = {**head, "choices": [], "usage": _chat_usage(reply.usage)}
    events.append((None, json.dumps(usage)))
    events.append((None, "[DONE]"))
    return events


# --- Responses -----------------------------------------------------------------------------


def _responses_output(reply: Reply, seq: int) -> list[dict[str, Any]]:
    output: list[dict[str, Any]] = []
    for i, r in enumerate(reply.reasoning):
        item: dict[str, Any] = {
            "type": "reasoning",
            "id": r.id or f"rs_mock{seq}_{i}",
            "summary": [{"type": "summary_text", "text": r.text}] if r.text else [],
        }
        if r.encrypted is not None:
            item["encrypted_content"] = r.encrypted
        output.append(item)
    if reply.text is not None:
        output.append(
            {
                "type": "message",
                "id": f"msg_mock{seq}",
                "status": "completed",
                "role": "assistant",
                "content": [
                    {"type": "output_text", "text": reply.text, "annotations": [], "logprobs": []}
                ],
            }
        )
    for i, c in enumerate(reply.tool_calls):
        output.append(
            {
                "type": "function_call",
                "id": c.item_id or f"fc_mock{seq}_{i}",
                "call_id": _call_id(seq, i, c, "call"),
                "name": c.name,
                "arguments": c.arguments,
                "status": "completed",
            }
        )
    return output


def responses_body(reply: Reply, model: str, seq: int, *, status: str | None = None) -> dict:
    incomplete = reply.finish in ("max_output_tokens", "content_filter")
    u = reply.usage
    return {
        "id": reply.id or f"resp_mock{seq}",
        "object": "response",
        "created_at": CREATED,
        "status": status or ("incomplete" if incomplete else "completed"),
        "error": None,
        "incomplete_details": {"reason": reply.finish} if incomplete else None,
        "instructions": None,
        "model": model,
        "output": _responses_output(reply, seq) if status is None else [],
        "parallel_tool_calls": True,
        "store": False,
        "temperature": 1.0,
        "tool_choice": "auto",
        "tools": [],
        "top_p": 1.0,
        "text": {"format": {"type": "text"}},
        "truncation": "disabled",
        "usage": {
            "input_tokens": u.input,
            "input_tokens_details": {"cached_tokens": u.cached},
            "output_tokens": u.output,
            "output_tokens_details": {"reasoning_tokens": u.reasoning},
            "total_tokens": u.input + u.output,
        }
        if status is None
        else None,
        "metadata": {},
    }


def responses_events(reply: Reply, model: str, seq: int) -> list[tuple[str | None, str]]:
    events: list[tuple[str | None, str]] = []

    def emit(kind: str, **fields: Any) -> None:
        events.append((kind, json.dumps({"type": kind, "sequence_number": len(events), **fields})))

    emit("response.created", response=responses_body(reply, model, seq, status="in_progress"))
    emit("response.in_progress", response=responses_body(reply, model, seq, status="in_progress"))
    for index, item in enumerate(_responses_output(reply, seq)):
        kind = item["type"]
        if kind == "message":
            emit(
                "response.output_item.added",
                output_index=index,
                item={**item, "status": "in_progress", "content": []},
            )
            part = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
            emit(
                "response.content_part.added",
                item_id=item["id"],
                output_index=index,
                content_index=0,
                part=part,
            )
            text = item["content"][0]["text"]
            for piece in _chunks(text, 5) if text else []:
                emit(
                    "response.output_text.delta",
                    item_id=item["id"],
                    output_index=index,
                    content_index=0,
                    delta=piece,
                    logprobs=[],
                )
            emit(
                "response.output_text.done",
                item_id=item["id"],
                output_index=index,
                content_index=0,
                text=text,
                logprobs=[],
            )
            emit(
                "response.content_part.done",
                item_id=item["id"],
                output_index=index,
                content_index=0,
                part=item["content"][0],
            )
        elif kind == "function_call":
            emit(
                "response.output_item.added",
                output_index=index,
                item={**item, "arguments": "", "status": "in_progress"},
            )
            for piece in _chunks(item["arguments"], 7) if item["arguments"] else []:
                emit(
                    "response.function_call_arguments.delta",
                    item_id=item["id"],
                    output_index=index,
                    delta=piece,
                )
            emit(
                "response.function_call_arguments.done",
                item_id=item["id"],
                output_index=index,
                arguments=item["arguments"],
            )
        else:
            emit("response.output_item.added", output_index=index, item={**item, "summary": []})
            for s_index, summary in enumerate(item["summary"]):
                for piece in _chunks(summary["text"], 6):
                    emit(
                        "response.reasoning_summary_text.delta",
                        item_id=item["id"],
                        output_index=index,
                        summary_index=s_index,
                        delta=piece,
                    )
        emit("response.output_item.done", output_index=index, item=item)
    body = responses_body(reply, model, seq)
    emit(f"response.{body['status']}", response=body)
    return events


# --- Anthropic Messages --------------------------------------------------------------------


def _anthropic_input(arguments: str) -> Any:
    try:
        return json.loads(arguments) if arguments else {}
    except json.JSONDecodeError:
        return arguments  # not a real Messages shape: lets tests check robustness


def _anthropic_blocks(reply: Reply, seq: int) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for r in reply.reasoning:
        if r.redacted is not None:
            blocks.append({"type": "redacted_thinking", "data": r.redacted})
        else:
            blocks.append(
                {"type": "thinking", "thinking": r.text, "signature": r.signature or "sig"}
            )
    if reply.text is not None:
        blocks.append({"type": "text", "text": reply.text})
    for i, c in enumerate(reply.tool_calls):
        blocks.append(
            {
                "type": "tool_use",
                "id": _call_id(seq, i, c, "toolu"),
                "name": c.name,
                "input": _anthropic_input(c.arguments),
            }
        )
    return blocks


def _anthropic_stop(reply: Reply) -> str:
    return reply.finish or ANTHROPIC_STOP[_wire_neutral_finish(reply)]


def anthropic_body(reply: Reply, model: str, seq: int) -> dict[str, Any]:
    u = reply.usage
    return {
        "id": reply.id or f"msg_mock{seq}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": _anthropic_blocks(reply, seq),
        "stop_reason": _anthropic_stop(reply),
        "stop_sequence": None,
        "usage": {
            "input_tokens": u.input,
            "cache_creation_input_tokens": u.cache_creation,
            "cache_read_input_tokens": u.cached,
            "output_tokens": u.output,
        },
    }


def anthropic_events(reply: Reply, model: str, seq: int) -> list[tuple[str | None, str]]:
    events: list[tuple[str | None, str]] = []

    def emit(kind: str, **fields: Any) -> None:
        events.append((kind, json.dumps({"type": kind, **fields})))

    body = anthropic_body(reply, model, seq)
    start = {**body, "content": [], "stop_reason": None, "stop_sequence": None}
    start["usage"] = {**body["usage"], "output_tokens": 1}
    emit("message_start", message=start)
    emit("ping")
    for index, block in enumerate(body["content"]):
        kind = block["type"]
        if kind == "text":
            emit("content_block_start", index=index, content_block={"type": "text", "text": ""})
            for piece in _chunks(block["text"], 5) if block["text"] else []:
                emit(
                    "content_block_delta",
                    index=index,
                    delta={"type": "text_delta", "text": piece},
                )
        elif kind == "thinking":
            emit(
                "content_block_start",
                index=index,
                content_block={"type": "thinking", "thinking": "", "signature": ""},
            )
            for piece in _chunks(block["thinking"], 6) if block["thinking"] else []:
                emit(
                    "content_block_delta",
                    index=index,
                    delta={"type": "thinking_delta", "thinking": piece},
                )
            emit(
                "content_block_delta",
                index=index,
                delta={"type": "signature_delta", "signature": block["signature"]},
            )
        elif kind == "redacted_thinking":
            emit("content_block_start", index=index, content_block=block)
        else:
            call = reply.tool_calls[index - len(body["content"]) + len(reply.tool_calls)]
            emit("content_block_start", index=index, content_block={**block, "input": {}})
            for piece in _chunks(call.arguments, 7) if call.arguments else []:
                emit(
                    "content_block_delta",
                    index=index,
                    delta={"type": "input_json_delta", "partial_json": piece},
                )
        emit("content_block_stop", index=index)
    emit(
        "message_delta",
        delta={"stop_reason": body["stop_reason"], "stop_sequence": None},
        usage={"output_tokens": body["usage"]["output_tokens"]},
    )
    emit("message_stop")
    return events


# --- dispatch ------------------------------------------------------------------------------

CHAT_PATH = "/v1/chat/completions"
RESPONSES_PATH = "/v1/responses"
MESSAGES_PATH = "/v1/messages"

RENDER_BODY = {CHAT_PATH: chat_body, RESPONSES_PATH: responses_body, MESSAGES_PATH: anthropic_body}
RENDER_EVENTS = {
    CHAT_PATH: chat_events,
    RESPONSES_PATH: responses_events,
    MESSAGES_PATH: anthropic_events,
}


def error_body(path: str, reply: Reply) -> dict[str, Any]:
    return anthropic_error_body(reply) if path == MESSAGES_PATH else openai_error_body(reply)


def sse_bytes(event: str | None, data: str) -> bytes:
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {data}\n\n".encode()
