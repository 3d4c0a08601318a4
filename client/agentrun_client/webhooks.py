"""The webhook executor: an ASGI app that serves a `ToolRegistry` to runs created with
`"webhook": {"url": ...}` (or the service's global `AGENTRUN_WEBHOOK_URL`).

```python
app = FastAPI()
app.mount("/agentrun", executor_app(registry, secret=os.environ["AGENTRUN_WEBHOOK_SECRET"]))
```

Each delivery's Standard Webhooks signature is checked (`webhook-id`, `webhook-timestamp`,
`webhook-signature`; a bad one is 401), and a `run.requires_action` delivery is
acknowledged at once (202) and executed in the background; the results go to the run's
`callback_url`, which needs no API key. Deliveries are at least once: a `webhook-id` seen
before is acknowledged and not executed again, and neither is a call (run, call id) already
executed by this app. Other events (`run.completed`, ...) are acknowledged and handed to
`on_event`, if given. Needs the `webhooks` extra (`standardwebhooks`).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import httpx

from agentrun_client._async import AsyncClient
from agentrun_client.errors import APIError, Conflict, NotFound
from agentrun_client.models import EventType, ToolCall
from agentrun_client.tools import ToolRegistry

log = logging.getLogger("agentrun_client.webhooks")

Scope = Mapping[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]
OnEvent = Callable[[dict[str, Any]], Awaitable[None]]

#: How many webhook ids and executed calls are remembered for deduplication.
REMEMBERED = 10_000
MAX_BODY_BYTES = 10_000_000


class _Seen:
    """A bounded set: the least recently added keys are forgotten first."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._keys: OrderedDict[str, None] = OrderedDict()

    def add(self, key: str) -> bool:
        """False when `key` was already there."""
        if key in self._keys:
            return False
        self._keys[key] = None
        while len(self._keys) > self.size:
            self._keys.popitem(last=False)
        return True


class WebhookExecutor:
    """The ASGI app `executor_app` returns. `drain()` waits for the executions in flight
    (call it on shutdown; a mounted app gets no lifespan events of its own)."""

    def __init__(
        self,
        registry: ToolRegistry,
        *,
        secret: str,
        client: AsyncClient | None = None,
        on_event: OnEvent | None = None,
    ) -> None:
        try:
            from standardwebhooks import Webhook
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise ImportError(
                "the webhook executor needs the extra: pip install 'agentrun-client[webhooks]'"
            ) from exc
        self.registry = registry
        self.verifier = Webhook(secret)
        self._client = client
        self._own_client: AsyncClient | None = None
        self.on_event = on_event
        self._webhook_ids = _Seen(REMEMBERED)
        self._calls = _Seen(REMEMBERED)
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def client(self) -> AsyncClient:
        if self._client is None:
            self._own_client = self._client = AsyncClient(api_key="")
        return self._client

    async def drain(self) -> None:
        """Until every background execution has finished."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    async def aclose(self) -> None:
        await self.drain()
        if self._own_client is not None:
            await self._own_client.aclose()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":  # served on its own rather than mounted
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        if scope["method"] != "POST":
            await _respond(send, 405, {"detail": "POST webhook deliveries here"}, allow="POST")
            return
        body = await _read(receive)
        if body is None:
            await _respond(send, 413, {"detail": "the delivery is too large"})
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        try:
            payload = self.verifier.verify(body, headers)
        except Exception as exc:  # missing/old headers, a wrong signature, malformed JSON
            log.warning("webhook refused: %s", exc)
            await _respond(send, 401, {"detail": "the webhook signature does not verify"})
            return
        if not isinstance(payload, dict):
            await _respond(send, 400, {"detail": "the delivery is not a JSON object"})
            return
        if not self._webhook_ids.add(headers["webhook-id"]):
            await _respond(send, 200, {"duplicate": True})
            return
        self._start(self._handle(payload))
        await _respond(send, 202, {"accepted": True})

    def _start(self, job: Awaitable[None]) -> None:
        async def guarded() -> None:
            try:
                await job
            except Exception:
                log.exception("webhook executor: handling a delivery failed")

        task = asyncio.ensure_future(guarded())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _handle(self, payload: dict[str, Any]) -> None:
        data = payload.get("data") or {}
        if self.on_event is not None:
            try:
                await self.on_event(payload)
            except Exception:  # the tools are executed all the same
                log.exception("webhook executor: on_event failed")
        if payload.get("type") != EventType.RUN_REQUIRES_ACTION:
            return
        callback_url = data.get("callback_url")
        run_id = str(data.get("run_id", ""))
        if not callback_url or "tool_calls" not in data:
            return  # a resolution: a person answers that
        calls = [ToolCall.model_validate(c) for c in data["tool_calls"]]
        mine = [c for c in calls if c.queue is None]  # (a queue's calls: its executors')
        fresh = [c for c in mine if self._calls.add(f"{run_id}/{c.id}")]
        if not fresh:
            return
        results = await self.registry.execute_all(fresh, run_id=run_id)
        try:
            await self.client.runs.submit_via_callback(callback_url, results)
        except (Conflict, NotFound) as exc:
            # answered by another executor, or the run moved on (cancelled, expired)
            log.info("webhook executor: results for %s not taken: %s", run_id, exc)
        except (APIError, httpx.HTTPError):
            log.exception("webhook executor: submitting results for %s failed", run_id)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.aclose()
                await send({"type": "lifespan.shutdown.complete"})
                return


async def _read(receive: Receive) -> bytes | None:
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return b"".join(chunks)
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


async def _respond(send: Send, status: int, body: dict[str, Any], **headers: str) -> None:
    raw = json.dumps(body).encode()
    extra = [(k.encode(), v.encode()) for k, v in headers.items()]
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), *extra],
        }
    )
    await send({"type": "http.response.body", "body": raw})


def executor_app(
    registry: ToolRegistry,
    *,
    secret: str,
    client: AsyncClient | None = None,
    on_event: OnEvent | None = None,
) -> WebhookExecutor:
    """An ASGI app that executes the registry's tools for signed `run.requires_action`
    webhooks. `secret` is the service's `AGENTRUN_WEBHOOK_SECRET` (`whsec_...`); `client`
    posts the results (its retry policy applies; it sends no API key to callback URLs);
    `on_event` receives every verified delivery's payload."""
    return WebhookExecutor(registry, secret=secret, client=client, on_event=on_event)
