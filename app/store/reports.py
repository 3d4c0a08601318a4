"""Read-only report queries, so their SQL stays in the store: the dashboard's figures
(suspension times, age buckets, last-hour activity, a run's ledger), runs counted by
status and queue depth; the runs list's pages are `app.store.run_pages`', /metrics reads
`app.store.gauges`.

Each reads an index or a rollup (app.store.fold), so its cost does not grow with the
finished runs kept: counts and activity add the rollups to the runs not folded yet,
suspended runs are read by their status's index. tests/store/test_report_plans.py
EXPLAINs them on a seeded database."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from app.core.lifecycle import RunStatus
from app.core.scope import Scope
from app.store.backend.dialect_forms import forms_for
from app.store.fold import minute_of
from app.store.schema import (
    IS_WAITING,
    QUEUED,
    RUNNING,
    SUSPENDED,
    model_calls,
    run_counts,
    run_endings,
    runs,
    unfolded_runs,
)
from app.store.scoping import within

#: Upper bounds (seconds) and labels of the suspended-age histogram.
AGE_BUCKETS: tuple[tuple[float, str], ...] = (
    (60, "<1m"),
    (5 * 60, "1–5m"),
    (15 * 60, "5–15m"),
    (3600, "15m–1h"),
    (6 * 3600, "1–6h"),
    (24 * 3600, "6–24h"),
    (float("inf"), ">1d"),
)


@contextlib.asynccontextmanager
async def reading(engine: AsyncEngine) -> AsyncIterator[AsyncConnection]:
    """A connection for a report's reads (by index: `Forms.by_index`)."""
    async with engine.connect() as conn:
        await forms_for(conn).by_index(conn)
        yield conn


async def suspended_since(engine: AsyncEngine, run_ids: Sequence[str]) -> dict[str, datetime]:
    """When each run last suspended (`suspended_at`, by primary key)."""
    if not run_ids:
        return {}
    stmt = sa.select(runs.c.id, runs.c.suspended_at).where(
        runs.c.id.in_(list(run_ids)), runs.c.suspended_at.is_not(None)
    )
    async with reading(engine) as conn:
        rows = (await conn.execute(stmt)).all()
    out: dict[str, datetime] = {}
    for run_id, at in rows:
        when = _as_datetime(at)
        if when is not None:
            out[run_id] = when
    return out


def _of(scope: Scope, table: sa.Table = runs) -> list[Any]:
    return list(within(table.c.tenant_id, scope))


def suspended_query(scope: Scope) -> sa.Select[Any]:
    """Each suspended run's last change and when it last suspended, by the status's
    index (ix_runs_expiry; a tenant's: by ix_runs_waiting)."""
    return sa.select(runs.c.updated_at, runs.c.suspended_at.label("at")).where(
        SUSPENDED, *_of(scope)
    )


async def suspended_ages(engine: AsyncEngine, now: datetime, scope: Scope) -> list[float]:
    """Seconds each suspended run has been waiting (since it suspended, else updated)."""
    async with reading(engine) as conn:
        rows = (await conn.execute(suspended_query(scope))).all()
    ages = []
    for updated_at, at in rows:
        since = _as_datetime(at) or _as_datetime(updated_at)
        if since is not None:
            ages.append(max(0.0, (now - since).total_seconds()))
    return ages


def counts_query(scope: Scope) -> Any:
    """Rows (status, n) whose sums per status are the runs stored in it: waiting and
    running runs by their indexes, finished ones from `run_counts` plus those not folded
    yet (`unfolded_runs`). Of the runs in `scope`."""
    n, mine = sa.func.count(), _of(scope)
    pending = unfolded_runs.c
    return sa.union_all(
        sa.select(runs.c.status, n).where(IS_WAITING, *mine).group_by(runs.c.status),
        sa.select(sa.literal(RunStatus.RUNNING.value), n).select_from(runs).where(RUNNING, *mine),
        sa.select(run_counts.c.status, run_counts.c.runs).where(*_of(scope, run_counts)),
        sa.select(pending.status, n)
        .where(pending.counts, *_of(scope, unfolded_runs))
        .group_by(pending.status),
    )


