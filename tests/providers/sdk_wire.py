"""The official SDKs (dev-only dependencies) as the judge of the three wires.

Requests: `check_request` validates a body against the SDK's own request TypedDict
(`CompletionCreateParams…`, `ResponseCreateParams…`, `MessageCreateParams…`) strictly:
unknown or misnamed keys, missing required keys and wrong scalar types all fail. Pydantic
alone is not strict enough, so three gaps are closed here: its TypedDicts ignore extra keys
(forbidden through the adapter's config, which nested TypedDicts inherit), `Iterable[...]`
fields are validated lazily (every iterator is consumed), and a block that fails its
request type may still match a *response* model in the same union, which accepts extra
keys (a model instance in the result is a failure).

Answers: `Answer` describes one model turn; `sdk_answer` / `sdk_events` build it from the
SDKs' model classes (`ChatCompletion`, `Response`, `Message` and their stream events) and
`decode` feeds their `model_dump(mode="json")` to our decoders, blocking or as SSE.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

import anthropic.types as at
import openai.types.chat as oc
import openai.types.responses as orr
from anthropic.types import message_create_params as anthropic_params
from openai.types.chat import chat_completion as cc
from openai.types.chat import chat_completion_chunk as ck
from openai.types.chat import completion_create_params as chat_params
from openai.types.responses import response_create_params as responses_params
from openai.types.responses.response_reasoning_item import Summary
from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError

from app.providers import anthropic, openai_chat, openai_responses
from app.providers.base import ProviderTurn
from app.providers.sse import SSEParser

WIRES = ("chat", "responses", "anthropic")
CODECS: dict[str, Any] = {
    "chat": openai_chat,
    "responses": openai_responses,
    "anthropic": anthropic,
}
DECODERS: dict[str, Any] = {
    "chat": openai_chat.ChatStreamDecoder,
    "responses": openai_responses.ResponsesStreamDecoder,
    "anthropic": anthropic.AnthropicStreamDecoder,
}
REQUEST_TYPES: dict[tuple[str, bool], Any] = {
    ("chat", False): chat_params.CompletionCreateParamsNonStreaming,
    ("chat", True): chat_params.CompletionCreateParamsStreaming,
    ("responses", False): responses_params.ResponseCreateParamsNonStreaming,
    ("responses", True): responses_params.ResponseCreateParamsStreaming,
    ("anthropic", False): anthropic_params.MessageCreateParamsNonStreaming,
    ("anthropic", True): anthropic_params.MessageCreateParamsStreaming,
}

# --- requests ------------------------------------------------------------------------------


class WireViolation(AssertionError):
    """A request body the SDK's request type does not accept."""


@cache
def _adapter(wire: str, stream: bool) -> TypeAdapter[Any]:
    kind = REQUEST_TYPES[(wire, stream)]
    # A TypedDict cannot take a config itself; a list of it can, and passes it down.
    return TypeAdapter(list[kind], config=ConfigDict(extra="forbid", strict=True))  # type: ignore[valid-type]


def _consume(value: Any, where: str) -> None:
    if isinstance(value, BaseModel):
        raise WireViolation(
            f"{where}: accepted only by the response model {type(value).__name__} "
            "(which allows extra keys), not by any request type"
        )
    if isinstance(value, Mapping):
        for key, item in value.items():
            _consume(item, f"{where}.{key}")
    elif isinstance(value, list | tuple | Iterator):
        for index, item in enumerate(value):  # validates lazily validated items
            _consume(item, f"{where}[{index}]")


def _short(part: Any) -> str:
    text = str(part)
    return text.split("[", 1)[0] + "[…]" if len(text) > 40 else text


