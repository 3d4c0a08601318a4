"""The sync twins of `_async_shims.py`, for the generated `_sync.py`: sleeping blocks, a
registry's tools run on an event loop of their own, and a queue is served by the async
executor on an event loop of its own."""

from __future__ import annotations

import asyncio
import inspect
import signal
import threading
import time
from collections.abc import Iterable, Mapping
from typing import Any, Protocol

import httpx

from agentrun_client._approvals import Answer, OnApproval
from agentrun_client._async import AsyncClient
from agentrun_client._base import RetryPolicy
from agentrun_client.models import ApprovalCall, ToolCall, ToolResult
from agentrun_client.queue import AsyncQueueExecutor
from agentrun_client.tools import ToolRegistry

__all__ = ["QueueExecutor", "SyncToolRunner", "sleep"]


def sleep(seconds: float) -> None:
    time.sleep(seconds)


class SyncToolRunner:
    """Executes a registry's calls on an event loop of its own, open for one `execute` (so
    `Client.run` works wherever no loop is running). Sync tools run in daemon threads
    (`ToolRegistry`): one that timed out does not hold this loop's close, nor `Client.run`."""

    def __init__(self) -> None:
        self._runner = asyncio.Runner()

    def __enter__(self) -> SyncToolRunner:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._runner.close()

    def execute_all(
        self, tools: ToolRegistry, calls: Iterable[ToolCall | Mapping[str, Any]], *, run_id: str
    ) -> list[ToolResult]:
        return self._runner.run(tools.execute_all(calls, run_id=run_id))

    def ask(self, on_approval: OnApproval, call: ApprovalCall) -> Answer:
        """`on_approval`'s answer for `call` (an async function's, on this runner's loop)."""
        answer = on_approval(call)
        if inspect.iscoroutine(answer):
            return self._runner.run(answer)  # type: ignore[no-any-return]
        assert not inspect.isawaitable(answer), "on_approval: a coroutine or an answer"
        return answer


class ClientSettings(Protocol):
    """A `Client`, as far as a `QueueExecutor` uses it."""

    base_url: str
    timeout: httpx.Timeout
    retry: RetryPolicy

    @property
    def http(self) -> httpx.Client: ...


class QueueExecutor:
    """`AsyncQueueExecutor` for synchronous programs: `run()` blocks until `stop()` (from
    another thread) or, in the main thread, SIGTERM/SIGINT. It talks to the API through
    an `AsyncClient` with the `Client`'s base URL, headers, timeout and retry policy."""

    def __init__(
        self, client: ClientSettings, registry: ToolRegistry, *, queue: str, **options: Any
    ):
        self.client = client
        self.registry = registry
        self.queue = queue
        self.options = options
        self._executor: AsyncQueueExecutor | None = None
        self._stop_requested = False
        self._lock = threading.Lock()

    @property
    def completed(self) -> int:
        return self._executor.completed if self._executor else 0

    def stop(self) -> None:
        with self._lock:
            self._stop_requested = True
            if self._executor is not None:
                self._executor.stop()

    def run(self, *, handle_signals: bool = True) -> None:
        async def main() -> None:
            headers: Mapping[str, str] = dict(self.client.http.headers)
            async with AsyncClient(
                self.client.base_url,
                api_key="",  # (the Client's Authorization header is in `headers`)
                headers=headers,
                timeout=self.client.timeout,
                retry=self.client.retry,
            ) as client:
                executor = AsyncQueueExecutor(
                    client, self.registry, queue=self.queue, **self.options
                )
                with self._lock:
                    self._executor = executor
                    if self._stop_requested:
                        executor.stop()
                if handle_signals and threading.current_thread() is threading.main_thread():
                    loop = asyncio.get_running_loop()
                    for sig in (signal.SIGTERM, signal.SIGINT):
                        loop.add_signal_handler(sig, executor.stop)
                await executor.run()

        asyncio.run(main())
