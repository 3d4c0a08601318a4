"""The queue executor against the API on a loopback port, with workers in-process (both
databases): it leases the calls of runs that name its queue, runs them from the registry
with heartbeats, answers through the lease, and stops cleanly; the inline executor leaves
a queue's calls to it."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from agentrun_client import (
    TERMINAL,
    AsyncQueueExecutor,
    Conflict,
    QueueExecutor,
    RunStatus,
    ToolCallContext,
    ToolRegistry,
)
from tests.client.conftest import Live, scripted


def registry(seen: list[ToolCallContext], delay: float = 0.0) -> ToolRegistry:
    tools = ToolRegistry()

    @tools.tool
    async def add(ctx: ToolCallContext, a: float = 1, b: float = 1) -> float:
        """Add two numbers."""
        seen.append(ctx)
        await asyncio.sleep(delay)
        return a + b

    @tools.tool
    def mul(ctx: ToolCallContext, a: float = 2, b: float = 3) -> float:
        """Multiply two numbers."""
        seen.append(ctx)
        return a * b

    return tools


async def test_the_async_executor_serves_a_runs_calls_and_stops(live: Live) -> None:
    seen: list[ToolCallContext] = []
    tools = registry(seen)
    async with live.async_client() as client:
        executor = AsyncQueueExecutor(client, tools, queue="math", concurrency=2, wait=5)
        serving = asyncio.ensure_future(executor.run())
        run = await client.runs.create(prompt="x", model=scripted(), tools=tools, tool_queue="math")
        done = await client.runs.wait(run.id, TERMINAL, timeout=30)
        executor.stop()
        await asyncio.wait_for(serving, 10)
    assert done.status == RunStatus.COMPLETED, done
    assert done.output == "Tool results: add: 2; mul: 6"
    assert executor.completed == 2 and executor.lost == 0
    assert {(c.run_id, c.tool_name, c.attempt) for c in seen} == {
        (run.id, "add", 1),
        (run.id, "mul", 1),
    }


def test_the_inline_executor_leaves_queued_calls_to_the_queue(live: Live) -> None:
    """`client.run` with a `tool_queue` executes nothing itself: a `QueueExecutor` in
    another thread does, and `run` returns the finished run."""
    inline: list[ToolCallContext] = []
    queued: list[ToolCallContext] = []
    with live.client() as client:
        executor = QueueExecutor(client, registry(queued), queue="q1", wait=5)
        thread = threading.Thread(target=executor.run, kwargs={"handle_signals": False})
        thread.start()
        try:
            run = client.run(
                "x", tools=registry(inline), model=scripted(), tool_queue="q1", timeout=30
            )
        finally:
            executor.stop()
            thread.join(10)
    assert not thread.is_alive()
    assert run.status == RunStatus.COMPLETED and run.output == "Tool results: add: 2; mul: 6"
    assert inline == [] and sorted(c.tool_name for c in queued) == ["add", "mul"]
    assert executor.completed == 2


async def test_heartbeats_keep_a_slow_call_leased(live: Live) -> None:
    """A tool that outlasts its lease more than twice over keeps it by heartbeats: a second
    executor of the same queue never gets the call, and it runs once. (A 2-s lease, beaten
    every 2/3 s: a beat may come 1.3 s late on a loaded machine and still hold it; a 1-s
    lease left 0.67 s, which a full suite's load once used up.)"""
    seen: list[ToolCallContext] = []
    slow = registry(seen, delay=5.0)
    async with live.async_client() as client:
        first = AsyncQueueExecutor(client, slow, queue="slow", lease_seconds=2, wait=2)
        second = AsyncQueueExecutor(client, slow, queue="slow", lease_seconds=2, wait=2)
        tasks = [asyncio.ensure_future(e.run()) for e in (first, second)]
        model = scripted({"tool_calls": [{"name": "add", "arguments": {}}]}, {"text": "ok"})
        run = await client.runs.create(prompt="x", model=model, tools=slow, tool_queue="slow")
        done = await client.runs.wait(run.id, TERMINAL, timeout=30)
        for e in (first, second):
            e.stop()
        await asyncio.wait_for(asyncio.gather(*tasks), 10)
        events = await client.runs.list_events(run.id)
    assert done.status == RunStatus.COMPLETED
    assert [c.attempt for c in seen] == [1]
    assert [e.type for e in events].count("tool_call.leased") == 1
    assert first.completed + second.completed == 1


def test_lease_heartbeat_and_complete_by_hand(live: Live) -> None:
    with live.client() as client:
        model = scripted({"tool_calls": [{"name": "add", "arguments": {}}]}, {"text": "ok"})
        run = client.runs.create(prompt="x", model=model, tools=registry([]), tool_queue="hand")
        deadline = time.monotonic() + 20
        calls = []
        while not calls and time.monotonic() < deadline:
            calls = client.queues.lease("hand", wait=5, lease_seconds=30, executor="me")
        (call,) = calls
        assert (call.run_id, call.name, call.attempt) == (run.id, "add", 1)
        extended = client.queues.heartbeat("hand", call.lease_token, lease_seconds=60)
        assert extended.lease_expires_at > call.lease_expires_at
        outcome = client.queues.complete("hand", call.lease_token, 2)
        assert outcome.resumed and outcome.accepted == [call.tool_call_id]
        with pytest.raises(Conflict) as lost:
            client.queues.heartbeat("hand", call.lease_token)
        assert lost.value.code == "tool-call-lease-lost"
        assert client.runs.wait(run.id, TERMINAL, timeout=20).output == "ok"
