"""The fold: finished runs move into the rollups, so reports read a few rows per hour or
status instead of every run kept (`usage_hourly`, `run_counts`, `run_endings`).

A run is folded once it has finished, in one transaction: its ledger rows not yet folded
are added to `usage_hourly` (per tenant, UTC hour of the call, provider, model and the
run's status) and marked `folded`; it is counted in `run_counts` under its tenant and
status (`counted_as`) and in `run_endings` under the minute it ended. A run an operator
retried after its fold (`counted_as` no longer its status) leaves its count in the next
fold; the calls it had
made stay in the rollups under the status it had then. Readers add what is not folded yet
(`ix_model_calls_unfolded`, `ix_runs_unfolded`, `ix_runs_recount`), in the same snapshot,
so every report is exact whatever the fold's lag. Workers fold in their periodic sweep;
retention folds what it deletes in its own transaction (`app.store.retention`).

Each batch locks the runs it picks with SKIP LOCKED on PostgreSQL (two workers never fold a
run twice) and touches rollup rows in one order (`usage_hourly`, `run_counts`,
`run_endings`, each by key), so concurrent folds and sweeps wait on each other briefly and
never deadlock. The hot transitions write none of these rows.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from app.core.lifecycle import TERMINAL
from app.store.schema import (
    LEDGER_UNFOLDED,
    RECOUNT,
    UNFOLDED,
    model_calls,
    run_counts,
    run_endings,
    runs,
    usage_hourly,
)

TOKENS = (
    "input_tokens",
    "output_tokens",
    "cached_input_tokens",
    "reasoning_tokens",
    "total_tokens",
)
COUNTERS = ("calls", "failed_calls", *TOKENS)
ENDED_VALUES = frozenset(s.value for s in TERMINAL)
#: Runs per fold transaction.
FOLD_BATCH = 500
#: How long `run_endings` keeps a minute (the dashboard shows the last hour).
ENDINGS_KEPT = timedelta(days=1)


@dataclass
class Sums:
    """Usage counters of some ledger rows; `cost_usd` None when none was priced."""

    calls: int = 0
    failed_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0
    reasoning_tokens: int = 0
    total_tokens: int = 0
    cost_usd: float | None = None

    def add_call(self, row: Any) -> None:
        self.calls += 1
        self.failed_calls += row.outcome == "error"
        for column in TOKENS:
            setattr(self, column, getattr(self, column) + int(getattr(row, column) or 0))
        if row.cost_usd is not None:
            self.cost_usd = (self.cost_usd or 0.0) + float(row.cost_usd)


@dataclass
class Deltas:
    """What a batch adds to the rollups."""

    # Keyed by tenant first, as the rollups' primary keys.
    usage: dict[tuple[str, datetime, str, str, str], Sums] = field(default_factory=dict)
    counts: Counter[tuple[str, str]] = field(default_factory=Counter)
    endings: Counter[tuple[str, datetime, str]] = field(default_factory=Counter)


def hour_of(value: datetime) -> datetime:
    return _utc(value).replace(minute=0, second=0, microsecond=0)


def minute_of(value: datetime) -> datetime:
    return _utc(value).replace(second=0, microsecond=0)


def _utc(value: datetime) -> datetime:
    return value.astimezone(UTC) if value.tzinfo is not None else value.replace(tzinfo=UTC)


async def by_index(conn: AsyncConnection) -> None:
    """PostgreSQL: for the rest of this transaction, read by index and without parallel
    workers, as the lifecycle's statements do (`app.store.backend.direct.SESSION_SETTINGS`). The
    statements across runs read a few index entries, but the planner cannot estimate the
    predicate of ix_runs_recount (`counted_as <> status`: two columns) and took it for
    most of the table: it scanned `runs` whole, or launched workers for a few rows. (No
    JIT: a scan of a tiny table, which has no index worth reading, costs the disabled
    sequential scan's penalty, which took a plan past `jit_above_cost`: 0.9 s to compile
    a read of a few rows.)"""
    if conn.dialect.name == "postgresql":
        await conn.exec_driver_sql(
            "SELECT set_config('enable_seqscan', 'off', true),"
            " set_config('max_parallel_workers_per_gather', '0', true),"
            " set_config('jit', 'off', true)"
        )


def _picked(postgres: bool, where: Any, batch: int) -> Any:
    stmt = (
        sa.select(runs.c.id, runs.c.status, runs.c.counted_as, runs.c.updated_at, runs.c.tenant_id)
        .where(where)
        .limit(batch)
    )
    return stmt.with_for_update(skip_locked=True) if postgres else stmt


async def fold_batch(engine: AsyncEngine, batch: int = FOLD_BATCH) -> int:
    """Fold up to `batch` runs (recounts first); how many it folded."""
    postgres = engine.dialect.name == "postgresql"
    async with engine.begin() as conn:
        await by_index(conn)
        found = list((await conn.execute(_picked(postgres, RECOUNT, batch))).all())
        if len(found) < batch:
            more = await conn.execute(_picked(postgres, UNFOLDED, batch - len(found)))
            found += list(more.all())
        if found:
            await fold_runs(conn, found, postgres)
    return len(found)


async def fold(engine: AsyncEngine, batch: int = FOLD_BATCH) -> int:
    """Every run there is to fold, batch by batch; how many were folded."""
    total = 0
    while True:
        n = await fold_batch(engine, batch)
        total += n
        if n < batch:
            return total


async def fold_runs(
    conn: AsyncConnection,
    found: Sequence[Any],
    postgres: bool,
    *,
    deleting: Iterable[Any] = (),
) -> None:
    """Fold the runs `found` (rows of id, status, counted_as, updated_at, tenant_id,
    locked by the caller). `deleting`: finished runs (same rows, none in `found`) that
    retention deletes in this transaction: they leave the counts, their unfolded calls are
    folded (their rows go next)."""
    gone = list(deleting)
    deltas = Deltas()
    # run id -> (tenant, status), of runs whose calls fold now
    ended: dict[str, tuple[str, str]] = {}
    for row in found:
        tenant = row.tenant_id
        if row.counted_as is not None:
            deltas.counts[(tenant, row.counted_as)] -= 1
        if row.status in ENDED_VALUES:
            deltas.counts[(tenant, row.status)] += 1
            deltas.endings[(tenant, minute_of(row.updated_at), row.status)] += 1
            ended[row.id] = (tenant, row.status)
    for row in gone:  # (never also in `found`)
        tenant = row.tenant_id
        if row.counted_as is not None:
            deltas.counts[(tenant, row.counted_as)] -= 1
        if row.counted_as != row.status:
            deltas.endings[(tenant, minute_of(row.updated_at), row.status)] += 1
        ended[row.id] = (tenant, row.status)
    if ended:
        calls = await conn.execute(
            sa.select(
                model_calls.c.run_id,
                model_calls.c.created_at,
                model_calls.c.provider,
                model_calls.c.model,
                model_calls.c.outcome,
                model_calls.c.cost_usd,
                *[model_calls.c[c] for c in TOKENS],
            ).where(model_calls.c.run_id.in_(list(ended)), LEDGER_UNFOLDED)
        )
        for call in calls:
            tenant, status = ended[call.run_id]
            key = (tenant, hour_of(call.created_at), call.provider, call.model, status)
            deltas.usage.setdefault(key, Sums()).add_call(call)
    await _apply(conn, deltas, postgres)
    kept = [row.id for row in found]
    folding = [i for i in kept if i in ended]
    if folding:
        await conn.execute(
            model_calls.update()
            .where(model_calls.c.run_id.in_(folding), LEDGER_UNFOLDED)
            .values(folded=True)
        )
        await conn.execute(
            runs.update().where(runs.c.id.in_(folding)).values(counted_as=runs.c.status)
        )
    recounted = [i for i in kept if i not in ended]
    if recounted:  # retried after their fold: counted by their status index now
        await conn.execute(runs.update().where(runs.c.id.in_(recounted)).values(counted_as=None))


def _insert(postgres: bool, table: sa.Table) -> Any:
    return (postgresql.insert if postgres else sqlite.insert)(table)


async def _apply(conn: AsyncConnection, deltas: Deltas, postgres: bool) -> None:
    """One multi-row upsert per rollup table, its rows in key order."""
    usage = [
        {"tenant_id": t, "hour": h, "provider": p, "model": m, "run_status": s, **sums.__dict__}
        for (t, h, p, m, s), sums in sorted(deltas.usage.items())
    ]
    if usage:
        stmt = _insert(postgres, usage_hourly).values(usage)
        old, new = usage_hourly.c, stmt.excluded
        cost = sa.case(
            (sa.and_(old.cost_usd.is_(None), new.cost_usd.is_(None)), sa.null()),
            else_=sa.func.coalesce(old.cost_usd, 0.0) + sa.func.coalesce(new.cost_usd, 0.0),
        )
        await conn.execute(
            stmt.on_conflict_do_update(
                index_elements=["tenant_id", "hour", "provider", "model", "run_status"],
                set_={**{c: old[c] + new[c] for c in COUNTERS}, "cost_usd": cost},
            )
        )
    counts = [
        {"tenant_id": t, "status": s, "runs": n} for (t, s), n in sorted(deltas.counts.items()) if n
    ]
    if counts:
        stmt = _insert(postgres, run_counts).values(counts)
        await conn.execute(
            stmt.on_conflict_do_update(
                index_elements=["tenant_id", "status"],
                set_={"runs": run_counts.c.runs + stmt.excluded.runs},
            )
        )
    endings = [
        {"tenant_id": t, "minute": m, "status": s, "runs": n}
        for (t, m, s), n in sorted(deltas.endings.items())
    ]
    if endings:
        stmt = _insert(postgres, run_endings).values(endings)
        await conn.execute(
            stmt.on_conflict_do_update(
                index_elements=["tenant_id", "minute", "status"],
                set_={"runs": run_endings.c.runs + stmt.excluded.runs},
            )
        )


async def forget_endings(engine: AsyncEngine, now: datetime) -> None:
    """Delete the minutes of `run_endings` older than a day."""
    async with engine.begin() as conn:
        await conn.execute(run_endings.delete().where(run_endings.c.minute < now - ENDINGS_KEPT))
