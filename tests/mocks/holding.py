"""A provider that holds its answer: it starts (a streamed request gets its first events:
Anthropic's `message_start` with the input tokens, a text delta) and then sends nothing
for `hold` seconds, recording when the client closes each connection.

A raw asyncio server on 127.0.0.1 in a thread of its own (one HTTP/1.1 request per
connection), so the moment a connection closes is seen as it happens: the client's FIN
ends the read the handler waits in. Times are `time.monotonic()`, the test's clock.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from tests.mocks.replies import MESSAGES_PATH, RENDER_EVENTS, RESPONSES_PATH, Reply, sse_bytes
from tests.mocks.server import wire_env

#: Events sent of a streamed answer before the hold: Anthropic's message_start, ping,
#: content_block_start and a first text delta; Responses' created, in_progress, item and
#: part added and a first delta; Chat's role chunk and a first text piece.
FIRST_EVENTS = {MESSAGES_PATH: 4, RESPONSES_PATH: 5}
DEFAULT_FIRST_EVENTS = 2
INPUT_TOKENS = 25


@dataclass
class Held:
    path: str
    streamed: bool
    body: Any
    opened_at: float
    closed_at: float | None = None
    closed: threading.Event = field(default_factory=threading.Event)


@dataclass
class HoldingProvider:
    hold: float = 60.0
    port: int = 0
    connections: list[Held] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    arrived: threading.Condition = field(default_factory=threading.Condition)

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def env(self) -> dict[str, str]:
        """The environment that points a deployment's OpenAI and Anthropic wires here."""
        return wire_env(self.origin)

    def wait_for(self, count: int, timeout: float) -> list[Held]:
        """Once `count` requests have arrived (their answer started, when streamed)."""
        with self.arrived:
            if not self.arrived.wait_for(lambda: len(self.connections) >= count, timeout):
                raise AssertionError(f"only {len(self.connections)} of {count} model calls came")
            return list(self.connections)

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            path = lines[0].split(" ")[1]
            headers = {
                k.strip().lower(): v.strip()
                for k, _, v in (x.partition(":") for x in lines[1:] if x)
            }
            body = json.loads(await reader.readexactly(int(headers.get("content-length", "0"))))
            streamed = bool(body.get("stream"))
            if streamed:
                writer.write(
                    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                    b"transfer-encoding: chunked\r\n\r\n"
                )
                reply = Reply(text="a long answer that never comes whole, " * 4)
                events = RENDER_EVENTS[path](reply, body.get("model", "m"), 1)
                events = events[: FIRST_EVENTS.get(path, DEFAULT_FIRST_EVENTS)]
                if path == MESSAGES_PATH:  # (the input tokens an aborted call is billed)
                    kind, data = events[0]
                    start = json.loads(data)
                    start["message"]["usage"]["input_tokens"] = INPUT_TOKENS
                    events[0] = (kind, json.dumps(start))
                for event, data in events:
                    chunk = sse_bytes(event, data)
                    writer.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
                await writer.drain()
            held = Held(path, streamed, body, time.monotonic())
            with self.arrived:
                self.connections.append(held)
                self.arrived.notify_all()
            try:  # nothing more arrives: the read ends when the client closes
                await asyncio.wait_for(reader.read(), self.hold)
            except TimeoutError:
                pass
            held.closed_at = time.monotonic()
            held.closed.set()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


@contextmanager
def holding_provider(hold: float = 60.0) -> Iterator[HoldingProvider]:
    provider = HoldingProvider(hold)
    loop = asyncio.new_event_loop()
    started = threading.Event()
    server: list[asyncio.Server] = []

    async def serve() -> None:
        srv = await asyncio.start_server(provider.handle, "127.0.0.1", 0)
        provider.port = srv.sockets[0].getsockname()[1]
        server.append(srv)
        started.set()

    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    asyncio.run_coroutine_threadsafe(serve(), loop).result(10)
    assert started.wait(10)
    try:
        yield provider
    finally:

        async def shut() -> None:
            server[0].close()
            for task in asyncio.all_tasks():
                if task is not asyncio.current_task():
                    task.cancel()

        asyncio.run_coroutine_threadsafe(shut(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
