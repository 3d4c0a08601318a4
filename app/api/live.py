"""Live event streams: any API process serves any run's stream.

On PostgreSQL one LISTEN connection per API process receives a NOTIFY for every event
commit (the run id as payload) and wakes that run's subscribers; on SQLite subscribers
poll. Either way events are read from the log, so a stream resumes from Last-Event-ID
with no gap and no duplicate.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import defaultdict
from collections.abc import AsyncIterator

import orjson
import structlog
from sqlalchemy.engine import make_url
from sse_starlette.event import ServerSentEvent

from app.core.lifecycle import TERMINAL
from app.store.runs import EVENTS_CHANNEL, RunStore

log = structlog.get_logger("agentrun.api")


class EventHub:
    def __init__(self, store: RunStore, database_url: str, poll_interval: float) -> None:
        self.store = store
        self.database_url = database_url
        self.poll_interval = poll_interval
        self._waiters: dict[str, set[asyncio.Event]] = defaultdict(set)
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
                    self._wake_all()  # catch up after (re)connecting
                    async for notification in conn.notifies():
                        for event in self._waiters.get(notification.payload, ()):
                            event.set()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("event LISTEN connection lost; reconnecting")
                await asyncio.sleep(1.0)

    def _wake_all(self) -> None:
        for events in self._waiters.values():
            for event in events:
                event.set()

    async def stream(self, run_id: str, after: int) -> AsyncIterator[ServerSentEvent]:
        """The run's events after `after`, then live ones until the run has ended."""
        self._ensure_listening()
        wakeup = asyncio.Event()
        self._waiters[run_id].add(wakeup)
        timeout = 5.0 if self.store.is_postgres else self.poll_interval
        try:
            last = after
            while True:
                wakeup.clear()
                events = await self.store.events(run_id, after=last, limit=500)
                for e in events:
                    last = e.seq
                    payload = {
                        "seq": e.seq,
                        "type": e.type,
                        "data": e.data,
                        "actor": e.actor,
                        "created_at": e.created_at.isoformat(),
                    }
                    yield ServerSentEvent(
                        data=orjson.dumps(payload).decode(), event=e.type, id=str(e.seq)
                    )
                if events:
                    continue
                record = await self.store.get(run_id)
                if record is None or (record.status in TERMINAL and record.last_event_seq <= last):
                    return
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(wakeup.wait(), timeout)
        finally:
            self._waiters[run_id].discard(wakeup)
            if not self._waiters[run_id]:
                del self._waiters[run_id]
