"""Schedules: runs the clock starts, exactly once per tick across every worker (`cron`:
expressions in a zone; `specs`: the bodies; `plan`: what due ticks become, without IO;
`rows`: the SQL; `firing`: ticks into runs under the row's lock; `service`: the
operations; `loop`: each worker's firing loop; `routes`: the HTTP routes, mounted by the
composition root). The kernel knows none of it: `install` plugs it into the store's
extension points (`app.store.hooks`)."""

from __future__ import annotations

from datetime import datetime, timedelta

from app.clock import Clock
from app.schedules.firing import Firer
from app.schedules.loop import SCHEDULES_CHANNEL, FiringLoop
from app.schedules.rows import ScheduleRows
from app.schedules.service import ScheduleService
from app.service.lineage import SCHEDULE_KEY
from app.service.runs import RunService
from app.settings import Settings
from app.store.hooks import Background, Sweep
from app.store.run_records import RunRecord


def schedule_service(runs: RunService) -> ScheduleService:
    """The schedules of `runs`' store (its writes wake the workers' firing loops)."""
    rows = ScheduleRows(runs.store.backend)
    backend = runs.store.backend

    def wake() -> None:
        backend.wake([(SCHEDULES_CHANNEL, "")])

    return ScheduleService(runs, rows, Firer(runs, rows), runs.clock, wake)


def install(runs: RunService) -> None:
    """Plug schedules into `runs`' store: each worker runs a firing loop (`background`,
    woken by a schedule's write); a scheduled run's end starts its schedule's buffered
    tick (`run_ended`; the loop finds what a crash in between left); tick rows older than
    the runs' retention (`AGENTRUN_RETENTION_DAYS`) are deleted by an hourly sweep."""
    store = runs.store
    firer = Firer(runs, ScheduleRows(store.backend))

    async def open_loop(worker_id: str, settings: Settings, clock: Clock) -> FiringLoop:
        worker_runs = RunService(store, settings, clock)
        return FiringLoop(
            Firer(worker_runs, firer.rows), clock, settings.poll_interval, store.notifies
        )

    async def ended(record: RunRecord, now: datetime) -> None:
        mark = record.config.get(SCHEDULE_KEY)
        if isinstance(mark, dict) and isinstance(mark.get("id"), str):
            await firer.run_ended(mark["id"], now)

    async def prune(now: datetime) -> list[str]:
        """Tick rows older than the runs' retention go as the runs do."""
        if runs.settings.retention_days > 0:
            cutoff = now - timedelta(days=runs.settings.retention_days)
            while await firer.rows.prune(cutoff, runs.settings.retention_batch):
                pass
        return []

    store.hooks.add_background(Background("schedules", open_loop, SCHEDULES_CHANNEL))
    store.hooks.on_run_ended(ended)
    store.hooks.add_sweep(Sweep("schedule ticks pruned", prune, every=3600.0))
