"""Each worker's firing loop (a `Background` of the kernel's hooks): fire what is due,
then sleep until the next due tick, a schedule's change (NOTIFY) or the poll."""

from __future__ import annotations

import asyncio
import contextlib

import structlog

from app.clock import Clock
from app.schedules.firing import Firer

log = structlog.get_logger("agentrun.schedules")

#: The NOTIFY channel a schedule's write wakes the loops on.
SCHEDULES_CHANNEL = "agentrun_schedules"
#: The longest sleep when NOTIFY wakes the loop (a missed wake-up costs at most this).
LONGEST_SLEEP = 30.0
#: The longest without NOTIFY.
UNNOTIFIED_SLEEP = 1.0
#: The shortest: a due schedule another worker holds is looked at again after it.
SHORTEST_SLEEP = 0.2


class FiringLoop:
    def __init__(self, firer: Firer, clock: Clock, poll: float, notifies: bool) -> None:
        self.firer = firer
        self.clock = clock
        # Without NOTIFY (SQLite) a new schedule is found by looking again: at most a
        # second late (its first tick is at least a minute boundary away), not a busy poll.
        self.longest = LONGEST_SLEEP if notifies else max(poll, UNNOTIFIED_SLEEP)

    async def run(self, woken: asyncio.Event) -> None:
        """Each pass is one read when nothing is due (`Firer.pass_at`); after a pass that
        fired, the next looks again at once (more may be due)."""
        while True:
            delay = self.longest
            try:
                _, busy = await self.firer.pass_at(self.clock.now())
                nxt = self.firer.next_due
                if busy:
                    delay = 0.0
                elif nxt is not None:
                    delay = (nxt - self.clock.now()).total_seconds()
            except Exception:
                log.exception("schedules loop failed")
            delay = min(self.longest, max(SHORTEST_SLEEP, delay))
            with contextlib.suppress(TimeoutError):  # (not wait_for: see app.worker.worker)
                async with asyncio.timeout(delay):
                    await woken.wait()
            woken.clear()

    async def aclose(self) -> None:
        """(It holds nothing.)"""