async def count_by_status(engine: AsyncEngine, scope: Scope) -> dict[str, int]:
    """Stored runs by status (statuses with none left out), of the runs in `scope`."""
    out: dict[str, int] = {}
    async with reading(engine) as conn:
        rows = (await conn.execute(counts_query(scope))).all()
    for status, n in rows:
        out[status] = out.get(status, 0) + int(n)
    return {status: n for status, n in out.items() if n}


def depth_query(now: datetime) -> sa.Select[Any]:
    """Queued runs that are due (ix_runs_claim)."""
    return sa.select(sa.func.count()).where(QUEUED, runs.c.available_at <= now)


async def queue_depth(engine: AsyncEngine, now: datetime) -> int:
    async with reading(engine) as conn:
        return int((await conn.execute(depth_query(now))).scalar_one())


def age_histogram(ages: Sequence[float]) -> list[tuple[str, int]]:
    counts = [0] * len(AGE_BUCKETS)
    for age in ages:
        for i, (bound, _) in enumerate(AGE_BUCKETS):
            if age < bound:
                counts[i] += 1
                break
    return [(label, counts[i]) for i, (_, label) in enumerate(AGE_BUCKETS)]


@dataclass(frozen=True, slots=True)
class Activity:
    """Runs that ended in the window, by status, and completions per minute."""

    window_minutes: int
    ended: dict[str, int]
    completed_per_minute: list[int]  # oldest minute first

    @property
    def completed(self) -> int:
        return self.ended.get(RunStatus.COMPLETED.value, 0)

    @property
    def failed(self) -> int:
        return self.ended.get(RunStatus.FAILED.value, 0)

    @property
    def throughput(self) -> float:
        """Completed runs per minute, averaged over the window."""
        return self.completed / self.window_minutes

    @property
    def error_rate(self) -> float | None:
        """Failed among the runs that completed or failed in the window (None: no runs)."""
        finished = self.completed + self.failed
        return self.failed / finished if finished else None


def activity_query(since: datetime, scope: Scope) -> Any:
    """Rows (status, when, runs) of the runs that ended at or after `since` (a whole
    minute): folded runs per minute (`run_endings`), the rest one by one
    (`unfolded_runs`); of the runs in `scope`."""
    pending = unfolded_runs.c
    return sa.union_all(
        sa.select(run_endings.c.status, run_endings.c.minute, run_endings.c.runs).where(
            run_endings.c.minute >= since, *_of(scope, run_endings)
        ),
        sa.select(pending.status, pending.ended_at, sa.literal(1)).where(
            pending.counts, pending.ended_at >= since, *_of(scope, unfolded_runs)
        ),
    )


async def activity(engine: AsyncEngine, now: datetime, scope: Scope, minutes: int = 60) -> Activity:
    """The last `minutes` whole minutes (the current one so far included): a finished
    run ended when the change that finished it was written."""
    since = minute_of(now) - timedelta(minutes=minutes - 1)
    ended: dict[str, int] = {}
    per_minute = [0] * minutes
    async with reading(engine) as conn:
        rows = (await conn.execute(activity_query(since, scope))).all()
    for status, at, n in rows:
        when = _as_datetime(at)
        if when is None:
            continue
        ended[status] = ended.get(status, 0) + int(n)
        if status == RunStatus.COMPLETED.value:
            index = int((when - since).total_seconds() // 60)
            per_minute[min(max(index, 0), minutes - 1)] += int(n)
    return Activity(minutes, ended, per_minute)


def _as_datetime(value: Any) -> datetime | None:
    """Aggregates over timestamps come back as strings on SQLite."""
    if value is None:
        return None
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    if not isinstance(value, datetime):
        return None
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


async def run_ledger(engine: AsyncEngine, run_id: str) -> dict[str, Any]:
    """The run's usage-ledger totals: every model call attempt, and its cost if priced."""
    stmt = sa.select(
        sa.func.count().label("calls"),
        sa.func.count().filter(model_calls.c.outcome == "error").label("failed_calls"),
        sa.func.sum(model_calls.c.cost_usd).label("cost_usd"),
    ).where(model_calls.c.run_id == run_id)
    async with reading(engine) as conn:
        row = (await conn.execute(stmt)).one()
    return {
        "calls": int(row.calls),
        "failed_calls": int(row.failed_calls),
        "cost_usd": None if row.cost_usd is None else float(row.cost_usd),
    }
