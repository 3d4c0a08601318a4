"""The queue executor: serve a `ToolRegistry` to the runs that name a tool-call queue, from a
process with no public address (docs/queue.md).

It long-polls `POST /v1/queues/{queue}/lease` for as many calls as it has free slots,
runs each through the registry while a heartbeat extends its lease, and answers through
the lease. A call is executed at least once: when an executor dies mid-call its lease
lapses and another executor gets the call again, with the same `tool_call_id` (in the
function's `ToolCallContext.call_id`, with `attempt` counting the leases), so make side
effects idempotent on it. `stop()` stops leasing; calls in flight finish (within `grace`
seconds) and are answered.

`AsyncQueueExecutor` is here; `QueueExecutor`, for synchronous programs, runs it on an event
loop of its own (`_sync_shims.py`); `client.queues` (`AsyncQueues`, `Queues`) are the bare
calls, made by the builders below.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
from typing import Any, Protocol

import httpx

from agentrun_client._base import Call
from agentrun_client.errors import (
    APIConnectionError,
    APIError,
    Conflict,
    InvalidInput,
    NotFound,
    RateLimited,
    ServerError,
    Unavailable,
)
from agentrun_client.models import LeasedCall, LeaseExtended, SubmitOutcome
from agentrun_client.tools import ToolRegistry

log = logging.getLogger("agentrun_client.queue")

#: Failures that pass (the API restarting, the database away): retried after a pause.
#: Others (a wrong key, a refused request) stop the executor.
TRANSIENT = (APIConnectionError, Unavailable, RateLimited, ServerError, httpx.HTTPError)
#: Seconds a lease request may take beyond its `wait` before the client gives up on it.
LEASE_SLACK = 30.0


def default_executor_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def _path(queue: str, suffix: str) -> str:
    if not queue or queue[0] in "._-" or not all(c.isalnum() or c in "._-" for c in queue):
        raise InvalidInput(f"not a queue name: {queue!r}")
    return f"/v1/queues/{queue}{suffix}"


def lease_call(
    queue: str, limit: int, wait: float, lease_seconds: float, executor: str | None
) -> Call:
    body: dict[str, Any] = {"limit": limit, "wait": wait, "lease_seconds": lease_seconds}
    if executor:
        body["executor"] = executor
    # Not retried once sent: a lost answer's calls would sit leased until they lapse.
    timeout = httpx.Timeout(wait + LEASE_SLACK, connect=10.0)
    return Call("POST", _path(queue, "/lease"), json=body, timeout=timeout)


def heartbeat_call(queue: str, token: str, lease_seconds: float) -> Call:
    body = {"lease_seconds": lease_seconds}
    return Call("POST", _path(queue, f"/leases/{token}/heartbeat"), json=body, safe=True)


def result_call(queue: str, token: str, output: Any, is_error: bool) -> Call:
    body = {"output": output, "is_error": is_error}
    return Call("POST", _path(queue, f"/leases/{token}/result"), json=body, safe=True)


class QueueCalls(Protocol):
    """What an executor asks of `client.queues` (`AsyncQueues`)."""

    async def lease(
        self, queue: str, *, limit: int, wait: float, lease_seconds: float, executor: str | None
    ) -> list[LeasedCall]: ...

    async def heartbeat(
        self, queue: str, lease_token: str, *, lease_seconds: float
    ) -> LeaseExtended: ...

    async def complete(
        self, queue: str, lease_token: str, output: Any, *, is_error: bool
    ) -> SubmitOutcome: ...


class QueueClient(Protocol):
    """An `AsyncClient`, as far as an executor uses it."""

    @property
    def queues(self) -> QueueCalls: ...


class AsyncQueueExecutor:
    """Serves `registry` to the calls of `queue`, `concurrency` at a time, until `stop()`.

    `lease_seconds` is how long a call stays leased without a heartbeat (heartbeats go
    every third of it while the tool runs): the time another executor waits before it
    gets the call of an executor that died. `wait` is each long poll's length.
    """

    def __init__(
        self,
        client: QueueClient,
        registry: ToolRegistry,
        *,
        queue: str,
        concurrency: int = 4,
        lease_seconds: float = 60.0,
        wait: float = 30.0,
        grace: float = 30.0,
        executor: str | None = None,
    ) -> None:
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        _path(queue, "")  # (checks the name)
        self.client = client
        self.registry = registry
        self.queue = queue
        self.concurrency = concurrency
        self.lease_seconds = lease_seconds
        self.wait = wait
        self.grace = grace
        self.executor = executor or default_executor_id()
        self.completed = 0  # calls answered
        self.lost = 0  # calls whose lease moved on before they were answered
        self._stopping: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop_requested = False

    def stop(self) -> None:
        """Stop leasing (from any thread); calls in flight are finished and answered."""
        self._stop_requested = True
        loop, stopping = self._loop, self._stopping
        if loop is not None and stopping is not None and not loop.is_closed():
            loop.call_soon_threadsafe(stopping.set)

    async def run(self) -> None:
        """Lease, execute and answer until `stop()`."""
        self._loop = asyncio.get_running_loop()
        self._stopping = stopping = asyncio.Event()
        if self._stop_requested:
            stopping.set()
        tasks: set[asyncio.Task[None]] = set()
        stopped = asyncio.ensure_future(stopping.wait())
        failures = 0
        try:
            while not stopping.is_set():
                free = self.concurrency - len(tasks)
                if free <= 0:
                    await asyncio.wait({stopped, *tasks}, return_when=asyncio.FIRST_COMPLETED)
                    continue
                poll = asyncio.ensure_future(
                    self.client.queues.lease(
                        self.queue,
                        limit=free,
                        wait=self.wait,
                        lease_seconds=self.lease_seconds,
                        executor=self.executor,
                    )
                )
                await asyncio.wait({poll, stopped}, return_when=asyncio.FIRST_COMPLETED)
                if not poll.done():  # stopping: calls it may have leased lapse and return
                    poll.cancel()
                    with contextlib.suppress(asyncio.CancelledError, Exception):
                        await poll
                    break
                try:
                    calls = poll.result()
                except TRANSIENT as exc:
                    failures += 1
                    pause = min(30.0, 0.25 * 2 ** min(failures, 7))
                    log.warning(
                        "leasing from %s failed (%s); again in %.1f s", self.queue, exc, pause
                    )
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(asyncio.shield(stopped), pause)
                    continue
                failures = 0
                for call in calls:
                    task = asyncio.ensure_future(self._serve(call))
                    tasks.add(task)
                    task.add_done_callback(tasks.discard)
        finally:
            stopped.cancel()
            if tasks:
                _, late = await asyncio.wait(set(tasks), timeout=self.grace)
                for task in late:  # past the grace period: their leases lapse
                    task.cancel()
                await asyncio.gather(*late, return_exceptions=True)

    async def _serve(self, call: LeasedCall) -> None:
        lost = asyncio.Event()
        work = asyncio.ensure_future(
            self.registry.execute(call.as_tool_call(), run_id=call.run_id, attempt=call.attempt)
        )
        beats = asyncio.ensure_future(self._heartbeats(call, lost, work))
        try:
            result = await work
        except asyncio.CancelledError:
            if not lost.is_set():
                raise
            self.lost += 1
            log.info("lease of %s/%s lost: not executed to the end", call.run_id, call.tool_call_id)
            return
        finally:
            beats.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await beats
        try:
            await self.client.queues.complete(
                self.queue, call.lease_token, result.output, is_error=result.is_error
            )
        except (Conflict, NotFound) as exc:  # the lease moved on, or the run did
            self.lost += 1
            log.info("result of %s/%s not taken: %s", call.run_id, call.tool_call_id, exc)
            return
        except (APIError, *TRANSIENT):  # (retried already): its lease lapses
            log.exception("answering %s/%s failed", call.run_id, call.tool_call_id)
            return
        self.completed += 1

    async def _heartbeats(
        self, call: LeasedCall, lost: asyncio.Event, work: asyncio.Future[Any]
    ) -> None:
        """Extend the lease every third of its length; a lease that moved on (another
        executor has the call, or the run stopped waiting) cancels the work."""
        while True:
            await asyncio.sleep(self.lease_seconds / 3)
            try:
                await self.client.queues.heartbeat(
                    self.queue, call.lease_token, lease_seconds=self.lease_seconds
                )
            except (Conflict, NotFound):
                lost.set()
                work.cancel()
                return
            except (APIError, *TRANSIENT) as exc:  # next time, then
                log.warning("heartbeat of %s/%s failed: %s", call.run_id, call.tool_call_id, exc)