def _summary(exc: ValidationError) -> str:
    """The errors that matter: a union tries every member, so the members whose `type` /
    `role` literal did not even match are left out (unless nothing else remains)."""
    errors = exc.errors()
    wrong = {e["loc"][:-1] for e in errors if e["type"] == "literal_error"}

    def relevant(loc: tuple[Any, ...]) -> bool:
        return not any(loc[:n] in wrong for n in range(1, len(loc)))

    kept = [e for e in errors if relevant(e["loc"])] or errors
    lines = sorted({f"{'.'.join(map(_short, e['loc']))}: {e['type']}" for e in kept})
    more = f"\n  … {len(lines) - 12} more" if len(lines) > 12 else ""
    return f"{exc.error_count()} errors, e.g.\n  " + "\n  ".join(lines[:12]) + more


def check_request(wire: str, body: dict[str, Any], *, stream: bool) -> None:
    """Raise `WireViolation` unless `body` is a valid request of the SDK's own type."""
    json.dumps(body)  # a JSON document, nothing else
    try:
        validated = _adapter(wire, stream).validate_python([body])[0]
        _consume(validated, "body")
    except ValidationError as exc:
        raise WireViolation(_summary(exc)) from None


# --- answers -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Call:
    id: str
    name: str
    arguments: str  # the JSON text the model produced


@dataclass(frozen=True)
class Answer:
    text: str | None = None
    calls: tuple[Call, ...] = ()
    reasoning: str | None = None  # summary (Responses) / thinking (Anthropic); not on Chat
    usage: tuple[int, int] = (20, 8)

    @property
    def finish(self) -> str:
        return "tool_calls" if self.calls else "stop"


def _chat(a: Answer, seq: int, model: str) -> oc.ChatCompletion:
    calls = [
        oc.ChatCompletionMessageFunctionToolCall(
            id=c.id, type="function", function={"name": c.name, "arguments": c.arguments}
        )
        for c in a.calls
    ]
    message = oc.ChatCompletionMessage(role="assistant", content=a.text, tool_calls=calls or None)
    return oc.ChatCompletion(
        id=f"chatcmpl-{seq}",
        object="chat.completion",
        created=1_700_000_000,
        model=model,
        choices=[cc.Choice(index=0, finish_reason=a.finish, message=message)],  # type: ignore[arg-type]
        usage={
            "prompt_tokens": a.usage[0],
            "completion_tokens": a.usage[1],
            "total_tokens": sum(a.usage),
        },
    )


def _chat_chunks(a: Answer, seq: int, model: str) -> list[oc.ChatCompletionChunk]:
    def chunk(delta: dict[str, Any], finish: str | None = None, **kw: Any) -> Any:
        choice = ck.Choice(index=0, delta=ck.ChoiceDelta(**delta), finish_reason=finish)  # type: ignore[arg-type]
        return oc.ChatCompletionChunk(
            id=f"chatcmpl-{seq}",
            object="chat.completion.chunk",
            created=1_700_000_000,
            model=model,
            choices=[choice],
            **kw,
        )

    out = [chunk({"role": "assistant", "content": ""})]
    for piece in _pieces(a.text or ""):
        out.append(chunk({"content": piece}))
    for i, c in enumerate(a.calls):
        head = {"index": i, "id": c.id, "type": "function", "function": {"name": c.name}}
        out.append(chunk({"tool_calls": [head]}))
        for piece in _pieces(c.arguments):
            out.append(chunk({"tool_calls": [{"index": i, "function": {"arguments": piece}}]}))
    out.append(chunk({}, a.finish))
    usage = {"prompt_tokens": a.usage[0], "completion_tokens": a.usage[1]}
    tail = oc.ChatCompletionChunk(
        id=f"chatcmpl-{seq}",
        object="chat.completion.chunk",
        created=1_700_000_000,
        model=model,
        choices=[],
        usage={**usage, "total_tokens": sum(a.usage)},
    )
    return [*out, tail]


def _pieces(text: str) -> list[str]:
    return [text[i : i + 7] for i in range(0, len(text), 7)]


