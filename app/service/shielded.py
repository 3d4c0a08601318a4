"""Store calls that a cancellation of their caller does not cut off.

A request whose client goes away (a long poll, a live stream, a wait) is cancelled where
it awaits; a store call cut off inside its transaction can leave SQLite's write lock held
by a connection the pool is still closing (every SQLite transaction takes it, reads
too), and every later statement then waits out the busy timeout.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


async def whole(work: Coroutine[Any, Any, T]) -> T:
    """`work`, which a cancellation of the caller does not interrupt: the caller is
    cancelled at once; the work completes and its result is dropped (what a lease took
    lapses and is offered again; a read is read again by the next caller)."""
    task = asyncio.ensure_future(work)
    task.add_done_callback(_dropped)
    return await asyncio.shield(task)


def _dropped(task: asyncio.Task[Any]) -> None:
    if not task.cancelled():
        task.exception()  # (retrieved: a failure nobody awaits is not reported as lost)
