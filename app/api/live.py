"""A run's live event stream as server-sent events: the hub (app.service.live) decides
what to send and when; this names each event by its type and `seq` (the `id` a client
resumes from with Last-Event-ID)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import orjson
from sse_starlette.event import ServerSentEvent

from app.service.live import EventHub
from app.service.types import EventRecord
from app.timestamps import iso


async def server_sent_events(
    hub: EventHub, run_id: str, after: int
) -> AsyncIterator[ServerSentEvent]:
    """The run's events after `after`, then live ones until the run has ended."""
    # aclosing: a client that goes away ends the hub's stream now (it stops watching the
    # run), not whenever the abandoned generator is collected.
    async with contextlib.aclosing(hub.stream(run_id, after)) as events:
        async for e in events:
            yield ServerSentEvent(data=payload(e), event=e.type, id=str(e.seq))


def payload(e: EventRecord) -> str:
    return orjson.dumps(
        {
            "seq": e.seq,
            "type": e.type,
            "data": e.data,
            "actor": e.actor,
            "created_at": iso(e.created_at),
        }
    ).decode()