def _response_items(a: Answer, seq: int) -> list[Any]:
    items: list[Any] = []
    if a.reasoning is not None:
        items.append(
            orr.ResponseReasoningItem(
                id=f"rs_{seq}",
                type="reasoning",
                summary=[Summary(type="summary_text", text=a.reasoning)],
                encrypted_content=f"gAAAA_{seq}",
            )
        )
    if a.text is not None:
        items.append(
            orr.ResponseOutputMessage(
                id=f"msg_{seq}",
                type="message",
                role="assistant",
                status="completed",
                content=[orr.ResponseOutputText(type="output_text", text=a.text, annotations=[])],
            )
        )
    for i, c in enumerate(a.calls):
        items.append(
            orr.ResponseFunctionToolCall(
                type="function_call",
                id=f"fc_{seq}_{i}",
                call_id=c.id,
                name=c.name,
                arguments=c.arguments,
                status="completed",
            )
        )
    return items


def _response(a: Answer, seq: int, model: str, *, done: bool = True) -> orr.Response:
    return orr.Response(
        id=f"resp_{seq}",
        object="response",
        created_at=1_700_000_000,
        model=model,
        status="completed" if done else "in_progress",
        output=_response_items(a, seq) if done else [],
        parallel_tool_calls=True,
        tool_choice="auto",
        tools=[],
        usage=orr.ResponseUsage(
            input_tokens=a.usage[0],
            output_tokens=a.usage[1],
            total_tokens=sum(a.usage),
            input_tokens_details={"cached_tokens": 0, "cache_write_tokens": 0},
            output_tokens_details={"reasoning_tokens": 3 if a.reasoning else 0},
        )
        if done
        else None,
    )


def _response_events(a: Answer, seq: int, model: str) -> list[Any]:
    events: list[Any] = [
        orr.ResponseCreatedEvent(
            type="response.created",
            sequence_number=0,
            response=_response(a, seq, model, done=False),
        )
    ]

    def add(cls: Any, **kw: Any) -> None:
        events.append(cls(sequence_number=len(events), **kw))

    for index, item in enumerate(_response_items(a, seq)):
        if isinstance(item, orr.ResponseOutputMessage):
            text = item.content[0].text  # type: ignore[union-attr]
            empty = item.model_copy(update={"status": "in_progress", "content": []})
            add(
                orr.ResponseOutputItemAddedEvent,
                type="response.output_item.added",
                output_index=index,
                item=empty,
            )
            for piece in _pieces(text):
                add(
                    orr.ResponseTextDeltaEvent,
                    type="response.output_text.delta",
                    item_id=item.id,
                    output_index=index,
                    content_index=0,
                    delta=piece,
                    logprobs=[],
                )
            add(
                orr.ResponseTextDoneEvent,
                type="response.output_text.done",
                item_id=item.id,
                output_index=index,
                content_index=0,
                text=text,
                logprobs=[],
            )
        elif isinstance(item, orr.ResponseFunctionToolCall):
            add(
                orr.ResponseOutputItemAddedEvent,
                type="response.output_item.added",
                output_index=index,
                item=item.model_copy(update={"arguments": ""}),
            )
            add(
                orr.ResponseFunctionCallArgumentsDeltaEvent,
                type="response.function_call_arguments.delta",
                item_id=item.id or "",
                output_index=index,
                delta=item.arguments,
            )
        add(
            orr.ResponseOutputItemDoneEvent,
            type="response.output_item.done",
            output_index=index,
            item=item,
        )
    add(orr.ResponseCompletedEvent, type="response.completed", response=_response(a, seq, model))
    return events


def _blocks(a: Answer, seq: int) -> list[Any]:
    blocks: list[Any] = []
    if a.reasoning is not None:
        blocks.append(
            at.ThinkingBlock(type="thinking", thinking=a.reasoning, signature=f"sig_{seq}")
        )
    if a.text is not None:
        blocks.append(at.TextBlock(type="text", text=a.text))
    for c in a.calls:
        blocks.append(
            at.ToolUseBlock(type="tool_use", id=c.id, name=c.name, input=json.loads(c.arguments))
        )
    return blocks


