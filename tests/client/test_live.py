"""Live events, `wait` and the inline executor against the API on a loopback port, with
workers in-process (both databases)."""

from __future__ import annotations

import threading
import time

import httpx
import pytest

from agentrun_client import (
    TERMINAL,
    RunStatus,
    ToolCallContext,
    ToolRegistry,
    WaitTimeout,
)
from tests.client.conftest import Live, scripted
from tests.mocks.gate import Gate

ADD_MUL = [
    {"name": "add", "parameters": {"type": "object"}},
    {"name": "mul", "parameters": {"type": "object"}},
]


class CutFirstStream(httpx.HTTPTransport):
    """Cuts the first event stream after its first complete event (a dropped connection)."""

    def __init__(self) -> None:
        super().__init__()
        self.cut = False
        self.streams: list[httpx.Request] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = super().handle_request(request)
        if request.headers.get("accept") != "text/event-stream":
            return response
        self.streams.append(request)
        if self.cut:
            return response
        self.cut = True
        inner = response.stream
        assert isinstance(inner, httpx.SyncByteStream)

        class Cut(httpx.SyncByteStream):
            def __iter__(self):  # type: ignore[no-untyped-def]
                for chunk in inner:
                    yield chunk
                    if b"\r\n\r\n" in chunk or b"\n\n" in chunk:
                        raise httpx.RemoteProtocolError("connection cut")

            def close(self) -> None:
                inner.close()

        return httpx.Response(
            response.status_code, headers=response.headers, stream=Cut(), request=request
        )


def test_events_resume_after_a_dropped_connection_with_no_gap(live: Live) -> None:
    transport = CutFirstStream()
    with live.client() as client, live.client(transport=transport) as following:
        run = client.runs.create(prompt="x", model=scripted(), tools=ADD_MUL)
        seen = []
        for event in following.runs.events(run.id):
            seen.append(event)
            if event.type == "run.requires_action":
                calls = event.data["tool_calls"]
                results = [{"tool_call_id": c["id"], "output": "1"} for c in calls]
                client.runs.submit_tool_outputs(run.id, results)
        log = client.runs.list_events(run.id)
    assert [e.seq for e in seen] == [e.seq for e in log], "every event once, in order"
    assert seen[-1].type == "run.completed"
    assert len(transport.streams) >= 2
    assert transport.streams[1].headers["last-event-id"] == str(seen[0].seq)


def test_wait_for_a_status_that_does_not_last(
    live_sqlite: Live, monkeypatch: pytest.MonkeyPatch
) -> None:
    # (`wait` returns on the status the run is in: one that lasts less than the wake-up's
    # latency can pass unseen (SQLite's wake-ups are polls), hence a model call held at a
    # gate until the wait saw it: a delay of 300 ms passed unseen on a loaded machine.)
    gate = Gate(holds=1)
    gate.patch(monkeypatch)
    with live_sqlite.client() as client:
        run = client.runs.create(prompt="x", model=scripted(), tools=ADD_MUL)
        running = client.runs.wait(run.id, [RunStatus.RUNNING], timeout=30)
        assert running.status == RunStatus.RUNNING
        # (The run is running from its claim on; its call reaches the gate just after.)
        gate.wait_held(1)
        assert client.runs.get(run.id).status == RunStatus.RUNNING  # held: still running
        gate.release()
        assert client.runs.wait(run.id, "requires_action").status == RunStatus.REQUIRES_ACTION
        client.runs.cancel(run.id)


