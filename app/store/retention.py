"""Retention: finished runs older than a configured age are deleted, in small batches.

A run is purged when it has finished (completed, failed, cancelled, expired) and both its
creation and its last change lie before the cutoff. Its tool calls, events, usage-ledger
rows and webhook deliveries (with their attempts) go with it. Its
usage does not disappear: in the same transaction the ledger rows are added to
`usage_daily` (per UTC day of the call, provider, model and the run's final status), which
`/v1/usage` adds to what the ledger still holds.

Each batch is one short transaction over at most `batch` runs, found through the
creation index (`ix_run_configs_created`) and locked with SKIP LOCKED on PostgreSQL, so a
sweep never waits on (or stalls) the runs that workers and the API are changing, and two
sweeping workers never count the same run twice.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from app.core.lifecycle import TERMINAL
from app.store.schema import RUN_ROWS, model_calls, oldest_first, run_configs, runs, usage_daily

TOKENS = (
    "input_tokens",
    "output_tokens",
    "cached_input_tokens",
    "reasoning_tokens",
    "total_tokens",
)
_TERMINAL_VALUES = sorted(s.value for s in TERMINAL)


@dataclass
class _Daily:
    calls: int = 0
    failed_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0
    reasoning_tokens: int = 0
    total_tokens: int = 0
    cost_usd: float | None = None


async def purge_batch(engine: AsyncEngine, cutoff: datetime, batch: int = 200) -> int:
    """Delete up to `batch` finished runs older than `cutoff`; how many were deleted."""
    postgres = engine.dialect.name == "postgresql"
    due = (
        sa.select(runs.c.id, runs.c.status)
        .select_from(runs.join(run_configs, run_configs.c.run_id == runs.c.id))
        .where(
            run_configs.c.created_at < cutoff,
            runs.c.updated_at < cutoff,
            runs.c.status.in_(_TERMINAL_VALUES),
        )
        .order_by(*oldest_first())
        .limit(batch)
    )
    if postgres:
        due = due.with_for_update(skip_locked=True, of=runs)
    async with engine.begin() as conn:
        found = (await conn.execute(due)).all()
        if not found:
            return 0
        status_of = {row.id: row.status for row in found}
        await _keep_usage(conn, status_of, postgres)
        ids = list(status_of)
        for table in RUN_ROWS:
            await conn.execute(table.delete().where(table.c.run_id.in_(ids)))
        await conn.execute(runs.delete().where(runs.c.id.in_(ids)))
    return len(found)


async def purge(engine: AsyncEngine, cutoff: datetime, batch: int = 200) -> int:
    """Every finished run older than `cutoff`, batch by batch; how many were deleted."""
    total = 0
    while True:
        deleted = await purge_batch(engine, cutoff, batch)
        total += deleted
        if deleted < batch:
            return total


async def _keep_usage(conn: AsyncConnection, status_of: dict[str, str], postgres: bool) -> None:
    rows = await conn.execute(
        sa.select(
            model_calls.c.run_id,
            model_calls.c.created_at,
            model_calls.c.provider,
            model_calls.c.model,
            model_calls.c.outcome,
            model_calls.c.cost_usd,
            *[model_calls.c[c] for c in TOKENS],
        ).where(model_calls.c.run_id.in_(list(status_of)))
    )
    daily: dict[tuple[date, str, str, str], _Daily] = {}
    for row in rows:
        key = (_utc_day(row.created_at), row.provider, row.model, status_of[row.run_id])
        entry = daily.setdefault(key, _Daily())
        entry.calls += 1
        entry.failed_calls += row.outcome == "error"
        for column in TOKENS:
            setattr(entry, column, getattr(entry, column) + int(getattr(row, column) or 0))
        if row.cost_usd is not None:
            entry.cost_usd = (entry.cost_usd or 0.0) + float(row.cost_usd)
    for (day, provider, model, status), entry in daily.items():
        await conn.execute(_upsert(postgres, day, provider, model, status, entry))


def _upsert(
    postgres: bool, day: date, provider: str, model: str, status: str, entry: _Daily
) -> Any:
    insert = postgresql.insert if postgres else sqlite.insert
    stmt = insert(usage_daily).values(
        day=day, provider=provider, model=model, run_status=status, **entry.__dict__
    )
    old, new = usage_daily.c, stmt.excluded
    cost = sa.case(
        (sa.and_(old.cost_usd.is_(None), new.cost_usd.is_(None)), sa.null()),
        else_=sa.func.coalesce(old.cost_usd, 0.0) + sa.func.coalesce(new.cost_usd, 0.0),
    )
    counters = {c: old[c] + new[c] for c in ("calls", "failed_calls", *TOKENS)}
    return stmt.on_conflict_do_update(
        index_elements=["day", "provider", "model", "run_status"],
        set_={**counters, "cost_usd": cost},
    )


def _utc_day(value: datetime) -> date:
    return (value.astimezone(UTC) if value.tzinfo is not None else value).date()


def _first_day_from(moment: datetime) -> date:
    """The first UTC day whose midnight is at or after `moment`."""
    moment = moment.astimezone(UTC) if moment.tzinfo is not None else moment
    day = moment.date()
    return day if moment.time() == time() else day + timedelta(days=1)


async def daily_usage(conn: AsyncConnection, start: datetime, end: datetime) -> list[Any]:
    """The aggregated rows of the days whose midnight (UTC) lies in [start, end)."""
    query = sa.select(usage_daily).where(
        usage_daily.c.day >= _first_day_from(start), usage_daily.c.day < _first_day_from(end)
    )
    return list((await conn.execute(query)).all())


def add_daily(totals: dict[str, Any], rows: list[Any]) -> dict[str, Any]:
    """`totals` (overall, `by_status`, `by_model`, as `/v1/usage` reports them) with the
    aggregated rows added in."""

    def add(into: dict[str, Any], row: Any) -> None:
        for column in ("calls", "failed_calls", *TOKENS):
            into[column] = into.get(column, 0) + int(getattr(row, column))
        if row.cost_usd is not None:
            into["cost_usd"] = (into.get("cost_usd") or 0.0) + float(row.cost_usd)
        else:
            into.setdefault("cost_usd", None)

    for row in rows:
        add(totals, row)
        add(totals["by_status"].setdefault(row.run_status, {}), row)
        add(totals["by_model"].setdefault(f"{row.provider}:{row.model}", {}), row)
    return totals
