"""A run's events with its descendants' (`GET /v1/runs/{id}/events?tree=true`): a page of
them, or a live stream that a child started meanwhile joins, until every run of the tree
has ended.

A tree has no single `seq` to resume from, so its position is a cursor: each run's
high-water mark, `{run_id: seq}` as JSON, base64url without padding. Each run's events
come in `seq` order (across runs as they arrive, or by `created_at` on a page), so "every
event of each run after its mark" continues with no gap and no duplicate. A run the cursor
does not name is read from its first event. Nothing is stored: the cursor grows by some
40 characters a run (a 100-run tree: about 4 kB; the API takes up to 16 kB, some 400).

The stream follows each run of the tree on its own `RunFeed` of the hub
(`app.service.live`: woken by NOTIFY, read once for every subscriber in the process) and
waits on all of them at once; new children are looked for when a run of the tree says it
started some (`run.children_started`, written in the transaction that creates them).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import re
from collections.abc import AsyncGenerator, Mapping

import orjson

from app.core.events import EventType
from app.service.errors import InvalidRequest
from app.service.live import EventHub, RunFeed
from app.service.shielded import whole
from app.service.types import EventRecord

#: The most runs a cursor may name (a bound for decoding; the API's length limit on a
#: cursor is met first).
MAX_RUNS = 1000
_RUN_ID = re.compile(r"[A-Za-z0-9_-]{1,40}")


def encode_cursor(marks: Mapping[str, int]) -> str:
    return base64.urlsafe_b64encode(orjson.dumps(dict(marks))).decode().rstrip("=")


def decode_cursor(cursor: str) -> dict[str, int]:
    """The marks of a cursor `encode_cursor` made; 422 for anything else."""
    try:
        marks = orjson.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    except ValueError:  # (binascii.Error and orjson.JSONDecodeError are ValueErrors)
        raise InvalidRequest("cursor is malformed") from None
    if not (
        isinstance(marks, dict)
        and len(marks) <= MAX_RUNS
        and all(
            _RUN_ID.fullmatch(run_id) and type(seq) is int and 0 <= seq < 2**31
            for run_id, seq in marks.items()
        )
    ):
        raise InvalidRequest("cursor is malformed")
    return marks


async def page(
    hub: EventHub, run_id: str, marks: Mapping[str, int], limit: int
) -> tuple[list[EventRecord], dict[str, int]]:
    """Up to `limit` events of the tree after `marks`, by `created_at`, then run, then
    `seq` (each run's in `seq` order: `Trees.subtree_events`), and the marks after them."""
    events = await hub.store.trees.subtree_events(run_id, marks, limit)
    after = dict(marks)
    for e in events:
        after[e.run_id] = e.seq
    return events, after


async def stream(
    hub: EventHub, run_id: str, marks: Mapping[str, int]
) -> AsyncGenerator[EventRecord, None]:
    """The tree's events after `marks`, then live ones until the run and every
    descendant have ended; a descendant started meanwhile joins."""
    after = dict(marks)
    bell = asyncio.Event()  # rung by any of the tree's feeds
    feeds: dict[str, RunFeed] = {}
    async with contextlib.AsyncExitStack() as stack:

        async def join() -> None:
            for member in await whole(hub.store.trees.subtree(run_id)):
                if member not in feeds:
                    feed = await stack.enter_async_context(hub.subscribed(member))
                    feeds[member] = feed
                    feed.bells.add(bell)
                    stack.callback(feed.bells.discard, bell)

        await join()
        wait = min(hub.wake_timeout, hub.first_look_seconds)
        while True:
            bell.clear()  # (a notification from here on rings it: none is lost)
            sent = grew = False
            for member, feed in list(feeds.items()):
                await feed.refresh()
                for e in feed.after(after.get(member, 0)):
                    after[member] = e.seq
                    sent = True
                    grew = grew or e.type == EventType.RUN_CHILDREN_STARTED
                    yield e
            if grew:
                await join()
                wait = min(hub.wake_timeout, hub.first_look_seconds)
            if sent:
                continue
            if all(feed.ended for feed in feeds.values()):
                return
            try:  # (not wait_for: see app.worker.worker)
                async with asyncio.timeout(wait):
                    await bell.wait()
            except TimeoutError:
                # Heard nothing: read the runs not read for a while (a missed NOTIFY; on
                # SQLite nothing notifies), as a single run's stream does.
                now = hub.clock.monotonic()
                for feed in feeds.values():
                    if not feed.ended and now - feed.refreshed_at >= wait / 2:
                        await feed.notify()
            wait = hub.wake_timeout
