"""The fold: finished runs move into the rollups, so reports read a few rows per hour or
status instead of every run kept (`usage_hourly`, `latency_hourly`, `run_counts`,
`run_endings`).

The change that ends a run writes its row of `unfolded_runs` in the same statement
(app.store.backend); a ledger write on a run that had ended writes one for the calls. A
fold takes a batch of those rows in one transaction: the runs' ledger rows are added to
`usage_hourly` (per tenant, UTC hour of the call, provider, model, the run's status and
its agent's name) and the latencies of the answered ones to `latency_hourly`, the runs
are counted in `run_counts` and in `run_endings` under the minute they ended, the
calls summed are marked `folded` and the rows are deleted. The run's own row is never
rewritten (it was, when the fold marked it: a new version of the whole row and an entry in
each of its indexes). Readers add the calls not folded (`ix_model_calls_unfolded`) and the
rows of `unfolded_runs` that count to the rollups, in the same snapshot, so every report
is exact whatever the fold's lag.

An operator's retry takes a finished run back (`reopen`, in the retry's transaction): it
leaves `run_counts` and what it had not folded yet is folded, so its earlier calls stay
under the status it left. Retention folds what it deletes in its own transaction
(`app.store.retention`).

Each batch locks the rows it takes with SKIP LOCKED on PostgreSQL (two workers never fold a
run twice) and touches rollup rows in one order (`usage_hourly`, `latency_hourly`,
`run_counts`, `run_endings`, each by key), so concurrent folds and sweeps wait on each
other briefly and never deadlock. The hot transitions write none of the rollups.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from app.store.backend.base import Forms
from app.store.backend.dialect_forms import forms_for
from app.store.latency import bucket_of
from app.store.schema import (
    ENDED_VALUES,
    latency_hourly,
    model_calls,
    run_configs,
    run_counts,
    run_endings,
    runs,
    unfolded_runs,
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
    throttled_calls: int = 0  # (of the failed: refused with a 429)

    def add_call(self, row: Any) -> None:
        self.calls += 1
        self.failed_calls += row.outcome == "error"
        self.throttled_calls += row.outcome == "error" and row.http_status == 429
        for column in TOKENS:
            setattr(self, column, getattr(self, column) + int(getattr(row, column) or 0))
        if row.cost_usd is not None:
            self.cost_usd = (self.cost_usd or 0.0) + float(row.cost_usd)


@dataclass
class Deltas:
    """What a batch adds to the rollups."""

    # Keyed by tenant first, as the rollups' primary keys.
    usage: dict[tuple[str, datetime, str, str, str, str], Sums] = field(default_factory=dict)
    latency: Counter[tuple[str, datetime, str, str, int]] = field(default_factory=Counter)
    counts: Counter[tuple[str, str]] = field(default_factory=Counter)
    endings: Counter[tuple[str, datetime, str]] = field(default_factory=Counter)


def hour_of(value: datetime) -> datetime:
    return _utc(value).replace(minute=0, second=0, microsecond=0)


def minute_of(value: datetime) -> datetime:
    return _utc(value).replace(second=0, microsecond=0)


def _utc(value: datetime) -> datetime:
    return value.astimezone(UTC) if value.tzinfo is not None else value.replace(tzinfo=UTC)


async def fold_batch(engine: AsyncEngine, batch: int = FOLD_BATCH) -> int:
    """Fold up to `batch` runs; how many it folded."""
    forms = forms_for(engine)
    async with engine.begin() as conn:
        await forms.by_index(conn)
        picked = forms.skip_locked(sa.select(unfolded_runs).limit(batch))
        found = list((await conn.execute(picked)).all())
        if found:
            await fold_rows(conn, forms, found)
            ids = [row.run_id for row in found]
            await conn.execute(unfolded_runs.delete().where(unfolded_runs.c.run_id.in_(ids)))
    return len(found)


async def fold(engine: AsyncEngine, batch: int = FOLD_BATCH) -> int:
    """Every run there is to fold, batch by batch; how many were folded."""
    total = 0
    while True:
        n = await fold_batch(engine, batch)
        total += n
        if n < batch:
            return total


async def fold_rows(
    conn: AsyncConnection,
    forms: Forms,
    found: Sequence[Any],
    *,
    uncount: Iterable[tuple[str, str]] = (),
    endings: bool = True,
) -> None:
    """Fold the rows `found` of `unfolded_runs` (taken by the caller, who deletes them):
    their runs' calls not `folded` go into `usage_hourly` under the row's status and are
    marked (by id: exactly the calls summed); a row that `counts` adds its run to
    `run_counts` and (with `endings`) `run_endings`. `uncount`: (tenant, status) of runs
    leaving `run_counts` (deleted, reopened)."""
    deltas = Deltas()
    status_of: dict[str, tuple[str, str]] = {}
    for row in found:
        status_of[row.run_id] = (row.tenant_id, row.status)
        if row.counts:
            deltas.counts[(row.tenant_id, row.status)] += 1
            if endings:
                deltas.endings[(row.tenant_id, minute_of(row.ended_at), row.status)] += 1
    for key in uncount:
        deltas.counts[key] -= 1
    summed: list[int] = []
    if status_of:
        agent_of = await _agents(conn, list(status_of))
        calls = await conn.execute(
            sa.select(
                model_calls.c.id,
                model_calls.c.run_id,
                model_calls.c.created_at,
                model_calls.c.provider,
                model_calls.c.model,
                model_calls.c.outcome,
                model_calls.c.cost_usd,
                model_calls.c.latency_ms,
                model_calls.c.http_status,
                *[model_calls.c[c] for c in TOKENS],
            ).where(model_calls.c.run_id.in_(list(status_of)), model_calls.c.folded.is_(False))
        )
        for call in calls:
            tenant, status = status_of[call.run_id]
            hour = hour_of(call.created_at)
            agent = agent_of.get(call.run_id, "")
            usage_key = (tenant, hour, call.provider, call.model, status, agent)
            deltas.usage.setdefault(usage_key, Sums()).add_call(call)
            if call.outcome == "ok" and call.latency_ms is not None:
                bucket = bucket_of(float(call.latency_ms))
                deltas.latency[(tenant, hour, call.provider, call.model, bucket)] += 1
            summed.append(call.id)
    await _apply(conn, forms, deltas)
    if summed:
        await conn.execute(
            model_calls.update().where(model_calls.c.id.in_(summed)).values(folded=True)
        )


async def _agents(conn: AsyncConnection, run_ids: list[str]) -> dict[str, str]:
    """The name of the agent each of these runs started from (runs without one: absent)."""
    name = run_configs.c.config[("agent", "name")].as_string()
    rows = await conn.execute(
        sa.select(run_configs.c.run_id, name).where(
            run_configs.c.run_id.in_(run_ids), name.is_not(None)
        )
    )
    return {run_id: str(agent)[:100] for run_id, agent in rows}


async def taken(conn: AsyncConnection, run_ids: Sequence[str]) -> list[Any]:
    """Delete these runs' rows of `unfolded_runs` and return them (on PostgreSQL after a
    fold that holds one has committed: it is gone then)."""
    deleted = (
        unfolded_runs.delete()
        .where(unfolded_runs.c.run_id.in_(list(run_ids)))
        .returning(*unfolded_runs.c)
    )
    return list((await conn.execute(deleted)).all())


async def reopen(conn: AsyncConnection, run_id: str) -> None:
    """In the transaction of an operator's retry, before its compare-and-set: the run,
    if it has finished, leaves the rollups' counts and its calls not folded yet are
    folded (under the status it had), so its next fold takes only the calls it makes
    from now on. The run's row stays locked until the transaction ends."""
    forms = forms_for(conn)
    locked = forms.for_update(sa.select(runs.c.status, runs.c.tenant_id).where(runs.c.id == run_id))
    run = (await conn.execute(locked)).first()
    if run is None or run.status not in ENDED_VALUES:
        return  # (the compare-and-set refuses it)
    found = await taken(conn, [run_id])
    await fold_rows(conn, forms, found, uncount=[(run.tenant_id, run.status)], endings=False)


