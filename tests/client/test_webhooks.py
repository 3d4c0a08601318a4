"""The webhook executor: signed deliveries from the real worker end to end, and the ASGI
app's own rules (signature, acknowledgement, at-least-once deduplication)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import httpx
from standardwebhooks import Webhook

from agentrun_client import TERMINAL, AsyncClient, RunStatus, ToolCallContext, ToolRegistry
from agentrun_client.webhooks import WebhookExecutor, executor_app
from tests.client.conftest import SECRET, Live, scripted
from tests.mocks.uvicorn_thread import serve_in_thread


def registry() -> ToolRegistry:
    tools = ToolRegistry()

    @tools.tool
    async def add(a: float = 20, b: float = 22, ctx: ToolCallContext | None = None) -> float:
        """Add two numbers."""
        return a + b

    return tools


def test_runs_with_a_webhook_are_served_by_the_mounted_app(live: Live) -> None:
    tools = registry()
    executor = executor_app(tools, secret=SECRET)
    with serve_in_thread(executor) as hooks, live.client() as client:
        runs = [
            client.runs.create(prompt="x", model=scripted(), tools=tools, webhook=f"{hooks}/")
            for _ in range(3)
        ]
        done = [client.runs.wait(r.id, TERMINAL, timeout=30) for r in runs]
    assert [r.status for r in done] == [RunStatus.COMPLETED] * 3
    assert all(r.output == "Tool results: add: 42" for r in done)


class Callbacks:
    """Stands in for the service's callback route: records what the executor posts."""

    def __init__(self, status: int = 200) -> None:
        self.status = status
        self.posts: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.posts.append(request)
        if self.status != 200:
            problem = {"type": "/problems/callback-token-invalid", "title": "x", "detail": "x"}
            return httpx.Response(self.status, json=problem)
        now = datetime.now(UTC).isoformat()
        run = {"id": "run_1", "status": "queued", "turn": 1, "max_turns": 4}
        run |= {"created_at": now, "updated_at": now}
        return httpx.Response(200, json={"run": run, "accepted": ["call_1_0"], "resumed": True})

    def results(self) -> list[list[dict[str, Any]]]:
        return [json.loads(r.content)["results"] for r in self.posts]


def delivery(webhook_id: str, event: str = "run.requires_action") -> tuple[bytes, dict[str, str]]:
    data: dict[str, Any] = {"run_id": "run_1", "status": "requires_action"}
    if event == "run.requires_action":
        data["tool_calls"] = [{"id": "call_1_0", "name": "add", "arguments": {"a": 1, "b": 2}}]
        data["callback_url"] = "http://service.test/v1/callbacks/tok/tool-results"
    body = json.dumps({"type": event, "timestamp": "2026-01-01T00:00:00Z", "data": data})
    now = datetime.now(UTC)
    headers = {
        "webhook-id": webhook_id,
        "webhook-timestamp": str(int(now.timestamp())),
        "webhook-signature": Webhook(SECRET).sign(webhook_id, now, body),
        "content-type": "application/json",
    }
    return body.encode(), headers


def executor_with(callbacks: Callbacks, **kw: Any) -> WebhookExecutor:
    client = AsyncClient(
        "http://service.test", "secret-key", transport=httpx.MockTransport(callbacks)
    )
    return executor_app(registry(), secret=SECRET, client=client, **kw)


async def test_acknowledges_then_answers_once_per_delivery_and_call() -> None:
    callbacks = Callbacks()
    executor = executor_with(callbacks)
    transport = httpx.ASGITransport(app=executor)
    async with httpx.AsyncClient(transport=transport, base_url="http://hooks") as hooks:
        body, headers = delivery("msg_run_1_4")
        first = await hooks.post("/", content=body, headers=headers)
        again = await hooks.post("/", content=body, headers=headers)
        # the same event to a second endpoint (the global webhook URL): same calls
        body_g, headers_g = delivery("msg_run_1_4_g")
        copy = await hooks.post("/", content=body_g, headers=headers_g)
        await executor.drain()
    assert (first.status_code, again.status_code, copy.status_code) == (202, 200, 202)
    assert again.json() == {"duplicate": True}
    assert callbacks.results() == [[{"tool_call_id": "call_1_0", "output": 3.0, "is_error": False}]]
    [post] = callbacks.posts
    assert str(post.url) == "http://service.test/v1/callbacks/tok/tool-results"
    assert "authorization" not in post.headers, "the API key never goes to a callback URL"


async def test_refuses_what_is_not_a_signed_delivery() -> None:
    callbacks = Callbacks()
    executor = executor_with(callbacks)
    transport = httpx.ASGITransport(app=executor)
    body, headers = delivery("msg_1")
    async with httpx.AsyncClient(transport=transport, base_url="http://hooks") as hooks:
        tampered = await hooks.post("/", content=body.replace(b"1", b"7"), headers=headers)
        unsigned = await hooks.post("/", content=body, headers={"content-type": "application/json"})
        wrong = {**headers, "webhook-signature": "v1,AAAA"}
        forged = await hooks.post("/", content=body, headers=wrong)
        method = await hooks.get("/")
        await executor.drain()
    assert [r.status_code for r in (tampered, unsigned, forged)] == [401, 401, 401]
    assert method.status_code == 405 and method.headers["allow"] == "POST"
    assert callbacks.posts == []


async def test_other_events_go_to_on_event_and_a_stale_callback_is_not_an_error() -> None:
    events: list[dict[str, Any]] = []

    async def on_event(payload: dict[str, Any]) -> None:
        events.append(payload)

    callbacks = Callbacks(status=404)
    executor = executor_with(callbacks, on_event=on_event)
    transport = httpx.ASGITransport(app=executor)
    async with httpx.AsyncClient(transport=transport, base_url="http://hooks") as hooks:
        body, headers = delivery("msg_done", "run.completed")
        done = await hooks.post("/", content=body, headers=headers)
        body, headers = delivery("msg_action")
        action = await hooks.post("/", content=body, headers=headers)
        await executor.drain()
    assert (done.status_code, action.status_code) == (202, 202)
    assert [e["type"] for e in events] == ["run.completed", "run.requires_action"]
    assert len(callbacks.posts) == 1, "posted once; the 404 (run moved on) is not retried"
