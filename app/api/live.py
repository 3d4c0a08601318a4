"""Live event streams: any API process serves any run's stream.

On PostgreSQL one LISTEN connection per API process receives a NOTIFY for every event
commit (the run id as payload) and wakes that run's subscribers; on SQLite subscribers
poll. Either way events are read from the log, so a stream resumes from Last-Event-ID
with no gap and no duplicate.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
from collections.abc import AsyncIterator

import orjson
import structlog
from sqlalchemy.engine import make_url
from sse_starlette.event import ServerSentEvent

from app.core.lifecycle import TERMINAL
from app.store.records import EventRecord
from app.store.runs import EVENTS_CHANNEL, RunStore

log = structlog.get_logger("agentrun.api")


class RunFeed:
    """One run's events as seen by this API process: fetched from the log once per
    notification and shared by every subscriber, so 100 subscribers cost one query."""

    def __init__(self, store: RunStore, run_id: str) -> None:
        self.store = store
        self.run_id = run_id
        self.events: list[EventRecord] = []
        self.fetched = 0  # highest sequence number fetched
        self.ended = False
        self.generation = 0  # bumped by every notification
        self.refreshed_generation = -1
        self.subscribers = 0
        self.lock = asyncio.Lock()
        self.changed = asyncio.Condition()

    async def notify(self) -> None:
        async with self.changed:
            self.generation += 1
            self.changed.notify_all()

    async def refresh(self) -> None:
        async with self.lock:
            if self.refreshed_generation == self.generation:
                return
            generation = self.generation
            while True:
                new = await self.store.events(self.run_id, after=self.fetched, limit=1000)
                self.events.extend(new)
                if new:
                    self.fetched = new[-1].seq
                if len(new) < 1000:
                    break
            record = await self.store.get(self.run_id)
            self.ended = record is None or (
                record.status in TERMINAL and record.last_event_seq <= self.fetched
            )
            self.refreshed_generation = generation

    def after(self, seq: int) -> list[EventRecord]:
        start = bisect.bisect_right([e.seq for e in self.events], seq)
        return self.events[start:]

    async def wait(self, seen_generation: int, timeout: float) -> None:
        async with self.changed:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(
                    self.changed.wait_for(lambda: self.generation > seen_generation), timeout
                )


class EventHub:
    def __init__(self, store: RunStore, database_url: str, poll_interval: float) -> None:
        self.store = store
        self.database_url = database_url
        self.poll_interval = poll_interval
        self._feeds: dict[str, RunFeed] = {}
        self._listener: asyncio.Task[None] | None = None

    def _ensure_listening(self) -> None:
        if self.store.is_postgres and self._listener is None:
            self._listener = asyncio.create_task(self._listen())

    async def close(self) -> None:
        if self._listener is not None:
            self._listener.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._listener

    async def _listen(self) -> None:
        import psycopg

        url = make_url(self.database_url).set(drivername="postgresql")
        conninfo = url.render_as_string(hide_password=False)
        while True:
            try:
                async with await psycopg.AsyncConnection.connect(conninfo, autocommit=True) as conn:
                    await conn.execute(f"LISTEN {EVENTS_CHANNEL}")
                    for feed in list(self._feeds.values()):  # catch up after (re)connecting
                        await feed.notify()
                    async for notification in conn.notifies():
                        target = self._feeds.get(notification.payload)
                        if target is not None:
                            await target.notify()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("event LISTEN connection lost; reconnecting")
                await asyncio.sleep(1.0)

    async def stream(self, run_id: str, after: int) -> AsyncIterator[ServerSentEvent]:
        """The run's events after `after`, then live ones until the run has ended."""
        self._ensure_listening()
        feed = self._feeds.get(run_id)
        if feed is None:
            feed = self._feeds[run_id] = RunFeed(self.store, run_id)
        feed.subscribers += 1
        # Without LISTEN (SQLite) each wait times out into a poll.
        timeout = 5.0 if self.store.is_postgres else self.poll_interval
        try:
            last = after
            while True:
                seen = feed.generation
                await feed.refresh()
                events = feed.after(last)
                for e in events:
                    last = e.seq
                    yield ServerSentEvent(data=_payload(e), event=e.type, id=str(e.seq))
                if events:
                    continue
                if feed.ended:
                    return
                await feed.wait(seen, timeout)
                if not self.store.is_postgres:
                    await feed.notify()
        finally:
            feed.subscribers -= 1
            if feed.subscribers == 0:
                self._feeds.pop(run_id, None)


def _payload(e: EventRecord) -> str:
    return orjson.dumps(
        {
            "seq": e.seq,
            "type": e.type,
            "data": e.data,
            "actor": e.actor,
            "created_at": e.created_at.isoformat(),
        }
    ).decode()
