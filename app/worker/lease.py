"""A claim and its lease: what a worker holds while it drives a run.

The lease is kept alive while a model call runs (a heartbeat every third of it); a
heartbeat the fencing token refuses means someone else won the run (cancel, the
reaper), so the call is abandoned with `LeaseLost` and nothing the claim holds is
written. A stop signal (`app.worker.stops`: a NOTIFY, or the SQLite poll) asks for that
heartbeat at once, so a cancel closes the model connection within a second rather than
at the next heartbeat.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, TypeVar

from app.clock import Clock
from app.core.stored import Loaded
from app.store.run_records import NewEvent, RunRecord
from app.store.runs import RunStore
from app.worker.stops import Stops

R = TypeVar("R")


class LeaseLost(Exception):
    """Our lease was taken over (cancelled, reaped); nothing we hold may be written."""


@dataclass(slots=True)
class Claim:
    record: RunRecord
    version: int
    events: list[NewEvent]
    # Asked at the final write: should that statement also claim the slot's next run?
    chain: Callable[[], bool] | None = None
    next: RunRecord | None = None  # the run that write claimed, owned by the caller
    looked: bool = False  # whether that write looked for a next run at all
    loaded: Loaded | None = None  # the run as loaded (app.core.stored), for its snapshot
    honoured: bool = False  # whether a model call used the run's shared-limit reservation
    # Whether a hook's call failed for good: the turn's call counts its own attempts (the
    # record's counters zeroed; the claim's last write zeroes the stored ones).
    fresh_retries: bool = False


class Lease:
    """Heartbeats of one worker's claims."""

    def __init__(
        self,
        store: RunStore,
        lease_seconds: float,
        worker_id: str,
        clock: Clock,
        stops: Stops | None = None,
    ) -> None:
        self.store = store
        self.lease_seconds = lease_seconds
        self.worker_id = worker_id
        self.clock = clock
        self.stops = stops or Stops()

    async def hold(self, claim: Claim, call: Awaitable[R]) -> R:
        """Await `call`, extending the claim's lease meanwhile (a heartbeat every third
        of it, and at once on a stop signal); `LeaseLost` when a heartbeat is refused,
        once the call is cancelled and has unwound (its connection closed)."""
        task: asyncio.Future[R] = asyncio.ensure_future(call)
        interval = self.lease_seconds / 3
        with self.stops.watch(claim.record.id, claim.version) as watch:
            try:
                beat_at = self.clock.monotonic() + interval
                while True:
                    timeout = max(0.0, beat_at - self.clock.monotonic())
                    waiting: set[asyncio.Future[Any]] = {task, watch.signalled}
                    done, _ = await asyncio.wait(
                        waiting, timeout=timeout, return_when=asyncio.FIRST_COMPLETED
                    )
                    if task in done:
                        return task.result()
                    if not watch.signalled.done() and self.clock.monotonic() < beat_at:
                        continue
                    watch.rearm()
                    now = self.clock.now()
                    until = now + timedelta(seconds=self.lease_seconds)
                    if not await self.store.heartbeat(
                        claim.record.id, claim.version, self.worker_id, until, now
                    ):
                        task.cancel()
                        await asyncio.wait({task}, timeout=self.lease_seconds)
                        if task.done() and not task.cancelled():
                            task.exception()  # (retrieved, and dropped)
                        raise LeaseLost()
                    beat_at = self.clock.monotonic() + interval
            finally:
                if not task.done():
                    task.cancel()
