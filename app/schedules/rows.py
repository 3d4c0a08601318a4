"""The SQL of `schedules` and `schedule_ticks`: a tenant's schedules, the due ones a
worker locks, and the ticks each recorded."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from app.core.lifecycle import NOT_RUN
from app.core.lifecycle import TickOutcome as O
from app.core.scope import Scope
from app.store.backend.base import Backend
from app.store.run_records import utc
from app.store.schema import ENDED_VALUES, runs, schedule_ticks, schedules
from app.store.scoping import within

s, tk = schedules, schedule_ticks


@dataclass(frozen=True, slots=True)
class ScheduleRecord:
    id: str
    tenant_id: str
    key: str
    spec: dict[str, Any]  # its fields as given (`app.schedules.specs.stored`)
    paused: bool
    note: str | None
    next_fire_at: datetime | None
    due_at: datetime | None
    buffered_time: datetime | None
    last_run_id: str | None
    version: int
    created_at: datetime
    created_by: str | None
    updated_at: datetime

    @classmethod
    def from_row(cls, m: Mapping[Any, Any]) -> ScheduleRecord:
        return cls(
            id=m["id"],
            tenant_id=m["tenant_id"],
            key=m["key"],
            spec=m["spec"],
            paused=bool(m["paused"]),
            note=m["note"],
            next_fire_at=utc(m["next_fire_at"]),
            due_at=utc(m["due_at"]),
            buffered_time=utc(m["buffered_time"]),
            last_run_id=m["last_run_id"],
            version=m["version"],
            created_at=utc(m["created_at"]),  # type: ignore[arg-type]
            created_by=m["created_by"],
            updated_at=utc(m["updated_at"]),  # type: ignore[arg-type]
        )


@dataclass(frozen=True, slots=True)
class TickRecord:
    scheduled_time: datetime
    source: str  # cron | trigger | backfill
    outcome: str  # started | skipped | buffered | missed | failed
    reason: str | None
    run_id: str | None
    count: int
    last_time: datetime | None
    recorded_at: datetime

    @classmethod
    def from_row(cls, m: Mapping[Any, Any]) -> TickRecord:
        return cls(
            scheduled_time=utc(m["scheduled_time"]),  # type: ignore[arg-type]
            source=m["source"],
            outcome=m["outcome"],
            reason=m["reason"],
            run_id=m["run_id"],
            count=m["count"],
            last_time=utc(m["last_time"]),
            recorded_at=utc(m["recorded_at"]),  # type: ignore[arg-type]
        )


@dataclass(frozen=True, slots=True)
class Pending:
    due: list[ScheduleRecord]
    buffered: list[ScheduleRecord]
    next_due: datetime | None  # the earliest due time (past: some are due now)


class ScheduleRows:
    """Reads and writes of the schedules' tables on one backend."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend

    # --- one schedule -------------------------------------------------------------------

    async def get(self, tenant: str, key: str) -> ScheduleRecord | None:
        return await self._one(s.c.tenant_id == tenant, s.c.key == key)

    async def by_id(self, schedule_id: str) -> ScheduleRecord | None:
        return await self._one(s.c.id == schedule_id)

    async def _one(self, *where: sa.ColumnElement[bool]) -> ScheduleRecord | None:
        async with self.backend.reader() as conn:
            row = (await conn.execute(s.select().where(*where))).mappings().first()
        return None if row is None else ScheduleRecord.from_row(row)

    async def page(self, scope: Scope, *, limit: int, after: str | None) -> list[ScheduleRecord]:
        stmt = s.select().where(*within(s.c.tenant_id, scope)).order_by(s.c.key, s.c.tenant_id)
        if after is not None:
            stmt = stmt.where(s.c.key > after)
        async with self.backend.reader() as conn:
            rows = (await conn.execute(stmt.limit(limit))).mappings().all()
        return [ScheduleRecord.from_row(r) for r in rows]

    async def insert(self, values: Mapping[str, Any]) -> bool:
        """False when the tenant has a schedule of this key."""
        stmt = self.backend.insert(s).values(dict(values)).on_conflict_do_nothing()
        async with self.backend.transaction() as conn:
            done = await conn.execute(stmt)
        return bool(done.rowcount)

    async def update(self, schedule_id: str, version: int, values: Mapping[str, Any]) -> bool:
        """Write `values` (and the next version) if the row is still at `version`."""
        stmt = (
            s.update()
            .where(s.c.id == schedule_id, s.c.version == version)
            .values({**values, "version": version + 1})
        )
        async with self.backend.transaction() as conn:
            done = await conn.execute(stmt)
        return bool(done.rowcount)

    async def delete(self, tenant: str, key: str) -> bool:
        """The schedule and its ticks (its runs stay, each naming it)."""
        async with self.backend.transaction() as conn:
            found = (
                await conn.execute(sa.select(s.c.id).where(s.c.tenant_id == tenant, s.c.key == key))
            ).first()
            if found is None:
                return False
            await conn.execute(tk.delete().where(tk.c.schedule_id == found[0]))
            await conn.execute(s.delete().where(s.c.id == found[0]))
        return True

    # --- the firing worker's ------------------------------------------------------------

    async def pending(self, now: datetime, limit: int) -> Pending:
        """What a firing pass has to do, in one read (on SQLite one transaction, which
        takes the database's write lock, not three): the unpaused schedules whose tick is
        due, the buffered ticks whose last run has ended (the run's end starts them; this
        finds what a crash between the two left), and when the next tick is due. Read
        without a lock: a firing locks each row again at the version read here."""
        due = (
            s.select()
            .where(s.c.due_at.is_not(None), s.c.due_at <= now, s.c.paused.is_(False))
            .order_by(s.c.due_at)
            .limit(limit)
        )
        ended = sa.select(runs.c.id).where(
            runs.c.id == s.c.last_run_id, runs.c.status.in_(ENDED_VALUES)
        )
        buffered = s.select().where(s.c.buffered_time.is_not(None), sa.exists(ended)).limit(limit)
        nxt = sa.select(sa.func.min(s.c.due_at)).where(
            s.c.due_at.is_not(None), s.c.paused.is_(False)
        )
        async with self.backend.reader() as conn:
            due_rows = (await conn.execute(due)).mappings().all()
            buffered_rows = (await conn.execute(buffered)).mappings().all()
            next_due = utc((await conn.execute(nxt)).scalar())
        return Pending(
            [ScheduleRecord.from_row(r) for r in due_rows],
            [ScheduleRecord.from_row(r) for r in buffered_rows],
            next_due,
        )

    async def lock(
        self, conn: AsyncConnection, schedule_id: str, version: int | None, *, skip: bool
    ) -> ScheduleRecord | None:
        """The row, locked for `conn`'s transaction; None when it is gone, moved past
        `version` (when given) or, with `skip`, locked by another worker."""
        stmt = s.select().where(s.c.id == schedule_id)
        if version is not None:
            stmt = stmt.where(s.c.version == version)
        stmt = self.backend.skip_locked(stmt) if skip else self.backend.for_update(stmt)
        row = (await conn.execute(stmt)).mappings().first()
        return None if row is None else ScheduleRecord.from_row(row)

    async def write(
        self, conn: AsyncConnection, record: ScheduleRecord, values: Mapping[str, Any]
    ) -> None:
        """(`conn` holds the row's lock.)"""
        stmt = (
            s.update().where(s.c.id == record.id).values({**values, "version": record.version + 1})
        )
        await conn.execute(stmt)

    @staticmethod
    async def run_open(conn: AsyncConnection, run_id: str | None) -> bool:
        """Whether the run exists and has not ended."""
        if run_id is None:
            return False
        stmt = sa.select(runs.c.status).where(runs.c.id == run_id)
        status = (await conn.execute(stmt)).scalar()
        return status is not None and status not in ENDED_VALUES

    async def add_tick(self, conn: AsyncConnection, values: Mapping[str, Any]) -> bool:
        """Record a tick; False when the schedule has one at this time already."""
        stmt = self.backend.insert(tk).values(dict(values)).on_conflict_do_nothing()
        return bool((await conn.execute(stmt)).rowcount)

    async def retake(self, conn: AsyncConnection, values: Mapping[str, Any]) -> bool:
        """Record a tick over its row if that says it did not run (missed, skipped,
        failed: a trigger or a backfill starts it); False when it started or is buffered."""
        stmt = (
            tk.update()
            .where(
                tk.c.schedule_id == values["schedule_id"],
                tk.c.scheduled_time == values["scheduled_time"],
                tk.c.outcome.in_(NOT_RUN),
            )
            .values({**values, "count": 1, "last_time": None})
        )
        return bool((await conn.execute(stmt)).rowcount)

    async def tick_source(self, schedule_id: str, when: datetime) -> str | None:
        stmt = sa.select(tk.c.source).where(
            tk.c.schedule_id == schedule_id, tk.c.scheduled_time == when
        )
        async with self.backend.reader() as conn:
            value = (await conn.execute(stmt)).scalar()
        return None if value is None else str(value)

    @staticmethod
    async def settle_buffered(
        conn: AsyncConnection,
        schedule_id: str,
        when: datetime,
        now: datetime,
        *,
        run_id: str | None,
        reason: str | None = None,
    ) -> bool:
        """The buffered tick `when` started `run_id` (None: failed for `reason`)."""
        stmt = (
            tk.update()
            .where(
                tk.c.schedule_id == schedule_id,
                tk.c.scheduled_time == when,
                tk.c.outcome == O.BUFFERED,
            )
            .values(
                outcome=O.STARTED if run_id else O.FAILED,
                run_id=run_id,
                reason=reason,
                recorded_at=now,
            )
        )
        return bool((await conn.execute(stmt)).rowcount)

    # --- ticks -------------------------------------------------------------------------

    async def prune(self, before: datetime, batch: int) -> int:
        """Delete up to `batch` tick rows recorded before `before` (never a buffered one:
        it is still to start); how many."""
        old = (
            sa.select(tk.c.schedule_id, tk.c.scheduled_time)
            .where(tk.c.recorded_at < before, tk.c.outcome != O.BUFFERED)
            .limit(batch)
        )
        async with self.backend.transaction() as conn:
            found = (await conn.execute(old)).all()
            for schedule_id, when in found:
                await conn.execute(
                    tk.delete().where(tk.c.schedule_id == schedule_id, tk.c.scheduled_time == when)
                )
        return len(found)

    async def ticks(
        self, schedule_id: str, *, limit: int, before: datetime | None
    ) -> list[TickRecord]:
        """A schedule's ticks, newest first."""
        stmt = tk.select().where(tk.c.schedule_id == schedule_id)
        if before is not None:
            stmt = stmt.where(tk.c.scheduled_time < before)
        stmt = stmt.order_by(tk.c.scheduled_time.desc()).limit(limit)
        async with self.backend.reader() as conn:
            rows = (await conn.execute(stmt)).mappings().all()
        return [TickRecord.from_row(r) for r in rows]