async def _apply(conn: AsyncConnection, forms: Forms, deltas: Deltas) -> None:
    """One multi-row upsert per rollup table, its rows in key order."""
    usage = [
        {
            "tenant_id": t,
            "hour": h,
            "provider": p,
            "model": m,
            "run_status": s,
            "agent": a,
            **sums.__dict__,
        }
        for (t, h, p, m, s, a), sums in sorted(deltas.usage.items())
    ]
    if usage:
        stmt = forms.insert(usage_hourly).values(usage)
        old, new = usage_hourly.c, stmt.excluded
        cost = sa.case(
            (sa.and_(old.cost_usd.is_(None), new.cost_usd.is_(None)), sa.null()),
            else_=sa.func.coalesce(old.cost_usd, 0.0) + sa.func.coalesce(new.cost_usd, 0.0),
        )
        await conn.execute(
            stmt.on_conflict_do_update(
                index_elements=["tenant_id", "hour", "provider", "model", "run_status", "agent"],
                set_={
                    **{c: old[c] + new[c] for c in (*COUNTERS, "throttled_calls")},
                    "cost_usd": cost,
                },
            )
        )
    latency = [
        {"tenant_id": t, "hour": h, "provider": p, "model": m, "bucket": b, "calls": n}
        for (t, h, p, m, b), n in sorted(deltas.latency.items())
    ]
    if latency:
        stmt = forms.insert(latency_hourly).values(latency)
        await conn.execute(
            stmt.on_conflict_do_update(
                index_elements=["tenant_id", "hour", "provider", "model", "bucket"],
                set_={"calls": latency_hourly.c.calls + stmt.excluded.calls},
            )
        )
    counts = [
        {"tenant_id": t, "status": s, "runs": n} for (t, s), n in sorted(deltas.counts.items()) if n
    ]
    if counts:
        stmt = forms.insert(run_counts).values(counts)
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
        stmt = forms.insert(run_endings).values(endings)
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
