"""An in-process mock of the three provider wires, served by uvicorn on 127.0.0.1.

One ASGI app serves `POST /v1/chat/completions`, `/v1/responses` and `/v1/messages`, and
Chat Completions as an Azure OpenAI deployment does
(`/openai/deployments/{model}/chat/completions?api-version=...`).
Tests script it with a FIFO queue of `Reply`s (answers or faults); every received request
is recorded (path, headers, JSON body). The server runs in a background thread with its
own event loop, so it works with any test event loop.

A test that needs a model call still in flight when it looks `hold()`s the server: the
requests that arrive from then on are recorded and answered only once the test
`release()`s them (`wait_held` waits until N are held), whatever the load, where a
`delay` could run out before the test looks; `hold(only)` holds only the requests whose
body `only` accepts (one run's call among others that go on). Processes reach it over the
real wire (`env()`); a `responder` answers from each request when the script is empty.

Fixtures: `mock_server` (session: starts the server once) and `mock` (per test: the same
server with an empty script, no recorded requests, nothing held).
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from tests.mocks.replies import (
    CHAT_PATH,
    MESSAGES_PATH,
    RENDER_BODY,
    RENDER_EVENTS,
    RESPONSES_PATH,
    Reply,
    error_body,
    sse_bytes,
)

#: An Azure OpenAI deployment's Chat Completions (the deployment names the model).
AZURE_CHAT_PATH = "/openai/deployments/{deployment}/chat/completions"
#: How long a held request waits at most: a test that forgot to release fails, not hangs.
HOLD_SECONDS = 120.0

#: Answers a request (its JSON body) when the script is empty.
Responder = Callable[[Any], Reply]


def wire_env(origin: str) -> dict[str, str]:
    """The environment that points a deployment's OpenAI and Anthropic wires at `origin`."""
    return {
        "OPENAI_API_KEY": "sk-test",
        "OPENAI_BASE_URL": origin + "/v1",
        "ANTHROPIC_API_KEY": "ak-test",
        "ANTHROPIC_BASE_URL": origin,
    }


@dataclass(frozen=True)
class RecordedRequest:
    path: str
    headers: dict[str, str]
    body: Any
    query: str = ""


class MockProviderServer:
    """Scriptable state shared by the ASGI app (server thread) and the tests."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._script: deque[Reply] = deque()
        self.requests: list[RecordedRequest] = []
        self._seq = 0
        self.responder: Responder | None = None
        self._holding = False
        self._hold_only: Callable[[Any], bool] | None = None
        self._held = 0  # requests held since `hold()`
        self._arrived = threading.Condition(self._lock)
        self._released = threading.Event()
        self.host = "127.0.0.1"
        self.port = 0
        self.app = Starlette(
            routes=[
                Route(path, self._handle, methods=["POST"])
                for path in (CHAT_PATH, RESPONSES_PATH, MESSAGES_PATH, AZURE_CHAT_PATH)
            ]
        )
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    # --- scripting ----------------------------------------------------------------------

    def script(self, *replies: Reply) -> None:
        with self._lock:
            self._script.extend(replies)

    def reset(self) -> None:
        self.release()
        with self._lock:
            self._script.clear()
            self.requests.clear()
            self._seq = 0
            self.responder = None

    @property
    def remaining(self) -> int:
        with self._lock:
            return len(self._script)

    # --- holding ------------------------------------------------------------------------

    def hold(self, only: Callable[[Any], bool] | None = None) -> None:
        """Hold every request that arrives from now on (`only`: those whose JSON body it
        accepts; the others are answered at once), until `release()`."""
        with self._lock:
            self._released = threading.Event()
            self._holding = True
            self._hold_only = only
            self._held = 0

    def wait_held(self, count: int, timeout: float = 30.0) -> None:
        """Once `count` requests are held (blocking: from a thread, or `asyncio.to_thread`)."""
        with self._arrived:
            if not self._arrived.wait_for(lambda: self._held >= count, timeout):
                raise AssertionError(f"only {self._held} of {count} model calls came to be held")

    @property
    def held(self) -> int:
        with self._lock:
            return self._held

    def release(self) -> None:
        """Answer every held request, and answer at once those that arrive from now on."""
        with self._lock:
            self._holding = False
            self._hold_only = None
            self._released.set()

    async def _wait_released(self, released: threading.Event) -> None:
        deadline = time.monotonic() + HOLD_SECONDS
        while not released.is_set():
            if time.monotonic() > deadline:
                raise AssertionError("a request held at the mock was never released")
            await asyncio.sleep(0.01)

    def env(self) -> dict[str, str]:
        return wire_env(self.origin)

    @property
    def origin(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def openai_base_url(self) -> str:
        return self.origin + "/v1"

    @property
    def anthropic_base_url(self) -> str:
        return self.origin

    # --- ASGI ---------------------------------------------------------------------------

    async def _handle(self, request: Request) -> Response:
        raw = await request.body()
        try:
            body = json.loads(raw)
        except json.JSONDecodeError:
            body = raw.decode("utf-8", "replace")
        received = request.url.path
        path = CHAT_PATH if received.endswith("/chat/completions") else received
        with self._lock:
            self.requests.append(
                RecordedRequest(received, dict(request.headers), body, request.url.query)
            )
            self._seq += 1
            seq = self._seq
            reply = self._script.popleft() if self._script else None
            responder = self.responder
            only = self._hold_only
            held = self._holding and (only is None or only(body))
            released = self._released if held else None
            if released is not None:
                self._held += 1
                self._arrived.notify_all()
        if reply is None and responder is not None:
            reply = responder(body)
        if reply is None:
            reply = Reply.fault(500, "mock script exhausted")
        if released is not None:
            await self._wait_released(released)
        if reply.delay:
            await asyncio.sleep(reply.delay)
        request_id = {"x-request-id": f"req_mock{seq}", "request-id": f"req_mock{seq}"}
        headers = {**request_id, **reply.headers}
        if reply.raw_body is not None:  # verbatim, with the reply's status (errors too)
            return Response(
                reply.raw_body,
                status_code=reply.status,
                media_type="application/json",
                headers=headers,
            )
        if reply.status >= 400:
            return JSONResponse(error_body(path, reply), status_code=reply.status, headers=headers)
        model = body.get("model", "mock-model") if isinstance(body, dict) else "mock-model"
        model = reply.model or model
        if isinstance(body, dict) and body.get("stream"):
            events = RENDER_EVENTS[path](reply, model, seq)
            if reply.stop_after_events is not None:
                events = events[: reply.stop_after_events]
            return StreamingResponse(
                self._stream(events, reply.chunk_delay),
                media_type="text/event-stream",
                headers=headers,
            )
        return JSONResponse(RENDER_BODY[path](reply, model, seq), headers=headers)

    async def _stream(
        self, events: list[tuple[str | None, str]], delay: float
    ) -> AsyncIterator[bytes]:
        for event, data in events:
            if delay:
                await asyncio.sleep(delay)
            yield sse_bytes(event, data)

    # --- lifecycle ----------------------------------------------------------------------

    def start(self) -> None:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self.host, 0))
        self.port = sock.getsockname()[1]
        config = uvicorn.Config(
            self.app,
            log_level="warning",
            lifespan="off",
            timeout_graceful_shutdown=1,
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [sock]}, daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("mock provider server did not start")
            time.sleep(0.01)

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=5)


@pytest.fixture(scope="session")
def mock_server() -> Iterator[MockProviderServer]:
    server = MockProviderServer()
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def mock(mock_server: MockProviderServer) -> Iterator[MockProviderServer]:
    mock_server.reset()
    yield mock_server
    mock_server.reset()
