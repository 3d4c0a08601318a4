"""Ticks become runs, exactly once: a tick's row (keyed by schedule and scheduled time)
and its run are inserted in one transaction that holds the schedule's row (`FOR UPDATE
SKIP LOCKED` on PostgreSQL: two workers never fire one schedule; SQLite's writers are
serialized), which also moves `next_fire_at` on. A worker killed mid-way leaves nothing:
the next pass fires the tick again. The runs are prepared (the create's own checks)
before the transaction, and a `cancel_other` cancel happens before it too, so nothing in
it waits on another connection."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import structlog
from sqlalchemy.ext.asyncio import AsyncConnection

from app import metrics
from app.core.lifecycle import TickOutcome as O
from app.core.scope import Scope
from app.schedules import plan
from app.schedules.cron import parse
from app.schedules.rows import ScheduleRecord, ScheduleRows
from app.schedules.specs import run_of, when
from app.service.errors import InvalidRequest, RunNotFound, RunStateConflict, ServiceError
from app.service.lineage import SCHEDULE_KEY
from app.service.new_runs import Prepared
from app.service.runs import RunService
from app.store.backend.base import Wake
from app.timestamps import iso

log = structlog.get_logger("agentrun.schedules")


@dataclass(frozen=True, slots=True)
class Tick:
    """A tick to handle: its scheduled time, where it came from, its prepared run (or why
    none could be: the run body is refused now, e.g. its agent was deleted)."""

    time: datetime
    source: str  # cron | trigger | backfill
    run: Prepared | str


@dataclass(frozen=True, slots=True)
class Outcome:
    scheduled_time: datetime
    outcome: str  # started | skipped | buffered | failed | exists
    run_id: str | None = None
    reason: str | None = None


@dataclass
class _State:
    """The schedule's overlap state as the transaction moves it."""

    last_run_id: str | None
    buffered: datetime | None
    wakes: list[Wake] = field(default_factory=list)
    started: int = 0


def bounds_of(spec: dict[str, Any]) -> plan.Window:
    return plan.Window(when(spec.get("start_at")), when(spec.get("end_at")))


def actor_of(record: ScheduleRecord) -> str:
    return f"schedule:{record.key}"


