"""The store's extension points: where a feature plugs into a run's writes without the
store (or any of its callers) knowing the feature exists, as Temporal's interceptors do.

- `run_ended`: called once a write that ended a run has committed, whoever wrote it (a
  worker's final write, a cancel, a resolution, the expiry sweep), with the run as
  written. A feature that reacts to a run's end (a conversation's next run starting)
  registers here instead of being called by hand after each of those writes.
- `sweeps`: periodic work a feature needs done by some worker (the runs a crash left
  waiting, approvals past their deadline), run by each worker's reaper at the sweep's
  period; what a sweep did is logged with its name.
- `model_gates`: makers of the gates each driver asks before a model call and tells after
  it (`app.worker.gates`: go, defer, suspend; usage, a 429, release), called with the
  driver's `(settings, clock, profiles)`. Typed as `ModelGate` there: the store sits below
  the worker. Budgets and shared limits (`app.limits`) register here.

A hook runs after the commit, so it cannot undo the write; a hook that fails is logged
and the next hook still runs (a feature keeps a sweep for what a crash between the
commit and its hook leaves undone). With nothing registered a write pays one truth test.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

import structlog

from app.store.records import RunRecord

log = structlog.get_logger("agentrun.store")

#: `(the run as its ending write left it, the write's time)`.
RunEnded = Callable[[RunRecord, datetime], Awaitable[object]]
#: `(settings, clock, profiles) -> the gates of one driver` (`app.worker.gates.ModelGate`).
GateMaker = Callable[..., Sequence[object]]


@dataclass(frozen=True)
class Sweep:
    """Periodic work of a feature: `run(now)` returns the ids of the runs it moved on."""

    name: str  # (what the log says it did: "approvals timed out")
    run: Callable[[datetime], Awaitable[Sequence[str]]]
    every: float | None = None  # seconds between two runs; None: at every reap


class Hooks:
    """The hooks registered on one store (the composition root registers the features')."""

    def __init__(self) -> None:
        self.run_ended: tuple[RunEnded, ...] = ()
        self.sweeps: tuple[Sweep, ...] = ()
        self.model_gates: tuple[GateMaker, ...] = ()

    def on_run_ended(self, hook: RunEnded) -> None:
        self.run_ended = (*self.run_ended, hook)

    def add_sweep(self, sweep: Sweep) -> None:
        self.sweeps = (*self.sweeps, sweep)

    def add_model_gates(self, maker: GateMaker) -> None:
        self.model_gates = (*self.model_gates, maker)

    async def ended(self, records: list[RunRecord], now: datetime) -> None:
        """Tell every `run_ended` hook of each of `records` (runs a write just ended)."""
        for record in records:
            for hook in self.run_ended:
                try:
                    await hook(record, now)
                except Exception:
                    log.exception("run_ended hook failed", run_id=record.id)
