"""What `_async.py` does that unasync cannot turn into its sync form: sleeping, executing
a registry's tools, serving a queue. `_sync_shims.py` holds the same names, synchronously;
the generated `_sync.py` imports them from there."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Iterable, Mapping
from typing import Any

from agentrun_client._approvals import Answer, OnApproval
from agentrun_client.models import ApprovalCall, ToolCall, ToolResult
from agentrun_client.queue import AsyncQueueExecutor
from agentrun_client.tools import ToolRegistry

__all__ = ["AsyncQueueExecutor", "AsyncToolRunner", "sleep"]


async def sleep(seconds: float) -> None:
    await asyncio.sleep(seconds)


class AsyncToolRunner:
    """Executes a registry's calls on the running event loop (for one `execute`)."""

    async def __aenter__(self) -> AsyncToolRunner:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        return None

    async def execute_all(
        self, tools: ToolRegistry, calls: Iterable[ToolCall | Mapping[str, Any]], *, run_id: str
    ) -> list[ToolResult]:
        return await tools.execute_all(calls, run_id=run_id)

    async def ask(self, on_approval: OnApproval, call: ApprovalCall) -> Answer:
        """`on_approval`'s answer for `call` (a sync or an async function)."""
        answer = on_approval(call)
        if inspect.isawaitable(answer):
            return await answer
        return answer
