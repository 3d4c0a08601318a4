"""Read-only report queries, so their SQL stays in the store: the dashboard's pages
(filtered keyset pages, suspension times, age buckets, last-hour activity); /metrics reads
`app.store.gauges`."""

from __future__ import annotations

import base64
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from app.core.events import EventType as E
from app.core.lifecycle import RunStatus
from app.store.records import RunRecord, utc
from app.store.schema import (
    created_beyond,
    model_calls,
    newest_first,
    oldest_first,
    run_configs,
    run_events,
    runs,
    select_runs,
)

#: Statuses listed oldest first (they are waiting for something); the rest newest first.
WAITING = frozenset({RunStatus.REQUIRES_ACTION, RunStatus.QUEUED, RunStatus.RUNNING})

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


class BadCursor(ValueError):
    pass


@dataclass(frozen=True, slots=True)
class RunFilter:
    status: RunStatus | None = RunStatus.REQUIRES_ACTION
    provider: str | None = None
    meta_key: str | None = None
    meta_value: str | None = None

    @property
    def ascending(self) -> bool:
        return self.status in WAITING


def encode_cursor(created_at: datetime, run_id: str) -> str:
    raw = f"{created_at.isoformat()}|{run_id}".encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[datetime, str]:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        created, run_id = raw.split("|", 1)
        value = utc(datetime.fromisoformat(created))
    except (ValueError, UnicodeDecodeError):
        raise BadCursor("the cursor is malformed") from None
    assert value is not None
    return value, run_id


def _conditions(f: RunFilter) -> list[sa.ColumnElement[bool]]:
    where: list[sa.ColumnElement[bool]] = []
    if f.status is not None:
        where.append(runs.c.status == f.status.value)
    if f.provider:
        where.append(run_configs.c.config[("model", "provider")].as_string() == f.provider)
    if f.meta_key:
        value = run_configs.c.metadata[f.meta_key]
        if f.meta_value is None:
            where.append(value.as_string().is_not(None))
        else:
            # JSON strings and scalars alike: compare the text of the value.
            where.append(sa.cast(value.as_string(), sa.String) == f.meta_value)
    return where


async def page_of_runs(
    engine: AsyncEngine, f: RunFilter, *, limit: int, cursor: str | None
) -> tuple[list[RunRecord], str | None]:
    """One keyset page on (created_at, id): oldest first for waiting statuses, newest
    first otherwise; the cursor of the next page, or None on the last one."""
    stmt = select_runs().where(*_conditions(f)).limit(limit + 1)
    stmt = stmt.order_by(*(oldest_first() if f.ascending else newest_first()))
    if cursor:
        created, run_id = decode_cursor(cursor)
        stmt = stmt.where(created_beyond(created, run_id, ascending=f.ascending))
    async with engine.connect() as conn:
        rows = (await conn.execute(stmt)).all()
    records = [RunRecord.from_row(r) for r in rows]
    more = len(records) > limit
    records = records[:limit]
    next_cursor = (
        encode_cursor(records[-1].created_at, records[-1].id) if more and records else None
    )
    return records, next_cursor


async def suspended_since(engine: AsyncEngine, run_ids: Sequence[str]) -> dict[str, datetime]:
    """When each run last suspended (its latest `run.requires_action` event)."""
    if not run_ids:
        return {}
    stmt = (
        sa.select(run_events.c.run_id, sa.func.max(run_events.c.created_at))
        .where(
            run_events.c.run_id.in_(list(run_ids)), run_events.c.type == E.RUN_REQUIRES_ACTION.value
        )
        .group_by(run_events.c.run_id)
    )
    async with engine.connect() as conn:
        rows = (await conn.execute(stmt)).all()
    out: dict[str, datetime] = {}
    for run_id, at in rows:
        when = _as_datetime(at)
        if when is not None:
            out[run_id] = when
    return out


async def suspended_ages(engine: AsyncEngine, now: datetime) -> list[float]:
    """Seconds each suspended run has been waiting (since it suspended, else updated)."""
    last = (
        sa.select(
            run_events.c.run_id.label("run_id"),
            sa.func.max(run_events.c.created_at).label("at"),
        )
        .where(run_events.c.type == E.RUN_REQUIRES_ACTION.value)
        .group_by(run_events.c.run_id)
        .subquery()
    )
    stmt = (
        sa.select(runs.c.updated_at, last.c.at)
        .select_from(runs.outerjoin(last, last.c.run_id == runs.c.id))
        .where(runs.c.status == RunStatus.REQUIRES_ACTION.value)
    )
    async with engine.connect() as conn:
        rows = (await conn.execute(stmt)).all()
    ages = []
    for updated_at, at in rows:
        since = _as_datetime(at) or _as_datetime(updated_at)
        if since is not None:
            ages.append(max(0.0, (now - since).total_seconds()))
    return ages


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


async def activity(engine: AsyncEngine, now: datetime, minutes: int = 60) -> Activity:
    """From the runs table: a terminal run's `updated_at` is when it ended (terminal
    statuses absorb every later change)."""
    since = now - timedelta(minutes=minutes)
    ended_statuses = [
        RunStatus.COMPLETED.value,
        RunStatus.FAILED.value,
        RunStatus.CANCELLED.value,
        RunStatus.EXPIRED.value,
    ]
    counts = (
        sa.select(runs.c.status, sa.func.count())
        .where(runs.c.status.in_(ended_statuses), runs.c.updated_at >= since)
        .group_by(runs.c.status)
    )
    start = sa.bindparam("since", since, type_=runs.c.updated_at.type)
    minute: sa.ColumnElement[Any]
    if engine.dialect.name == "postgresql":
        minute = sa.func.floor(sa.extract("epoch", runs.c.updated_at - start) / 60)
    else:
        minute = sa.cast(
            (sa.func.julianday(runs.c.updated_at) - sa.func.julianday(start)) * 1440, sa.Integer
        )
    bins = (
        sa.select(minute.label("minute"), sa.func.count())
        .where(runs.c.status == RunStatus.COMPLETED.value, runs.c.updated_at >= start)
        .group_by(minute)
    )
    per_minute = [0] * minutes
    async with engine.connect() as conn:
        ended = {str(s): int(n) for s, n in (await conn.execute(counts)).all()}
        for index, n in (await conn.execute(bins)).all():
            if index is not None:
                per_minute[min(max(int(index), 0), minutes - 1)] += int(n)
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
    async with engine.connect() as conn:
        row = (await conn.execute(stmt)).one()
    return {
        "calls": int(row.calls),
        "failed_calls": int(row.failed_calls),
        "cost_usd": None if row.cost_usd is None else float(row.cost_usd),
    }