def test_wait_for_statuses_and_timeout(live: Live) -> None:
    with live.client() as client:
        run = client.runs.create(prompt="x", model=scripted(), tools=ADD_MUL)
        suspended = client.runs.wait(run.id, timeout=30)  # suspended or finished
        assert suspended.status == RunStatus.REQUIRES_ACTION
        assert [c.name for c in suspended.pending_tool_calls] == ["add", "mul"]
        with pytest.raises(WaitTimeout) as timed_out:
            client.runs.wait(run.id, "completed", timeout=0.3)
        assert timed_out.value.run is not None
        assert timed_out.value.run.status == RunStatus.REQUIRES_ACTION
        results = [{"tool_call_id": c.id, "output": "2"} for c in suspended.pending_tool_calls]
        client.runs.submit_tool_outputs(run.id, results)
        done = client.runs.wait(run.id, TERMINAL, timeout=30)
    assert done.status == RunStatus.COMPLETED and done.output is not None
    assert done.output.startswith("Tool results: add: 2")


async def test_async_wait_and_events(live: Live) -> None:
    async with live.async_client() as client:
        run = await client.runs.create(prompt="x", model=scripted(), tools=ADD_MUL)
        suspended = await client.runs.wait(run.id, timeout=30)
        assert suspended.status == RunStatus.REQUIRES_ACTION
        await client.runs.cancel(run.id)
        ended = await client.runs.wait(run.id, TERMINAL, timeout=30)
        assert ended.status == RunStatus.CANCELLED
        types = [e.type async for e in client.runs.events(run.id)]
    assert types[0] == "run.created" and types[-1] == "run.cancelled"


def registry_with_failures() -> ToolRegistry:
    registry = ToolRegistry()

    @registry.tool
    def add(a: float = 1, b: float = 2) -> float:
        return a + b

    @registry.tool
    async def boom(ctx: ToolCallContext) -> str:
        raise ValueError(f"nope for {ctx.call_id}")

    return registry


def test_inline_run_executes_tools_and_returns_the_finished_run(live: Live) -> None:
    with live.client() as client:
        run = client.run("go", tools=registry_with_failures(), model=scripted(), timeout=30)
    assert run.status == RunStatus.COMPLETED
    assert run.output == (
        "Tool results: add: 3; boom: Tool 'boom' failed: ValueError: nope for call_1_1"
    )


async def test_async_inline_run_over_several_rounds(
    live: Live, monkeypatch: pytest.MonkeyPatch
) -> None:
    registry = ToolRegistry()
    calls: list[tuple[float, float]] = []

    @registry.tool
    def add(a: float, b: float) -> float:
        calls.append((a, b))
        return a + b

    rounds = [{"tool_calls": [{"name": "add", "arguments": {"a": i, "b": i}}]} for i in range(3)]
    model = scripted(*rounds, {"text": "done"})
    async with live.async_client() as client:
        run = await client.run("go", tools=registry, model=model, max_turns=5, timeout=30)
        assert run.status == RunStatus.COMPLETED and run.output == "done"
        assert calls == [(0, 0), (1, 1), (2, 2)]
        Gate().patch(monkeypatch)  # (its model call never answers: no tool calls to run)
        slow = await client.runs.create(prompt="x", model=scripted(), tools=ADD_MUL)
        with pytest.raises(WaitTimeout):
            await client.execute(slow.id, registry, deadline=0.0)
        await client.runs.cancel(slow.id)


def test_a_timed_out_sync_tool_does_not_hold_client_run(live: Live) -> None:
    """The run completes at the tool's timeout, and so does `client.run`; the tool's
    thread runs on in the background (Python cannot stop it) until its function returns."""
    release, finished = threading.Event(), threading.Event()
    registry = ToolRegistry()

    @registry.tool(timeout=1)
    def stuck() -> str:
        release.wait(10)
        finished.set()
        return "late"

    try:
        with live.client() as client:
            started = time.monotonic()
            run = client.run("go", tools=registry, model=scripted(), timeout=30)
            took = time.monotonic() - started
        assert run.status == RunStatus.COMPLETED
        assert run.output == "Tool results: stuck: Tool 'stuck' timed out after 1 s"
        assert took < 5, f"client.run returned {took:.1f} s after it started"
        assert not finished.is_set(), "the thread was still running"
    finally:
        release.set()
    assert finished.wait(5), "and it ran to its end"
