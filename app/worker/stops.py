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

#: Reads the fencing token of each given run that is still running (`RunStore.fences`).
Fences = Callable[[Sequence[str]], Awaitable[dict[str, int]]]


class Stops:
    """The model calls one worker process holds, by run id, each with its stop signal."""

    def __init__(self) -> None:
        self._held: dict[str, tuple[int, asyncio.Event]] = {}
        self._busy = asyncio.Event()  # at least one call is held (the poll looks)
        self.polls = 0  # statements the poll ran (tests count them)

    @contextlib.contextmanager
    def watch(self, run_id: str, version: int) -> Iterator[asyncio.Event]:
        """Hold a model call of run `run_id` under fencing token `version`: the event is
        set when the run may have left this worker (then ask the database)."""
        event = asyncio.Event()
        self._held[run_id] = (version, event)
        self._busy.set()
        try:
            yield event
        finally:
            held = self._held.get(run_id)
            if held is not None and held[1] is event:
                del self._held[run_id]
            if not self._held:
                self._busy.clear()

    def signal(self, run_id: str) -> None:
        """The run may have left this worker's hands (a NOTIFY said so)."""
        held = self._held.get(run_id)
        if held is not None:
            held[1].set()

    @property
    def held(self) -> dict[str, int]:
        """Run id -> fencing token of each call held now."""
        return {run_id: version for run_id, (version, _) in self._held.items()}

    async def poll(self, fences: Fences, interval: float) -> None:
        """Forever: while calls are held, every `interval` one read of their runs'
        fencing tokens; signal the calls whose run moved on (for back ends without
        NOTIFY)."""
        while True:
            await self._busy.wait()
            await asyncio.sleep(interval)
            held = dict(self._held)
            if not held:
                continue
            try:
                current = await fences(list(held))
            except Exception:  # the database may blip: the heartbeat still notices
                log.warning("stop poll failed", exc_info=True)
                continue
            finally:
                self.polls += 1
            for run_id, (version, event) in held.items():
                if current.get(run_id) != version:
                    event.set()
