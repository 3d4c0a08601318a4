"""A run's live event stream as server-sent events, and waits for a run's status: the hub
(app.service.live) decides what to send and when; this names each event by its type and
`seq` (the `id` a client resumes from with Last-Event-ID), and gives up a wait whose client
has gone."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Set
from typing import TypeVar

import orjson
from sse_starlette.event import ServerSentEvent
from starlette.requests import Request

from app.core.lifecycle import RunStatus
from app.core.scope import Scope
from app.service.live import EventHub
from app.service.principals import without_callback
from app.service.types import EventRecord, RunRecord
from app.timestamps import iso

T = TypeVar("T")


class ClientGone(Exception):
    """The client of a wait disconnected before it ended."""


async def wait_while_connected(
    request: Request,
    hub: EventHub,
    run_id: str,
    statuses: Set[RunStatus],
    timeout: float,
    scope: Scope,
) -> RunRecord | None:
    """`hub.until` (a run in `scope`), given up (`ClientGone`) when the client
    disconnects: a wait must not outlive its client (one that gives up after 10 s and asks
    again would otherwise pile up waits)."""
    return await while_connected(request, hub.until(run_id, statuses, timeout, scope))


async def while_connected(request: Request, work: Awaitable[T]) -> T:
    """`work`'s result, or `ClientGone` (the work cancelled) when the client disconnects
    first (a long poll: a wait, a lease request)."""
    waiting = asyncio.ensure_future(work)
    gone = asyncio.ensure_future(_disconnect(request))
    try:
        await asyncio.wait({waiting, gone}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (gone, waiting):
            if not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
    if waiting.cancelled():
        raise ClientGone
    return waiting.result()


async def _disconnect(request: Request) -> None:
    """Returns when the client disconnects (after the request's body: a GET's is empty,
    a POST's the route has read already)."""
    while (await request.receive())["type"] != "http.disconnect":
        pass


async def server_sent_events(
    hub: EventHub, run_id: str, after: int, *, callbacks: bool = True
) -> AsyncIterator[ServerSentEvent]:
    """The run's events after `after`, then live ones until the run has ended (without
    callback URLs unless `callbacks`: `app.tenancy.access.sees_callbacks`)."""
    # aclosing: a client that goes away ends the hub's stream now (it stops watching the
    # run), not whenever the abandoned generator is collected.
    async with contextlib.aclosing(hub.stream(run_id, after)) as events:
        async for e in events:
            yield ServerSentEvent(data=payload(e, callbacks), event=e.type, id=str(e.seq))


def payload(e: EventRecord, callbacks: bool = True) -> str:
    return orjson.dumps(
        {
            "seq": e.seq,
            "type": e.type,
            "data": e.data if callbacks else without_callback(e.data),
            "actor": e.actor,
            "created_at": iso(e.created_at),
        }
    ).decode()
