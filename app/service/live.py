"""Live event streams and waits: any API process serves any run's stream (the API sends
them as server-sent events: app.api.live) and holds requests until a run reaches a status
(`EventHub.until`, the API's `GET /v1/runs/{id}/wait`).

On PostgreSQL one LISTEN connection per API process receives a NOTIFY for every event
commit of a run it watches (the run id as payload) and wakes that run's subscribers; the
process marks the runs it streams or waits on in `run_watchers` (kept alive, dropped when
the last subscriber leaves), since only watched runs' commits notify. On SQLite subscribers
poll. Either way events are read from the log, so a stream resumes from Last-Event-ID with
no gap and no duplicate. Between wake-ups nobody holds a database connection: a woken run
is read once for all its subscribers.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import os
import secrets
import socket
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Set

import structlog
from sqlalchemy.engine import make_url

from app.clock import Clock
from app.core.lifecycle import TABLE, TERMINAL, RunStatus
from app.core.scope import Scope
from app.service.shielded import whole
from app.service.types import EventRecord, RunRecord
from app.store.runs import EVENTS_CHANNEL, QUEUE_CHANNEL, RunStore

log = structlog.get_logger("agentrun.api")

#: How long a watch lasts unless renewed (renewed every third of it while streaming).
WATCH_TTL_SECONDS = 30.0
#: Between registering a watch and the first wake-up, a commit whose statement began
#: before the watch existed may not have notified: look at the log again this soon (and
#: then every `fallback_seconds` that pass without a notification).
FIRST_LOOK_SECONDS = 1.0
#: What a wait waits for unless told: the run suspended (someone must act) or ended.
SETTLED = frozenset({RunStatus.REQUIRES_ACTION, *TERMINAL})
#: Statuses no transition leaves (completed, cancelled; an operator may retry a failed or
#: expired run): a wait for anything else would only time out, so it ends at once.
FINAL = frozenset(s for s in RunStatus if all(to == s for (f, _), to in TABLE.items() if f == s))


def newer(a: RunRecord | None, b: RunRecord) -> bool:
    """Whether `b` is a later state of the run than `a` (each change bumps one or both)."""
    return a is None or (b.version, b.last_event_seq) > (a.version, a.last_event_seq)


class RunFeed:
    """One run's events as seen by this API process: fetched from the log once per
    notification and shared by every subscriber, so 100 subscribers cost one query."""

    def __init__(self, store: RunStore, run_id: str, clock: Clock) -> None:
        self.store = store
        self.run_id = run_id
        self.clock = clock
        self.events: list[EventRecord] = []
        self.fetched = 0  # highest sequence number fetched
        self.ended = False
        self.generation = 0  # bumped by every notification
        self.refreshed_generation = -1
        self.refreshed_at = float("-inf")  # (clock.monotonic) the last read of the log
        self.record: RunRecord | None = None  # the run as last read
        self.record_generation = -1
        self.subscribers = 0
        self.watched: asyncio.Future[None] | None = None  # the watch is written
        self.lock = asyncio.Lock()
        self.changed = asyncio.Condition()
        #: Set at every notification: one per tree stream that follows this run among
        #: others (`app.service.tree_live`), which waits on all of its runs at once.
        self.bells: set[asyncio.Event] = set()

    async def notify(self) -> None:
        async with self.changed:
            self.generation += 1
            self.changed.notify_all()
        for bell in self.bells:
            bell.set()

    async def refresh(self) -> None:
        async with self.lock:
            if self.refreshed_generation == self.generation:
                return
            generation = self.generation
            while True:
                new = await whole(self.store.events(self.run_id, after=self.fetched, limit=1000))
                self.events.extend(new)
                if new:
                    self.fetched = new[-1].seq
                if len(new) < 1000:
                    break
            record = await whole(self.store.get(self.run_id, scope=Scope.ALL))
            self.ended = record is None or (
                record.status in TERMINAL and record.last_event_seq <= self.fetched
            )
            if record is None or newer(self.record, record):
                self.record = record
            self.record_generation = generation
            self.refreshed_generation = generation
            self.refreshed_at = self.clock.monotonic()

    async def refresh_record(self) -> RunRecord | None:
        """The run (not its events: waits need only its status), read once per
        notification for every subscriber. Leaves `refreshed_at` alone: the log has not
        been read, so a stream of this feed still polls it on time."""
        async with self.lock:
            if self.record_generation != self.generation:
                generation = self.generation
                record = await whole(self.store.get(self.run_id, scope=Scope.ALL))
                if record is None or newer(self.record, record):
                    self.record = record
                self.record_generation = generation
            return self.record

    def offer(self, record: RunRecord) -> None:
        """A read of the run made elsewhere: kept if it is later than the feed's."""
        if newer(self.record, record):
            self.record = record

    def after(self, seq: int) -> list[EventRecord]:
        start = bisect.bisect_right([e.seq for e in self.events], seq)
        return self.events[start:]

    async def wait(
        self,
        seen_generation: int,
        timeout: float,
        *,
        poll: bool = True,
        stop: Callable[[], bool] | None = None,
    ) -> None:
        """Until a notification, or `timeout`. A wait that heard nothing makes the next
        `refresh` read the log anyway (unless another subscriber of this feed just did):
        a commit may have missed its NOTIFY (its statement began before this process
        watched the run; a LISTEN connection was re-established), and on SQLite nothing
        notifies at all. So a missed notification costs at most one `timeout`. Without
        `poll` (a wait cut short by its caller's deadline) the timeout forces no read;
        `stop` ends the wait early when it holds at a `notify_all`."""

        def woken() -> bool:
            return self.generation > seen_generation or (stop is not None and stop())

        async with self.changed:
            try:  # (not asyncio.wait_for: see app.worker.worker)
                async with asyncio.timeout(timeout):
                    await self.changed.wait_for(woken)
                return
            except TimeoutError:
                if not poll:
                    return
            stale = self.clock.monotonic() - self.refreshed_at >= timeout / 2
            if stale and self.generation == seen_generation:
                self.generation += 1
                self.changed.notify_all()


