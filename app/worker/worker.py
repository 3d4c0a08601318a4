"""The worker process: N slots fed by one dispatcher, a reaper, wake-ups, a clean SIGTERM.

Idle slots do not claim for themselves: the dispatcher claims for all of them with one
statement when woken (PostgreSQL LISTEN/NOTIFY: a process that commits a queued run sends a
NOTIFY with it when that write is its only one in flight, else after the commit, coalesced;
idle workers also look every second; SQLite: the
poll interval), so a burst of notifications costs one claim, not one per notification per
slot. A busy slot claims its next run with its current run's last write.
SIGTERM stops claiming, lets held runs finish for a grace period, then releases what is
still held back to the queue, and exits 0. A run taken from a slot mid-call (cancelled,
reaped) stops that call within a second (`app.worker.stops`).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import socket
from datetime import datetime, timedelta

import structlog
from sqlalchemy.engine import make_url

from app.clock import Clock
from app.core.scope import Scope
from app.providers.profiles import Profiles
from app.service.tokens import new_key
from app.settings import Settings
from app.store import changes, samples
from app.store.errors import is_unavailable
from app.store.fold import FOLD_BATCH, fold_batch, forget_endings, minute_of
from app.store.hooks import Background, Loop
from app.store.retention import purge_batch
from app.store.run_records import RunRecord
from app.store.runs import NOTIFY_CHANNEL, STOP_CHANNEL, RunStore
from app.worker.driver import ProviderFactory, RunDriver
from app.worker.providers import make_provider
from app.worker.stops import Stops

log = structlog.get_logger("agentrun.worker")

#: How long a stopping worker waits for its background loops to end once cancelled.
BACKGROUND_STOP_SECONDS = 5.0


def default_worker_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


class Worker:
    def __init__(
        self,
        store: RunStore,
        settings: Settings,
        *,
        concurrency: int = 1,
        worker_id: str | None = None,
        providers: ProviderFactory | None = None,
        clock: Clock,
        profiles: Profiles | None = None,
    ) -> None:
        self.store = store
        self.settings = settings
        self.profiles = profiles  # (their shared limits; None: no profile limits)
        self.concurrency = max(1, concurrency)
        self.worker_id = worker_id or default_worker_id()
        self.providers = providers or (lambda spec: make_provider(spec, settings, clock=clock))
        self.clock = clock
        self.stopping = asyncio.Event()
        self._kick = asyncio.Event()  # runs may be due: the dispatcher should claim
        # Runs claimed by the dispatcher for idle slots (None: a slot should stop).
        self._ready: asyncio.Queue[RunRecord | None] = asyncio.Queue()
        self._idle_slots = 0
        self._held: dict[str, int] = {}  # run id -> fencing token, claimed until released
        # Runs whose drive a database outage broke: released once the database answers.
        self._give_back: dict[str, int] = {}
        self._sweeps_due: dict[str, float] = {}  # (monotonic) when a periodic sweep is next due
        self.stops = Stops()  # the model calls in flight, told when their run is taken
        self.driver: RunDriver | None = None
        # The features' background loops (`app.store.hooks.Background`), opened by `run`,
        # each with what wakes it.
        self.loops: list[tuple[Background, Loop, asyncio.Event]] = []

    def wake(self) -> None:
        """Runs may be due (a notification, a re-queue): claim for the idle slots."""
        self._kick.set()

    def stop(self) -> None:
        self.stopping.set()
        self._kick.set()
        for _ in range(self.concurrency):
            self._ready.put_nowait(None)

    async def run(self, grace: float | None = None) -> None:
        key = await self.store.secret("callback_key", new_key)
        self.driver = RunDriver(
            self.store,
            self.settings,
            self.worker_id,
            self.providers,
            key,
            self.clock,
            stops=self.stops,
            profiles=self.profiles,
        )
        for loop in self.store.hooks.background:
            opened = await loop.open(self.worker_id, self.settings, self.clock)
            self.loops.append((loop, opened, asyncio.Event()))
        log.info("worker started", worker=self.worker_id, concurrency=self.concurrency)
        background = [
            asyncio.create_task(self._reaper()),
            asyncio.create_task(self._fold()),
            *[asyncio.create_task(opened.run(woken)) for _, opened, woken in self.loops],
        ]
        if self.settings.retention_days > 0:
            background.append(asyncio.create_task(self._retention()))
        if self.store.notifies:
            background.append(asyncio.create_task(self._listen()))
        else:  # (no NOTIFY: one read per poll while a model call is in flight)
            poll = self.stops.poll(self.store.fences, self.settings.stop_poll_interval)
            for gate in self.driver.gates:  # (else learned at its own 429)
                await gate.catch_up(self.clock.now())
            background.append(asyncio.create_task(poll))
        dispatcher = asyncio.create_task(self._dispatch())
        slots = [asyncio.create_task(self._slot()) for _ in range(self.concurrency)]
        self.wake()
        await self.stopping.wait()
        await dispatcher  # a claim in flight completes (what it took is held), no more
        _, pending = await asyncio.wait(slots, timeout=grace or self.settings.lease_seconds)
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        await self._release_held()
        for task in background:
            task.cancel()
        # (bounded: a LISTEN connection's cancel has been seen to hang for over 30 s in
        # psycopg's notifies(); a stopping worker does not wait for it)
        done, stuck = await asyncio.wait(background, timeout=BACKGROUND_STOP_SECONDS)
        for task in done:
            if not task.cancelled():
                task.exception()  # (retrieved: an ended loop already logged its failure)
        if stuck:
            log.warning("background tasks did not stop in time", tasks=len(stuck))
        for _, opened, _ in self.loops:
            await opened.aclose()
        log.info("worker stopped", worker=self.worker_id)

    async def _slot(self) -> None:
        """Drive runs: one handed over by the dispatcher, then, while the queue has
        work, the one each run's last write claimed."""
        assert self.driver is not None
        record: RunRecord | None = None
        while not self.stopping.is_set():
            if record is None:
                self._idle_slots += 1
                record = await self._ready.get()
                self._idle_slots -= 1
                if record is None or self.stopping.is_set():
                    return  # a run handed over now stays held: the shutdown releases it
            following: RunRecord | None = None
            looked = False
            try:
                following, looked = await self.driver.drive_and_claim(
                    record, lambda: not self.stopping.is_set()
                )
            except Exception as exc:
                if is_unavailable(exc):
                    # The database went away mid-drive: give the run back as soon as it
                    # answers again (the reaper loop retries), not when the lease lapses.
                    log.warning("drive interrupted by a database outage", run_id=record.id)
                    self._give_back[record.id] = record.version
                else:
                    # A bug: leave it to the lease, so a failing run is not retried hot.
                    log.exception("drive failed", run_id=record.id)
            # (Cancelled past the shutdown grace: the run stays held, so it is released.)
            self._held.pop(record.id, None)
            record = following
            if record is not None:  # held at once: a shutdown releases it if not driven
                self._held[record.id] = record.version
            elif not looked:  # the run ended without looking at the queue: have a look
                self.wake()

    async def _dispatch(self) -> None:
        """Claim for idle slots, one statement per wake-up (up to one run per slot)."""
        timeout = self.settings.poll_interval if not self.store.notifies else 1.0
        while not self.stopping.is_set():
            # (asyncio.timeout, never wait_for, for every bounded wait: Python 3.11's
            # wait_for returns normally when it is cancelled as what it waits for
            # completes, CPython gh-86296; a loop waiting so once ignored a stop.)
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(timeout):
                    await self._kick.wait()
            self._kick.clear()
            wanted = self._idle_slots - self._ready.qsize()
            if wanted <= 0 or self.stopping.is_set():
                continue
            try:
                now = self.clock.now()
                until = now + timedelta(seconds=self.settings.lease_seconds)
                claimed = await self.store.claim_many(self.worker_id, now, until, wanted)
            except Exception:  # the database may blip; keep the worker alive
                log.exception("claim failed")
                await asyncio.sleep(self.settings.poll_interval)
                continue
            for record in claimed:
                self._held[record.id] = record.version
                self._ready.put_nowait(record)
            if len(claimed) == wanted:
                self._kick.set()  # there may be more: look again for slots still idle

    async def _release_held(self) -> None:
        """Give back runs still held at shutdown, so another worker takes them at once."""
        for run_id, version in list(self._held.items()):
            await self._release(run_id, version)

    async def _give_back_interrupted(self) -> None:
        """Release the runs an outage interrupted (a refused release means the run moved
        on: its lease lapsed and it was re-queued, or the interrupted write did commit)."""
        for run_id, version in list(self._give_back.items()):
            # (Not when a slot claimed it again meanwhile.)
            if run_id not in self._held and await self._release(run_id, version):
                self.wake()
            del self._give_back[run_id]

    async def _release(self, run_id: str, version: int) -> bool:
        now = self.clock.now()
        change = changes.release(version, self.worker_id, now)
        done, _ = await self.store.apply(run_id, change, now, scope=Scope.ALL)
        return done is not None

    async def _reaper(self) -> None:
        while True:
            try:
                if self._give_back:
                    await self._give_back_interrupted()
                now = self.clock.now()
                requeued = await self.store.reap_expired_leases(now)
                expired = await self.store.expire_suspended(now)
                if requeued:
                    log.info("re-queued runs with lost leases", runs=requeued)
                    self.wake()
                if expired:
                    log.info("expired suspended runs", runs=expired)
            except Exception:
                log.exception("reaper failed")
            await self._sweep()
            await asyncio.sleep(self.settings.reap_interval)

    async def _sweep(self) -> None:
        """The features' sweeps (`app.store.hooks.Sweep`) that are due."""
        for sweep in self.store.hooks.sweeps:
            if sweep.every is not None:
                if self.clock.monotonic() < self._sweeps_due.get(sweep.name, float("-inf")):
                    continue
                self._sweeps_due[sweep.name] = self.clock.monotonic() + sweep.every
            try:
                moved = await sweep.run(self.clock.now())
                if moved:
                    log.info(sweep.name, runs=list(moved))
            except Exception:
                log.exception("sweep failed", sweep=sweep.name)

    async def _fold(self) -> None:
        """Fold finished runs into the rollups that reports read (app.store.fold), with
        the reaper's period: the lag, and what reports read besides the rollups, stay
        about one period of finished runs. Each new minute, it also samples what is
        waiting (app.store.samples: the overview's queue depth and suspended ages)."""
        forgotten: float | None = None  # (the clock's monotonic reading: when, if ever)
        sampled: datetime | None = None  # (the minute this worker last sampled)
        while True:
            await asyncio.sleep(self.settings.reap_interval * (0.5 + random.random()))
            try:
                folded = FOLD_BATCH
                while folded == FOLD_BATCH and not self.stopping.is_set():
                    folded = await fold_batch(self.store.engine, FOLD_BATCH)
                now = self.clock.now()
                if sampled != minute_of(now):
                    await samples.sample(self.store.engine, now)
                    sampled = minute_of(now)
                if forgotten is None or self.clock.monotonic() - forgotten > 600:
                    await forget_endings(self.store.engine, now)
                    await samples.forget(self.store.engine, now)
                    forgotten = self.clock.monotonic()
            except Exception:
                log.exception("fold failed")

    async def _retention(self) -> None:
        """Delete finished runs past the retention age, a small batch per transaction
        with a pause between batches, so the sweep never holds the hot path up."""
        batch = self.settings.retention_batch
        while True:
            await asyncio.sleep(self.settings.retention_interval * (0.5 + random.random()))
            try:
                cutoff = self.clock.now() - timedelta(days=self.settings.retention_days)
                deleted = batch
                total = 0
                while deleted == batch and not self.stopping.is_set():
                    deleted = await purge_batch(self.store.engine, cutoff, batch)
                    total += deleted
                    await asyncio.sleep(0.05)
                if total:
                    log.info("retention deleted finished runs", runs=total)
            except Exception:
                log.exception("retention sweep failed")

    async def _listen(self) -> None:
        import psycopg

        url = make_url(self.settings.direct_database_url).set(drivername="postgresql")
        conninfo = url.render_as_string(hide_password=False)
        while True:
            try:
                async with await psycopg.AsyncConnection.connect(conninfo, autocommit=True) as conn:
                    await conn.execute(f"LISTEN {NOTIFY_CHANNEL}")
                    await conn.execute(f"LISTEN {STOP_CHANNEL}")
                    woken = {b.channel: e for b, _, e in self.loops if b.channel is not None}
                    for channel in woken:  # (the features' background loops')
                        await conn.execute(f"LISTEN {channel}")
                    gates = self.driver.gates if self.driver is not None else ()
                    for gate in gates:  # (the gates' channels: keys a 429 slowed meanwhile)
                        if gate.channel is not None:
                            await conn.execute(f"LISTEN {gate.channel}")
                        await gate.catch_up(self.clock.now())
                    self.wake()  # catch up on what was queued meanwhile
                    for event in woken.values():
                        event.set()
                    for run_id in self.stops.held:  # (a stop missed meanwhile: ask now)
                        self.stops.signal(run_id)
                    async for notification in conn.notifies():
                        if notification.channel == STOP_CHANNEL:
                            self.stops.signal(notification.payload)
                        elif notification.channel in woken:
                            woken[notification.channel].set()
                        elif any(g.channel == notification.channel for g in gates):
                            for gate in gates:  # (a gate's: a 429 slowed keys)
                                if gate.channel == notification.channel:
                                    gate.heard(notification.payload)
                        else:
                            self.wake()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("LISTEN connection lost; reconnecting")
                await asyncio.sleep(1.0)
