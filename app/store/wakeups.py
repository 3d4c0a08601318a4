"""NOTIFYs sent after the commit they announce, coalesced per process.

A NOTIFY inside a transaction takes a cluster-wide lock at commit and holds it through the
commit's WAL flush, so every notifying commit waits for the one before it: under load,
creates and submissions queued on that lock four at a time. Listeners here only need to
know that something is due (a worker then claims whatever is), so each process keeps at
most one NOTIFY per channel in flight, and pokes made meanwhile are folded into the next.
A wake-up lost to a crash between commit and NOTIFY costs a listener's poll interval.
(A write that makes a run due while no other write of its process is in flight has no
lock queue to fear: the PostgreSQL backend then puts the workers' NOTIFY in its own
statement, a round trip sooner, and pokes nothing here.)
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable

import structlog

log = structlog.get_logger("agentrun.store")


class Wakeups:
    def __init__(self, send: Callable[[str, str], Awaitable[None]]) -> None:
        self._send = send
        self._pending: set[tuple[str, str]] = set()
        self._task: asyncio.Task[None] | None = None

    def poke(self, channel: str, payload: str = "") -> None:
        """Have `channel` notified (with `payload`) soon (after whatever send is in
        flight)."""
        self._pending.add((channel, payload))
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._drain())

    async def _drain(self) -> None:
        while self._pending:
            channels = sorted(self._pending)
            self._pending.clear()
            for channel, payload in channels:
                try:
                    await self._send(channel, payload)
                except Exception:  # listeners fall back to polling
                    log.warning("wake-up NOTIFY failed", channel=channel, exc_info=True)

    async def flush(self) -> None:
        """Wait until every poke so far has been sent (or has failed)."""
        while self._task is not None and not self._task.done():
            with contextlib.suppress(Exception):
                await asyncio.shield(self._task)