class QueueBell:
    """Wakes lease requests waiting for calls of a queue (`app.toolqueue.service`): rung by
    the hub's LISTEN connection when a commit offered calls of the queue (NOTIFY, the
    queue's name as payload). A waiter registers before it looks, so a ring while it
    looks is not lost."""

    def __init__(self) -> None:
        self._waiters: dict[str, set[asyncio.Future[None]]] = {}
        self.released = False

    def listen(self, queue: str) -> asyncio.Future[None]:
        """A future done at the queue's next ring (or at `release`)."""
        future = asyncio.get_running_loop().create_future()
        if self.released:
            future.set_result(None)
        else:
            self._waiters.setdefault(queue, set()).add(future)
        return future

    def waiting(self, queue: str) -> int:
        """How many lease requests wait for the queue's next ring."""
        return len(self._waiters.get(queue, ()))

    def forget(self, queue: str, future: asyncio.Future[None]) -> None:
        waiters = self._waiters.get(queue)
        if waiters is not None:
            waiters.discard(future)
            if not waiters:
                del self._waiters[queue]

    def ring(self, queue: str | None = None) -> None:
        """Wake the waiters of `queue` (None: of every queue)."""
        queues = list(self._waiters) if queue is None else [queue]
        for q in queues:
            for future in self._waiters.pop(q, ()):
                if not future.done():
                    future.set_result(None)

    def release(self) -> None:
        """Wake every waiter now and from now on (the process is shutting down)."""
        self.released = True
        self.ring()