_STOP = {"tool_calls": "tool_use", "stop": "end_turn"}


def _message(a: Answer, seq: int, model: str, *, done: bool = True) -> at.Message:
    return at.Message(
        id=f"msg_{seq}",
        type="message",
        role="assistant",
        model=model,
        content=_blocks(a, seq) if done else [],
        stop_reason=_STOP[a.finish] if done else None,  # type: ignore[arg-type]
        stop_sequence=None,
        usage=at.Usage(input_tokens=a.usage[0], output_tokens=a.usage[1] if done else 1),
    )


def _message_events(a: Answer, seq: int, model: str) -> list[Any]:
    events: list[Any] = [
        at.RawMessageStartEvent(type="message_start", message=_message(a, seq, model, done=False))
    ]
    for index, block in enumerate(_blocks(a, seq)):
        if isinstance(block, at.TextBlock):
            start: Any = block.model_copy(update={"text": ""})
            deltas = [{"type": "text_delta", "text": p} for p in _pieces(block.text)]
        elif isinstance(block, at.ThinkingBlock):
            start = block.model_copy(update={"thinking": "", "signature": ""})
            deltas = [{"type": "thinking_delta", "thinking": block.thinking}]
            deltas.append({"type": "signature_delta", "signature": block.signature})
        else:
            start = block.model_copy(update={"input": {}})
            deltas = [
                {"type": "input_json_delta", "partial_json": p}
                for p in _pieces(json.dumps(block.input))
            ]
        events.append(
            at.RawContentBlockStartEvent(
                type="content_block_start", index=index, content_block=start
            )
        )
        events.extend(
            at.RawContentBlockDeltaEvent(type="content_block_delta", index=index, delta=d)  # type: ignore[arg-type]
            for d in deltas
        )
        events.append(at.RawContentBlockStopEvent(type="content_block_stop", index=index))
    events.append(
        at.RawMessageDeltaEvent(
            type="message_delta",
            delta={"stop_reason": _STOP[a.finish], "stop_sequence": None},  # type: ignore[arg-type]
            usage={"output_tokens": a.usage[1]},  # type: ignore[arg-type]
        )
    )
    events.append(at.RawMessageStopEvent(type="message_stop"))
    return events


def sdk_answer(wire: str, a: Answer, seq: int, model: str) -> BaseModel:
    build = {"chat": _chat, "responses": _response, "anthropic": _message}[wire]
    answer: BaseModel = build(a, seq, model)
    return answer


def sdk_events(wire: str, a: Answer, seq: int, model: str) -> list[BaseModel]:
    build = {"chat": _chat_chunks, "responses": _response_events, "anthropic": _message_events}
    events: list[BaseModel] = build[wire](a, seq, model)
    return events


def sse_text(wire: str, events: list[BaseModel]) -> str:
    """The events as the provider streams them (Chat: data only, ending in `[DONE]`)."""
    out = []
    for event in events:
        data = json.dumps(event.model_dump(mode="json"))
        name = getattr(event, "type", None) if wire != "chat" else None
        out.append((f"event: {name}\n" if name else "") + f"data: {data}\n\n")
    if wire == "chat":
        out.append("data: [DONE]\n\n")
    return "".join(out)


def decode(wire: str, a: Answer, seq: int, model: str, *, stream: bool) -> ProviderTurn:
    """Our decoder's reading of the SDK-built answer, blocking or streamed."""
    if not stream:
        body = sdk_answer(wire, a, seq, model).model_dump(mode="json")
        turn: ProviderTurn = CODECS[wire].decode_response(body, request_id=f"req_{seq}")
        return turn
    decoder = DECODERS[wire](request_id=f"req_{seq}")
    parser = SSEParser()
    for event in parser.feed(sse_text(wire, sdk_events(wire, a, seq, model))):
        decoder.feed(event)
        if decoder.done:
            break
    assert decoder.done, f"{wire}: the stream did not complete"
    streamed: ProviderTurn = decoder.finish()
    return streamed
