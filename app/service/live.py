"""Live event streams: any API process serves any run's stream (the API sends them as
server-sent events: app.api.live).

On PostgreSQL one LISTEN connection per API process receives a NOTIFY for every event
commit of a run it watches (the run id as payload) and wakes that run's subscribers; the
process marks the runs it streams in `run_watchers` (kept alive, dropped when the last
subscriber leaves), since only watched runs' commits notify. On SQLite subscribers poll.
Either way events are read from the log, so a stream resumes from Last-Event-ID with no
gap and no duplicate.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import os
import secrets
import socket
from collections.abc import AsyncGenerator

import structlog
from sqlalchemy.engine import make_url

from app.core.lifecycle import TERMINAL
from app.service.types import EventRecord
from app.store.runs import EVENTS_CHANNEL, RunStore

log = structlog.get_logger("agentrun.api")

#: How long a watch lasts unless renewed (renewed every third of it while streaming).
WATCH_TTL_SECONDS = 30.0
#: Between registering a watch and the first wake-up, a commit whose statement began
#: before the watch existed may not have notified: look at the log again this soon (and
#: then every `fallback_seconds` that pass without a notification).
FIRST_LOOK_SECONDS = 1.0


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
        self.refreshed_at = 0.0  # loop time of the last read of the log
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
            self.refreshed_at = asyncio.get_running_loop().time()

    def after(self, seq: int) -> list[EventRecord]:
        start = bisect.bisect_right([e.seq for e in self.events], seq)
        return self.events[start:]

    async def wait(self, seen_generation: int, timeout: float) -> None:
        """Until a notification, or `timeout`. A wait that heard nothing makes the next
        `refresh` read the log anyway (unless another subscriber of this feed just did):
        a commit may have missed its NOTIFY (its statement began before this process
        watched the run; a LISTEN connection was re-established), and on SQLite nothing
        notifies at all. So a missed notification costs at most one `timeout`."""
        async with self.changed:
            try:
                await asyncio.wait_for(
                    self.changed.wait_for(lambda: self.generation > seen_generation), timeout
                )
                return
            except TimeoutError:
                pass
            stale = asyncio.get_running_loop().time() - self.refreshed_at >= timeout / 2
            if stale and self.generation == seen_generation:
                self.generation += 1
                self.changed.notify_all()


class EventHub:
    def __init__(
        self,
        store: RunStore,
        database_url: str,
        poll_interval: float,
        *,
        fallback_seconds: float = 5.0,
        first_look_seconds: float = FIRST_LOOK_SECONDS,
    ) -> None:
        self.store = store
        self.database_url = database_url
        self.poll_interval = poll_interval
        # On PostgreSQL, a stream that heard nothing looks at the log after this anyway.
        self.fallback_seconds = fallback_seconds
        self.first_look_seconds = first_look_seconds
        self.watcher = f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"
        self._feeds: dict[str, RunFeed] = {}
        self._tasks: list[asyncio.Task[None]] = []
        self._unwatching: set[asyncio.Task[None]] = set()

    def _ensure_listening(self) -> None:
        if self.store.is_postgres and not self._tasks:
            self._tasks = [
                asyncio.create_task(self._listen()),
                asyncio.create_task(self._renew_watches()),
            ]

    async def close(self) -> None:
        for task in [*self._tasks, *self._unwatching]:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if self._tasks:
            with contextlib.suppress(Exception):
                await self.store.unwatch(self.watcher)

    async def _renew_watches(self) -> None:
        while True:
            await asyncio.sleep(WATCH_TTL_SECONDS / 3)
            try:
                await self.store.watch(self.watcher, list(self._feeds), WATCH_TTL_SECONDS)
            except Exception:
                log.exception("renewing live-stream watches failed")

    async def _unwatch(self, run_id: str) -> None:
        try:
            if run_id not in self._feeds:  # nobody came back for it meanwhile
                await self.store.unwatch(self.watcher, [run_id])
        except Exception:
            log.exception("dropping a live-stream watch failed; it lapses by itself")

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

    async def stream(self, run_id: str, after: int) -> AsyncGenerator[EventRecord, None]:
        """The run's events after `after`, then live ones until the run has ended."""
        self._ensure_listening()
        feed = self._feeds.get(run_id)
        new = feed is None
        if feed is None:
            feed = self._feeds[run_id] = RunFeed(self.store, run_id)
        feed.subscribers += 1
        # Without LISTEN (SQLite) each wait times out into a poll.
        timeout = self.fallback_seconds if self.store.is_postgres else self.poll_interval
        first_wait = min(timeout, self.first_look_seconds)
        try:
            if new:
                await self.store.watch(self.watcher, [run_id], WATCH_TTL_SECONDS)
            last = after
            while True:
                seen = feed.generation
                await feed.refresh()
                events = feed.after(last)
                for e in events:
                    last = e.seq
                    yield e
                if events:
                    continue
                if feed.ended:
                    return
                await feed.wait(seen, first_wait)
                first_wait = timeout
        finally:
            feed.subscribers -= 1
            if feed.subscribers == 0:
                self._feeds.pop(run_id, None)
                if self.store.is_postgres:
                    task = asyncio.create_task(self._unwatch(run_id))
                    self._unwatching.add(task)
                    task.add_done_callback(self._unwatching.discard)
