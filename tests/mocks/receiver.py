"""A webhook receiver on 127.0.0.1 that verifies Standard Webhooks signatures with the
`standardwebhooks` package itself, can fail on purpose, and records what arrived."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from standardwebhooks import Webhook
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from tests.mocks.uvicorn_thread import serve_in_thread

SECRET = "whsec_" + "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"


@dataclass
class Received:
    webhook_id: str
    payload: dict[str, Any]
    headers: dict[str, str]
    body: bytes


@dataclass
class Receiver:
    url: str = ""
    delivered: list[Received] = field(default_factory=list)
    attempts: list[str] = field(default_factory=list)  # webhook-id of every request
    fail_next: int = 0  # answer 500 to this many requests
    status: int = 200
    on_event: Callable[[dict[str, Any]], None] | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)

    def of_type(self, kind: str) -> list[Received]:
        with self.lock:
            return [r for r in self.delivered if r.payload["type"] == kind]


@contextmanager
def webhook_receiver(secret: str = SECRET) -> Iterator[Receiver]:
    receiver = Receiver()
    verifier = Webhook(secret)

    async def hook(request: Request) -> Response:
        body = await request.body()
        headers = dict(request.headers)
        with receiver.lock:
            receiver.attempts.append(headers.get("webhook-id", ""))
            if receiver.fail_next > 0:
                receiver.fail_next -= 1
                return JSONResponse({"error": "down"}, status_code=500)
        try:
            payload = verifier.verify(body, headers)
        except Exception as exc:  # a bad signature is the sender's bug: make it visible
            return JSONResponse({"error": f"signature: {exc}"}, status_code=400)
        with receiver.lock:
            receiver.delivered.append(Received(headers["webhook-id"], payload, headers, body))
        if receiver.on_event is not None:
            receiver.on_event(payload)
        return Response(status_code=receiver.status)

    async def redirect(request: Request) -> Response:
        return Response(status_code=302, headers={"location": receiver.url})

    app = Starlette(
        routes=[Route("/hook", hook, methods=["POST"]), Route("/moved", redirect, methods=["POST"])]
    )
    with serve_in_thread(app) as base:
        receiver.url = f"{base}/hook"
        yield receiver
