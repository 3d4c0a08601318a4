"""A run's live event stream as server-sent events, and waits for a run's status: the hub
(app.service.live) decides what to send and when; this names each event by its type and
`seq` (the `id` a client resumes from with Last-Event-ID; a tree's stream, its cursor:
app.service.tree_live), and gives up a wait whose client has gone."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Set
from typing import TypeVar

import orjson
from sse_starlette import EventSourceResponse
from sse_starlette.event import ServerSentEvent
from starlette.requests import Request

from app.api.models import EventList, EventOut
from app.core.lifecycle import RunStatus
from app.core.scope import Scope
from app.service import tree_live
from app.service.live import EventHub
from app.service.principals import Principal, sees_callbacks, without_callback
from app.service.runs import RunService
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


async def tree_events(
    hub: EventHub,
    service: RunService,
    run_id: str,
    principal: Principal,
    cursor: str | None,
    limit: int,
    streaming: bool,
) -> EventList | EventSourceResponse:
    """`GET /v1/runs/{id}/events?tree=true`: the run (in the caller's scope) and its
    descendants, a page from `cursor` or a stream."""
    marks = tree_live.decode_cursor(cursor) if cursor is not None else {}
    await service.owned(run_id, principal.scope)  # 404 before the stream starts
    shown = sees_callbacks(principal)
    if streaming:
        stream = tree_server_sent_events(hub, run_id, marks, callbacks=shown)
        return EventSourceResponse(stream, ping=15)
    records, after = await tree_live.page(hub, run_id, marks, limit)
    return EventList(
        data=[EventOut.of(e, callbacks=shown) for e in records],
        next_cursor=tree_live.encode_cursor(after),
    )


async def tree_server_sent_events(
    hub: EventHub, run_id: str, marks: dict[str, int], *, callbacks: bool = True
) -> AsyncIterator[ServerSentEvent]:
    """The events of the run and its descendants after `marks`, then live ones until all
    have ended; each event's `id` is the tree's cursor after it."""
    after = dict(marks)
    async with contextlib.aclosing(tree_live.stream(hub, run_id, marks)) as events:
        async for e in events:
            after[e.run_id] = e.seq
            cursor = tree_live.encode_cursor(after)
            yield ServerSentEvent(data=payload(e, callbacks), event=e.type, id=cursor)


def payload(e: EventRecord, callbacks: bool = True) -> str:
    return orjson.dumps(
        {
            "run_id": e.run_id,
            "seq": e.seq,
            "type": e.type,
            "data": e.data if callbacks else without_callback(e.data),
            "actor": e.actor,
            "created_at": iso(e.created_at),
        }
    ).decode()