class EventHub:
    def __init__(
        self,
        store: RunStore,
        database_url: str,
        poll_interval: float,
        *,
        fallback_seconds: float = 5.0,
        first_look_seconds: float = FIRST_LOOK_SECONDS,
        clock: Clock,
    ) -> None:
        self.store = store
        self.clock = clock
        self.database_url = database_url
        self.poll_interval = poll_interval
        # On PostgreSQL, a stream that heard nothing looks at the log after this anyway.
        self.fallback_seconds = fallback_seconds
        self.first_look_seconds = first_look_seconds
        self.watcher = f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"
        self._feeds: dict[str, RunFeed] = {}
        self._tasks: list[asyncio.Task[None]] = []
        self._chores: set[asyncio.Task[None]] = set()
        # Watches to write and drop, written by one task in batches (`_write_watches`).
        self._to_watch: dict[str, RunFeed] = {}
        self._to_unwatch: set[str] = set()
        self._writer: asyncio.Task[None] | None = None
        self._released = False
        self.bell = QueueBell()

    def _ensure_listening(self) -> None:
        if self.store.notifies and not self._tasks:
            self._tasks = [
                asyncio.create_task(self._listen()),
                asyncio.create_task(self._renew_watches()),
            ]

    @property
    def wake_timeout(self) -> float:
        """How long a subscriber waits for a wake-up before it reads anyway: on SQLite,
        where nothing notifies, the poll interval."""
        return self.fallback_seconds if self.store.notifies else self.poll_interval

    async def close(self) -> None:
        tasks = [*self._tasks, *self._chores, *([self._writer] if self._writer else [])]
        for task in tasks:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if self._tasks:
            with contextlib.suppress(Exception):
                await self.store.unwatch(self.watcher)

    def release(self) -> None:
        """End every wait now, each answering with the run as last read (the process is
        shutting down: a wait must not hold up the server's graceful stop). Streams are
        left alone (their server ends them). Call it on the event loop's thread."""
        self._released = True
        self.bell.release()
        task = asyncio.get_running_loop().create_task(self._wake_waits())
        self._chores.add(task)
        task.add_done_callback(self._chores.discard)

    async def _wake_waits(self) -> None:
        for feed in list(self._feeds.values()):
            async with feed.changed:
                feed.changed.notify_all()

    def queue_bell(self) -> QueueBell:
        """The bell of lease requests (its LISTEN connection started on PostgreSQL)."""
        self._ensure_listening()
        return self.bell

    async def _renew_watches(self) -> None:
        while True:
            await asyncio.sleep(WATCH_TTL_SECONDS / 3)
            try:
                await self.store.watch(self.watcher, list(self._feeds), WATCH_TTL_SECONDS)
            except Exception:
                log.exception("renewing live-stream watches failed")

    def _watched(self, feed: RunFeed) -> asyncio.Future[None]:
        """Done once the feed's run is in `run_watchers` (asked again if that failed)."""
        failed = (
            feed.watched is not None
            and feed.watched.done()
            and (feed.watched.cancelled() or feed.watched.exception() is not None)
        )
        if feed.watched is None or failed:
            feed.watched = asyncio.get_running_loop().create_future()
            feed.watched.add_done_callback(lambda f: f.cancelled() or f.exception())
            self._to_watch[feed.run_id] = feed
            self._write_soon()
        return feed.watched

    def _write_soon(self) -> None:
        if self._writer is None:
            self._writer = asyncio.create_task(self._write_watches())

    async def _write_watches(self) -> None:
        """Writes the watches asked for meanwhile in one statement, and drops those
        nobody came back for in another: 1,000 waits arriving together cost a few
        statements, not 1,000. One task, so a watch is never dropped after it was
        written anew."""
        try:
            while self._to_watch or self._to_unwatch:
                batch, self._to_watch = self._to_watch, {}
                gone = sorted(r for r in self._to_unwatch if r not in self._feeds)
                self._to_unwatch.clear()
                if gone:
                    try:
                        await self.store.unwatch(self.watcher, gone)
                    except Exception:
                        log.exception(
                            "dropping live-stream watches failed; they lapse by themselves"
                        )
                if not batch:
                    continue
                try:
                    await self.store.watch(self.watcher, list(batch), WATCH_TTL_SECONDS)
                except Exception as exc:
                    for feed in batch.values():
                        if feed.watched is not None and not feed.watched.done():
                            feed.watched.set_exception(exc)
                else:
                    for feed in batch.values():
                        if feed.watched is not None and not feed.watched.done():
                            feed.watched.set_result(None)
        finally:
            self._writer = None

    async def _listen(self) -> None:
        import psycopg

        url = make_url(self.database_url).set(drivername="postgresql")
        conninfo = url.render_as_string(hide_password=False)
        while True:
            try:
                async with await psycopg.AsyncConnection.connect(conninfo, autocommit=True) as conn:
                    await conn.execute(f"LISTEN {EVENTS_CHANNEL}")
                    await conn.execute(f"LISTEN {QUEUE_CHANNEL}")
                    for feed in list(self._feeds.values()):  # catch up after (re)connecting
                        await feed.notify()
                    self.bell.ring()
                    async for notification in conn.notifies():
                        if notification.channel == QUEUE_CHANNEL:
                            self.bell.ring(notification.payload)
                            continue
                        target = self._feeds.get(notification.payload)
                        if target is not None:
                            await target.notify()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("event LISTEN connection lost; reconnecting")
                await asyncio.sleep(1.0)

    @contextlib.asynccontextmanager
    async def subscribed(self, run_id: str) -> AsyncIterator[RunFeed]:
        """The run's feed (shared by every stream and wait on it in this process), once
        the run is watched; the watch is dropped when the last subscriber leaves."""
        self._ensure_listening()
        feed = self._feeds.get(run_id)
        if feed is None:
            feed = self._feeds[run_id] = RunFeed(self.store, run_id, self.clock)
        feed.subscribers += 1
        try:
            if self.store.notifies:
                await asyncio.shield(self._watched(feed))
            yield feed
        finally:
            feed.subscribers -= 1
            if feed.subscribers == 0:
                self._feeds.pop(run_id, None)
                if self.store.notifies:
                    self._to_unwatch.add(run_id)
                    self._write_soon()

    async def stream(self, run_id: str, after: int) -> AsyncGenerator[EventRecord, None]:
        """The run's events after `after`, then live ones until the run has ended."""
        timeout = self.wake_timeout
        first_wait = min(timeout, self.first_look_seconds)
        async with self.subscribed(run_id) as feed:
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

    async def until(
        self,
        run_id: str,
        statuses: Set[RunStatus],
        timeout: float,
        scope: Scope,
    ) -> RunRecord | None:
        """The run once its status is one of `statuses` or `FINAL`, else as last read
        when `timeout` seconds have passed (or `release` was called); None when there is
        no such run (in `scope`: its first read is scoped). Reads the run
        once, then only when one of its commits wakes this process (or the wait's poll
        comes due): no database connection is held between."""
        deadline = self.clock.monotonic() + timeout
        record = await whole(self.store.get(run_id, scope=scope))
        if record is None or settled(record, statuses) or timeout <= 0 or self._released:
            return record
        wait = min(self.wake_timeout, self.first_look_seconds)
        async with self.subscribed(run_id) as feed:
            feed.offer(record)
            while True:
                seen = feed.generation
                latest = await feed.refresh_record()
                if latest is None or settled(latest, statuses) or self._released:
                    return latest
                remaining = deadline - self.clock.monotonic()
                if remaining <= 0:
                    return latest
                await feed.wait(
                    seen, min(wait, remaining), poll=wait <= remaining, stop=self._is_released
                )
                wait = self.wake_timeout

    def _is_released(self) -> bool:
        return self._released

    @property
    def released(self) -> bool:
        """Whether `release` was called (the process is shutting down)."""
        return self._released

    def subscribers(self, run_id: str) -> int:
        """The streams and waits this process holds on the run."""
        feed = self._feeds.get(run_id)
        return 0 if feed is None else feed.subscribers


def settled(record: RunRecord, statuses: Set[RunStatus]) -> bool:
    """Whether a wait for `statuses` is over: the run is in one, or can never leave its."""
    return record.status in statuses or record.status in FINAL