class Firer:
    """Fires schedules (the workers' loop, `app.schedules.loop`) and starts the runs of
    a trigger, a backfill and a buffered tick (the service)."""

    def __init__(self, runs: RunService, rows: ScheduleRows) -> None:
        self.runs = runs
        self.rows = rows
        self.store = runs.store
        #: The earliest due time the last pass read (before it fired).
        self.next_due: datetime | None = None

    # --- the cron's ticks ---------------------------------------------------------------

    async def fire_due(self, now: datetime, limit: int = 20) -> list[Outcome]:
        """Fire every due schedule (a batch), and start the buffered ticks whose last run
        has ended; what the ticks became."""
        return (await self.pass_at(now, limit))[0]

    async def pass_at(self, now: datetime, limit: int = 20) -> tuple[list[Outcome], bool]:
        """A firing pass (`fire_due`): what the ticks became, and whether more may be due
        (the batch was full, or due times are past) rather than only later ones."""
        pending = await self.rows.pending(now, limit)
        out: list[Outcome] = []
        for record in pending.due:
            try:
                out.extend(await self.fire(record, now))
            except Exception:
                log.exception("schedule firing failed", schedule=record.key)
        for record in pending.buffered:
            try:
                out.extend(await self.release(record, now))
            except Exception:
                log.exception("buffered tick failed", schedule=record.key)
        self.next_due = pending.next_due
        return out, bool(pending.due or pending.buffered)

    async def fire(self, record: ScheduleRecord, now: datetime) -> list[Outcome]:
        """Handle `record`'s due ticks (as read, at its version: a worker that finds the
        row locked or moved on leaves it)."""
        spec = record.spec
        if record.next_fire_at is None:
            return []
        cron = parse(spec["cron"], spec["timezone"])
        jitter = spec.get("jitter_seconds") or 0
        due = plan.due(
            cron,
            record.next_fire_at,
            now,
            catchup=spec["catchup"],
            window_seconds=spec["catchup_window_seconds"],
            bounds=bounds_of(spec),
            jitter=lambda t: (plan.due_at(record.id, t, jitter) or t) - t,
        )
        if due.fire and spec["overlap"] == "cancel_other":
            await self.cancel_last(record)
        waiting = await self._buffered(record, now)
        superseded: list[datetime] = []
        if spec["overlap"] == "cancel_other":  # (each would cancel the one before it)
            superseded, due = due.fire[:-1], dataclasses.replace(due, fire=due.fire[-1:])
        ticks = [Tick(t, "cron", await self.prepare(record, t, "cron", now)) for t in due.fire]
        nxt = due.next_fire_at
        state = _State(record.last_run_id, record.buffered_time)
        outcomes: list[Outcome] = []
        async with self.store.backend.transaction() as conn:
            locked = await self.rows.lock(conn, record.id, record.version, skip=True)
            if locked is None:
                return []
            for missed in due.missed:
                await self.rows.add_tick(
                    conn,
                    tick_row(record, missed.first, "cron", now, O.MISSED, missed.reason)
                    | {"count": missed.count, "last_time": missed.last},
                )
            for t in superseded:
                row = tick_row(record, t, "cron", now, O.SKIPPED, "superseded")
                if await self.rows.add_tick(conn, row):
                    outcomes.append(Outcome(t, O.SKIPPED, reason="superseded"))
            if waiting is not None:  # (its run ended, and the hook has not started it yet)
                released = await self._release(conn, record, waiting, state, now)
                outcomes += [] if released is None else [released]
            for tick in ticks:
                outcomes.append(await self._handle(conn, record, tick, spec["overlap"], state, now))
            await self.rows.write(
                conn,
                locked,
                {
                    "next_fire_at": nxt,
                    "due_at": plan.due_at(record.id, nxt, jitter),
                    "last_run_id": state.last_run_id,
                    "buffered_time": state.buffered,
                    "updated_at": now,
                },
            )
        self._committed(state, outcomes, due.missed, now, lag=set(due.fire))
        return outcomes

    # --- a trigger's, a backfill's and a buffered tick's --------------------------------

    async def start(
        self, record: ScheduleRecord, times: Sequence[datetime], source: str, overlap: str
    ) -> list[Outcome]:
        """Start the ticks `times` now (a trigger's one, a backfill's), under `overlap`,
        waiting for the schedule's row if a worker holds it; a refused run body raises
        (nothing is written). A tick recorded as missed, skipped or failed is started (its
        row retaken); one that started or is buffered is left (`exists`)."""
        now = self.runs.clock.now()
        ticks = []
        for t in times:
            prepared = await self.prepare(record, t, source, now)
            if isinstance(prepared, str):
                raise _refusal(prepared)
            ticks.append(Tick(t, source, prepared))
        if ticks and overlap == "cancel_other":
            await self.cancel_last(record)
        outcomes: list[Outcome] = []
        async with self.store.backend.transaction() as conn:
            locked = await self.rows.lock(conn, record.id, None, skip=False)
            if locked is None:
                return []
            state = _State(locked.last_run_id, locked.buffered_time)
            for tick in ticks:
                outcomes.append(await self._handle(conn, locked, tick, overlap, state, now))
            await self.rows.write(
                conn,
                locked,
                {
                    "last_run_id": state.last_run_id,
                    "buffered_time": state.buffered,
                    "updated_at": now,
                },
            )
        self._committed(state, outcomes, (), now)
        return outcomes

    async def release(self, record: ScheduleRecord, now: datetime) -> list[Outcome]:
        """Start `record`'s buffered tick if its last run has ended."""
        waiting = await self._buffered(record, now)
        if waiting is None:
            return []
        state = _State(record.last_run_id, record.buffered_time)
        async with self.store.backend.transaction() as conn:
            locked = await self.rows.lock(conn, record.id, record.version, skip=True)
            if locked is None:
                return []
            released = await self._release(conn, record, waiting, state, now)
            if state.buffered is not None:
                return []
            await self.rows.write(
                conn,
                locked,
                {
                    "last_run_id": state.last_run_id,
                    "buffered_time": state.buffered,
                    "updated_at": now,
                },
            )
        done = [] if released is None else [released]
        self._committed(state, done, (), now)
        return done

    async def _buffered(self, record: ScheduleRecord, now: datetime) -> Tick | None:
        """The buffered tick, its run prepared (with the source its row records)."""
        if record.buffered_time is None:
            return None
        when = record.buffered_time
        source = await self.rows.tick_source(record.id, when) or "cron"
        return Tick(when, source, await self.prepare(record, when, source, now))

    async def _release(
        self,
        conn: AsyncConnection,
        record: ScheduleRecord,
        tick: Tick,
        state: _State,
        now: datetime,
    ) -> Outcome | None:
        """Start the buffered `tick` in the firing's transaction if the last run has
        ended (then the schedule holds no buffered tick any more); None when it has not,
        or when the tick's row is not buffered any more (nothing to start)."""
        if await self.rows.run_open(conn, state.last_run_id):
            return None
        state.buffered = None
        if isinstance(tick.run, str):
            failed = await self.rows.settle_buffered(
                conn, record.id, tick.time, now, run_id=None, reason=tick.run
            )
            return Outcome(tick.time, O.FAILED, reason=tick.run) if failed else None
        run_id = tick.run.values["id"]
        if not await self.rows.settle_buffered(conn, record.id, tick.time, now, run_id=run_id):
            return None
        state.wakes += await self.store.create_joined(conn, tick.run.run, now)
        state.last_run_id = run_id
        state.started += 1
        return Outcome(tick.time, O.STARTED, run_id)

    async def run_ended(self, schedule_id: str, now: datetime) -> None:
        """A run a schedule started has ended: its buffered tick, if any, starts."""
        record = await self.rows.by_id(schedule_id)
        if record is not None and record.buffered_time is not None:
            await self.release(record, now)

    # --- helpers ------------------------------------------------------------------------

    async def prepare(
        self, record: ScheduleRecord, time: datetime, source: str, now: datetime
    ) -> Prepared | str:
        """The tick's run, checked as a create checks it; the refusal's text if refused."""
        mark = {"id": record.id, "key": record.key, "scheduled_time": iso(time), "source": source}
        try:
            return await self.runs.prepare(
                run_of(record.spec),
                actor=actor_of(record),
                tenant=record.tenant_id,
                marks={SCHEDULE_KEY: mark},
            )
        except ServiceError as exc:
            return f"the run was refused: {exc.detail}"

    async def cancel_last(self, record: ScheduleRecord) -> None:
        """`cancel_other`: the schedule's last run, cancelled as a client's cancel would
        (before the firing transaction: the cancel writes on its own connection)."""
        if record.last_run_id is None:
            return
        try:
            await self.runs.cancel(
                record.last_run_id, actor=actor_of(record), scope=Scope.of(record.tenant_id)
            )
        except (RunStateConflict, RunNotFound):
            pass  # (it ended, or was purged)

    async def _handle(
        self,
        conn: AsyncConnection,
        record: ScheduleRecord,
        tick: Tick,
        overlap: str,
        state: _State,
        now: datetime,
    ) -> Outcome:
        """One tick, in the firing's transaction: recorded once (a tick recorded already
        is `exists`), its run started with it, or skipped or buffered by `overlap`."""
        if isinstance(tick.run, str):
            row = tick_row(record, tick.time, tick.source, now, O.FAILED, tick.run)
            done = await self.rows.add_tick(conn, row)
            return Outcome(tick.time, O.FAILED if done else O.EXISTS, reason=tick.run)
        running = await self.rows.run_open(conn, state.last_run_id)
        action = plan.on_overlap(overlap, running, state.buffered)
        if action in (plan.SKIP, plan.BUFFER):
            buffered = action == plan.BUFFER
            reason = "buffer_full" if overlap == "buffer_one" else "overlap"
            outcome = O.BUFFERED if buffered else O.SKIPPED
            row = tick_row(
                record, tick.time, tick.source, now, outcome, None if buffered else reason
            )
            if not await self.rows.add_tick(conn, row | {"run_id": state.last_run_id}):
                return Outcome(tick.time, O.EXISTS)
            if buffered:
                state.buffered = tick.time
            return Outcome(tick.time, outcome, state.last_run_id, None if buffered else reason)
        run_id = tick.run.values["id"]
        row = tick_row(record, tick.time, tick.source, now, O.STARTED, None) | {"run_id": run_id}
        if not await self.rows.add_tick(conn, row) and (
            tick.source == "cron" or not await self.rows.retake(conn, row)
        ):
            return Outcome(tick.time, O.EXISTS)
        state.wakes += await self.store.create_joined(conn, tick.run.run, now)
        state.last_run_id = run_id
        state.started += 1
        return Outcome(tick.time, O.STARTED, run_id)

    def _committed(
        self,
        state: _State,
        outcomes: Sequence[Outcome],
        missed: Sequence[plan.Missed],
        now: datetime,
        lag: set[datetime] | frozenset[datetime] = frozenset(),
    ) -> None:
        """After the commit: the runs' wake-ups and the metrics (`lag`: the cron's ticks
        this pass started on their own time, whose delay the lag histogram observes)."""
        self.store.created(state.started, state.wakes)
        for o in outcomes:
            if o.outcome != O.EXISTS:
                metrics.SCHEDULE_TICKS.labels(o.outcome).inc()
            if o.outcome == O.STARTED and o.scheduled_time in lag:
                metrics.SCHEDULE_LAG.observe(max(0.0, (now - o.scheduled_time).total_seconds()))
        for m in missed:
            metrics.SCHEDULE_TICKS.labels(O.MISSED).inc(m.count)


def tick_row(
    record: ScheduleRecord,
    time: datetime,
    source: str,
    now: datetime,
    outcome: str,
    reason: str | None,
) -> dict[str, Any]:
    return {
        "schedule_id": record.id,
        "scheduled_time": time,
        "tenant_id": record.tenant_id,
        "source": source,
        "outcome": outcome,
        "reason": reason,
        "recorded_at": now,
    }


def _refusal(text: str) -> ServiceError:
    return InvalidRequest(text.replace("the run was refused: ", "run: ", 1))
