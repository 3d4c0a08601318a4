"""Stop signals: a run that leaves a worker's hands mid-call stops the call within a second.

Whatever ends a worker's claim from elsewhere (a cancel; the reaper re-queuing a run whose
lease lapsed) is a write the holder would otherwise notice only at its next heartbeat, a
third of the lease (10 s by default) later, its model connection open all the while. So
each model call a worker holds is watched (`Stops.watch`) while it runs, and:

- PostgreSQL: such a write sends a NOTIFY on `agentrun_stop` with the run's id once it
  commits (`app.store.changes.Change.stops`); the worker process LISTENs on the one
  connection it already holds for wake-ups (`Worker._listen`) and signals the call that
  watches that run (`Stops.signal`).
- SQLite (one machine, no NOTIFY): while at least one call is held, one statement per
  worker process every `AGENTRUN_STOP_POLL_INTERVAL` reads the fencing tokens of the runs
  it holds (`RunStore.fences`) and signals those that moved on (`Stops.poll`); with no call
  in flight it reads nothing.

A signal for a run with no call held is kept (the last `EARLY_KEPT`): a run this worker
has claimed but not started calling the model for checks at its call's first moment.
A signal is a hint, not a verdict: the lease (`app.worker.lease.Lease.hold`) answers it
with a heartbeat at once, and only a refused heartbeat abandons the call (`LeaseLost`); a
NOTIFY meant for an earlier claim of the same run costs one heartbeat and nothing else.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Iterator, Sequence

import structlog

log = structlog.get_logger("agentrun.worker")

#: Signals kept for runs with no call held (most are other workers' runs).
EARLY_KEPT = 1024
#: Reads the fencing token of each given run that is still running (`RunStore.fences`).
Fences = Callable[[Sequence[str]], Awaitable[dict[str, int]]]


class Watch:
    """One held model call: its run's fencing token, and a future resolved by a stop
    signal (a plain future, not a task: holding a call costs no more than that)."""

    __slots__ = ("signalled", "version")

    def __init__(self, version: int) -> None:
        self.version = version
        self.signalled: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def signal(self) -> None:
        if not self.signalled.done():
            self.signalled.set_result(None)

    def rearm(self) -> None:
        """After a false alarm (the heartbeat was accepted): watch again."""
        if self.signalled.done():
            self.signalled = asyncio.get_running_loop().create_future()


class Stops:
    """The model calls one worker process holds, by run id, each with its stop signal."""

    def __init__(self) -> None:
        self._held: dict[str, Watch] = {}
        # Runs signalled while no call of theirs was held (a run claimed, not yet calling
        # the model): the next call of such a run asks the database at once.
        self._early: dict[str, None] = {}
        self._busy: asyncio.Event | None = None  # a call is held (the poll looks)
        self.polls = 0  # statements the poll ran (tests count them)

    def _busy_event(self) -> asyncio.Event:
        if self._busy is None:
            self._busy = asyncio.Event()
        return self._busy

    @contextlib.contextmanager
    def watch(self, run_id: str, version: int) -> Iterator[Watch]:
        """Hold a model call of run `run_id` under fencing token `version`: its watch is
        signalled when the run may have left this worker (then ask the database)."""
        watch = Watch(version)
        if self._early and run_id in self._early:
            del self._early[run_id]
            watch.signal()
        self._held[run_id] = watch
        if self._busy is not None:
            self._busy.set()
        try:
            yield watch
        finally:
            if self._held.get(run_id) is watch:
                del self._held[run_id]
            if not self._held and self._busy is not None:
                self._busy.clear()

    def signal(self, run_id: str) -> None:
        """The run may have left this worker's hands (a NOTIFY said so)."""
        watch = self._held.get(run_id)
        if watch is not None:
            watch.signal()
            return
        self._early[run_id] = None
        if len(self._early) > EARLY_KEPT:  # (the oldest: long since claimed by others)
            del self._early[next(iter(self._early))]

    @property
    def held(self) -> dict[str, int]:
        """Run id -> fencing token of each call held now."""
        return {run_id: watch.version for run_id, watch in self._held.items()}

    async def poll(self, fences: Fences, interval: float) -> None:
        """Forever: while calls are held, every `interval` one read of their runs'
        fencing tokens; signal the calls whose run moved on (for back ends without
        NOTIFY)."""
        busy = self._busy_event()
        if self._held:
            busy.set()
        while True:
            await busy.wait()
            await asyncio.sleep(interval)
            held = dict(self._held)
            if not held:
                continue
            self.polls += 1
            try:
                current = await fences(list(held))
            except Exception:  # the database may blip: the heartbeat still notices
                log.warning("stop poll failed", exc_info=True)
                continue
            for run_id, watch in held.items():
                if current.get(run_id) != watch.version:
                    watch.signal()
