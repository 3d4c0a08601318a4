"""Provider adapter overhead: encode + decode of a 100-message history, per wire, and
streaming decode throughput (events per second). No network.

    .venv/bin/python bench/providers.py [--repeat 7] [--messages 100] [--number N]

Each figure is the best of `repeat` timeit runs (timeit-style: the minimum is the least
disturbed by other load), plus the median for context; each run makes as many calls as
take 0.2 s (timeit's autorange), or `--number` of them.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import timeit
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.core import AssistantMessage, Message, Reasoning, Text, ToolCall, ToolResult, UserMessage
from app.providers import anthropic, openai_chat, openai_responses
from app.providers.base import ModelRequest, ToolSpec
from app.providers.sse import SSEEvent, SSEParser
from tests.mocks.replies import (
    RENDER_BODY,
    RENDER_EVENTS,
    MockReasoning,
    MockToolCall,
    Reply,
    sse_bytes,
)

WIRES: dict[str, tuple[Any, str, Callable[..., Any]]] = {
    "chat_completions": (openai_chat, "/v1/chat/completions", openai_chat.ChatStreamDecoder),
    "responses": (
        openai_responses,
        "/v1/responses",
        openai_responses.ResponsesStreamDecoder,
    ),
    "anthropic_messages": (anthropic, "/v1/messages", anthropic.AnthropicStreamDecoder),
}

TOOLS = tuple(
    ToolSpec(
        f"tool_{i}",
        f"Tool number {i}",
        {
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "string"}},
            "required": ["a"],
        },
    )
    for i in range(8)
)


def history(n_messages: int) -> tuple[Message, ...]:
    """n messages: cycles of user text → assistant (reasoning, text, 2 tool calls) → user
    (2 tool results) → assistant text, about 200 characters of text per message."""
    out: list[Message] = []
    i = 0
    filler = "lorem ipsum dolor sit amet " * 7
    while len(out) < n_messages:
        c1 = ToolCall.from_wire(f"call_{i}_a", "tool_1", {"a": i, "b": filler[:40]})
        c2 = ToolCall.from_wire(f"call_{i}_b", "tool_2", {"a": -i, "b": "x"})
        cycle: list[Message] = [
            UserMessage(f"question {i}: {filler}"),
            AssistantMessage(
                [
                    Reasoning.of_text(f"thinking {i} {filler}", signature=f"sig{i}", id=f"rs_{i}"),
                    Text(f"answer part {i} {filler}"),
                    c1,
                    c2,
                ],
                id=f"msg_{i}",
            ),
            UserMessage(
                [ToolResult.text(c1, f"result {filler}"), ToolResult.text(c2, '{"ok": true}')]
            ),
            AssistantMessage(f"final {i} {filler}", id=f"msg_{i}_f"),
        ]
        out.extend(cycle)
        i += 1
    return tuple(out[:n_messages])


def best_and_median(
    fn: Callable[[], object], repeat: int, number: int | None = None
) -> tuple[float, float, int]:
    timer = timeit.Timer(fn)
    if number is None:
        number, _ = timer.autorange()
    runs = [t / number for t in timer.repeat(repeat=repeat, number=number)]
    return min(runs), statistics.median(runs), number


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--messages", type=int, default=100)
    parser.add_argument("--calls", type=int, default=200, help="loopback calls per wire")
    parser.add_argument("--number", type=int, help="calls per timeit run (default: 0.2 s)")
    args = parser.parse_args()

    msgs = history(args.messages)
    request = ModelRequest(
        model="bench-model",
        prompt=msgs[-1],
        history=msgs[:-1],
        preamble="You are a benchmark.",
        tools=TOOLS,
    )
    reply = Reply(
        text="The answer " * 40,
        reasoning=[MockReasoning("step " * 50, signature="sig", encrypted="enc" * 100, id="rs")],
        tool_calls=[
            MockToolCall("tool_1", '{"a": 1, "b": "two"}', id=f"call_{k}") for k in range(3)
        ],
    )

    print(f"History: {len(msgs)} messages, {len(TOOLS)} tools; best (median) of {args.repeat} runs")
    print()
    header = f"{'wire':<20} {'encode µs':>16} {'decode µs':>16} {'enc+dec µs':>16}"
    print(header)
    print("-" * len(header))
    for name, (codec, path, _) in WIRES.items():
        body = RENDER_BODY[path](reply, "bench-model", 1)

        def encode(codec: Any = codec) -> object:
            return codec.encode_request(request)

        def decode(codec: Any = codec, body: Any = body) -> object:
            return codec.decode_response(body)

        def both(codec: Any = codec, body: Any = body) -> object:
            return codec.encode_request(request), codec.decode_response(body)

        enc_b, enc_m, _ = best_and_median(encode, args.repeat, args.number)
        dec_b, dec_m, _ = best_and_median(decode, args.repeat, args.number)
        tot_b, tot_m, _ = best_and_median(both, args.repeat, args.number)
        print(
            f"{name:<20} {enc_b * 1e6:>7.1f} ({enc_m * 1e6:>6.1f}) "
            f"{dec_b * 1e6:>7.1f} ({dec_m * 1e6:>6.1f}) {tot_b * 1e6:>7.1f} ({tot_m * 1e6:>6.1f})"
        )

    print()
    stream_reply = Reply(
        text="token " * 2000,
        tool_calls=[MockToolCall("tool_1", '{"a": 1, "b": "' + "z" * 200 + '"}', id="call_s")],
    )
    header = f"{'wire':<20} {'events':>8} {'decode ev/s':>14} {'parse+decode ev/s':>19}"
    print(header)
    print("-" * len(header))
    for name, (_, path, decoder_cls) in WIRES.items():
        events = [SSEEvent(e, d) for e, d in RENDER_EVENTS[path](stream_reply, "bench-model", 1)]
        raw = "".join(sse_bytes(e.event, e.data).decode() for e in events)

        def decode_only(events: list[SSEEvent] = events, cls: Any = decoder_cls) -> None:
            decoder = cls()
            for event in events:
                decoder.feed(event)
            decoder.finish()

        def parse_and_decode(raw: str = raw, cls: Any = decoder_cls) -> None:
            decoder = cls()
            parser = SSEParser()
            for line in raw.split("\n"):
                event = parser.feed_line(line)
                if event is not None:
                    decoder.feed(event)
            decoder.finish()

        d_best, _, _ = best_and_median(decode_only, args.repeat, args.number)
        p_best, _, _ = best_and_median(parse_and_decode, args.repeat, args.number)
        n = len(events)
        print(f"{name:<20} {n:>8} {n / d_best:>14,.0f} {n / p_best:>19,.0f}")

    print()
    import asyncio

    asyncio.run(loopback(request, args.calls))


async def loopback(request: ModelRequest, calls: int) -> None:
    """A model call through each adapter vs. a bare httpx POST of the same pre-encoded body
    to the in-process loopback mock: the difference is what the adapter adds per call."""
    import time

    import httpx
    import orjson

    from app.providers.registry import provider_from_settings
    from tests.mocks.server import MockProviderServer

    server = MockProviderServer()
    server.start()
    reply = Reply(text="ok " * 50, tool_calls=[MockToolCall("tool_1", '{"a": 1}', id="c1")])
    header = f"{'wire':<20} {'bare POST ms':>13} {'adapter ms':>11} {'added ms':>9}"
    print(header)
    print("-" * len(header))
    try:
        for name, wire in (
            ("chat_completions", "openai"),
            ("responses", "openai_responses"),
            ("anthropic_messages", "anthropic"),
        ):
            provider = provider_from_settings(
                wire,
                openai_api_key="k",
                openai_base_url=server.openai_base_url,
                anthropic_api_key="k",
                anthropic_base_url=server.anthropic_base_url,
            )
            body = orjson.dumps(provider.encode(request, stream=False))
            headers = {"content-type": "application/json", **provider.auth_headers()}
            async with httpx.AsyncClient() as client, provider:
                server.script(*[reply] * (3 * calls + 20))
                for _ in range(10):  # warm up both paths
                    await client.post(provider.url, content=body, headers=headers)
                    await provider.complete(request)
                bare, adapter = [], []
                for _ in range(calls):
                    t0 = time.perf_counter()
                    r = await client.post(provider.url, content=body, headers=headers)
                    orjson.loads(r.content)
                    t1 = time.perf_counter()
                    await provider.complete(request)
                    t2 = time.perf_counter()
                    bare.append(t1 - t0)
                    adapter.append(t2 - t1)
            b, a = statistics.median(bare) * 1e3, statistics.median(adapter) * 1e3
            print(f"{name:<20} {b:>13.2f} {a:>11.2f} {a - b:>9.2f}")
            server.reset()
    finally:
        server.stop()


if __name__ == "__main__":
    main()
