"""The firing loop stops when cancelled, even as a wake-up arrives in the same moment: a
worker's stop cancels its loops just after waking them, and Python 3.11's
`asyncio.wait_for` returned normally then (CPython gh-86296), so the loop went on and the
worker's stop, then the event loop's close, waited for it for ever."""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import Any

from app.clock import SYSTEM_CLOCK
from app.schedules.loop import FiringLoop


class IdleFirer:
    """Nothing is ever due; counts the passes."""

    next_due: datetime | None = None

    def __init__(self) -> None:
        self.passes = 0

    async def pass_at(self, now: datetime) -> tuple[int, bool]:
        self.passes += 1
        return 0, False


async def test_a_cancel_that_meets_a_wake_up_stops_the_loop() -> None:
    firer = IdleFirer()
    loop = FiringLoop(firer, SYSTEM_CLOCK, poll=0.05, notifies=True)  # type: ignore[arg-type]
    woken = asyncio.Event()
    for _ in range(20):  # (each round: the race itself, at once)
        task: asyncio.Task[Any] = asyncio.create_task(loop.run(woken))
        while firer.passes == 0:
            await asyncio.sleep(0)
        await asyncio.sleep(0)  # (now waiting on `woken`)
        woken.set()
        task.cancel()
        done, _ = await asyncio.wait([task], timeout=2.0)
        assert done, "the loop went on after its cancel"
        assert task.cancelled()
        firer.passes = 0
        woken.clear()
