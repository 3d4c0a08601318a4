"""What was waiting, over time: every worker samples, once a minute, the queued, running
and suspended runs of each tenant into `gauge_samples` (the first to write a minute wins;
the others' rows are ignored), and the overview reads a window's samples back. A sample
reads the waiting runs' partial indexes (what is in flight, never what is kept); samples
older than `KEPT` are deleted with the fold's other old minutes.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from app.core.lifecycle import RunStatus
from app.core.scope import Scope
from app.store.backend.dialect_forms import forms_for
from app.store.fold import minute_of
from app.store.reports import reading
from app.store.run_records import utc
from app.store.schema import IS_WAITING, RUNNING, gauge_samples, runs
from app.store.scoping import within

#: How long samples are kept (the overview's longest window of them).
KEPT = timedelta(days=7)


@dataclass(frozen=True, slots=True)
class Sample:
    tenant_id: str
    minute: datetime
    queued: int
    running: int
    suspended: int
    oldest_suspended_s: float | None
    suspended_wait_s: float


def sample_statements(engine: AsyncEngine, now: datetime) -> list[Any]:
    """The waiting runs per tenant and status (ix_runs_waiting), the running runs per
    tenant (ix_runs_lease): also what the plan tests EXPLAIN."""
    # (Since the run suspended: `updated_at` moves with a partial answer or an extension.)
    suspended = sa.func.coalesce(runs.c.suspended_at, runs.c.updated_at)
    since = forms_for(engine).seconds_since(
        sa.bindparam("now", now, type_=runs.c.updated_at.type), suspended
    )
    waiting = (
        sa.select(
            runs.c.tenant_id,
            runs.c.status,
            sa.func.count(),
            sa.func.max(since),
            sa.func.coalesce(sa.func.sum(since), 0.0),
        )
        .where(IS_WAITING)
        .group_by(runs.c.tenant_id, runs.c.status)
    )
    running = sa.select(runs.c.tenant_id, sa.func.count()).where(RUNNING).group_by(runs.c.tenant_id)
    return [waiting, running]


async def sample(engine: AsyncEngine, now: datetime) -> int:
    """Write this minute's samples, unless another worker did; how many rows it offered."""
    waiting, running = sample_statements(engine, now)
    minute = minute_of(now)
    rows: dict[str, dict[str, Any]] = {}

    def row(tenant: str) -> dict[str, Any]:
        return rows.setdefault(
            tenant,
            {
                "tenant_id": tenant,
                "minute": minute,
                "queued_runs": 0,
                "running_runs": 0,
                "suspended_runs": 0,
                "oldest_suspended_s": None,
                "suspended_wait_s": 0.0,
            },
        )

    forms = forms_for(engine)
    async with reading(engine) as conn:  # (no write lock unless there is a row to write)
        found = (await conn.execute(waiting)).all()
        busy = (await conn.execute(running)).all()
    for tenant, status, n, oldest, waited in found:
        if status == RunStatus.QUEUED.value:
            row(tenant)["queued_runs"] = int(n)
        elif status == RunStatus.REQUIRES_ACTION.value:
            row(tenant).update(
                suspended_runs=int(n),
                oldest_suspended_s=max(0.0, float(oldest)) if oldest is not None else None,
                suspended_wait_s=max(0.0, float(waited)),
            )
    for tenant, n in busy:
        row(tenant)["running_runs"] = int(n)
    if rows:
        stmt = forms.insert(gauge_samples).values([rows[t] for t in sorted(rows)])
        async with engine.begin() as conn:
            await conn.execute(stmt.on_conflict_do_nothing(index_elements=["tenant_id", "minute"]))
    return len(rows)


async def forget(engine: AsyncEngine, now: datetime) -> None:
    """Delete the samples older than `KEPT`."""
    async with engine.begin() as conn:
        await conn.execute(gauge_samples.delete().where(gauge_samples.c.minute < now - KEPT))


def samples_query(since: datetime, until: datetime, scope: Scope) -> Any:
    g = gauge_samples.c
    return (
        sa.select(gauge_samples)
        .where(g.minute >= since, g.minute < until, *within(g.tenant_id, scope))
        .order_by(g.minute)
    )


async def samples(
    engine: AsyncEngine, since: datetime, until: datetime, scope: Scope
) -> list[Sample]:
    """The samples of [since, until) of the tenants in `scope`, oldest first."""
    async with reading(engine) as conn:
        found = (await conn.execute(samples_query(since, until, scope))).all()
    return [
        Sample(
            r.tenant_id,
            utc(r.minute) or r.minute,
            int(r.queued_runs),
            int(r.running_runs),
            int(r.suspended_runs),
            None if r.oldest_suspended_s is None else float(r.oldest_suspended_s),
            float(r.suspended_wait_s),
        )
        for r in found
    ]
