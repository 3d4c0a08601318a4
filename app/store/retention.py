"""Retention: finished runs older than a configured age are deleted, in small batches.

A run is purged when it has finished (completed, failed, cancelled, expired) and both its
creation and its last change lie before the cutoff. Its tool calls, events, messages,
usage-ledger rows and webhook deliveries (with their attempts) go with it. Its usage does
not disappear: it is in the rollups (`app.store.fold`), and a run not folded yet (its row
of `unfolded_runs` taken in the same transaction) is folded there; the run leaves
`run_counts` there too.

Each batch is one short transaction over at most `batch` runs, found through the index of
finished runs by tenant, status and creation (`ix_runs_ended`, tenant by tenant) and
locked with SKIP LOCKED on PostgreSQL, so a sweep never waits on (or stalls) the runs
that workers and the API are changing, and two sweeping workers never count the same run
twice. Every delete reads an index: a run's rows by their primary key's or `run_id`
index's prefix, delivery attempts by `ix_webhook_attempts_outbox` (the foreign key's
cascade).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from app.store.backend.base import Forms
from app.store.backend.dialect_forms import forms_for
from app.store.fold import fold_rows, taken
from app.store.schema import (
    DEFAULT_TENANT,
    ENDED_VALUES,
    RUN_CREATED,
    RUN_ROWS,
    oldest_first,
    runs,
    tenants,
)


def due_query(tenant: str, status: str, cutoff: datetime, limit: int, forms: Forms) -> Any:
    """A tenant's runs of a finished status due for deletion, oldest first, by
    ix_runs_ended (whose first column is the tenant)."""
    due = (
        sa.select(runs.c.id, runs.c.status, runs.c.tenant_id)
        .where(
            runs.c.tenant_id == tenant,
            runs.c.status == sa.literal_column(f"'{status}'"),
            runs.c.created_at < cutoff,
            runs.c.updated_at < cutoff,
        )
        .order_by(*oldest_first(RUN_CREATED))
        .limit(limit)
    )
    return forms.skip_locked(due)


async def purge_batch(engine: AsyncEngine, cutoff: datetime, batch: int = 200) -> int:
    """Delete up to `batch` finished runs older than `cutoff`; how many were deleted."""
    forms = forms_for(engine)
    async with engine.begin() as conn:
        await forms.by_index(conn)
        found: list[Any] = []
        for tenant, status in await _walk(conn):
            due = due_query(tenant, status, cutoff, batch - len(found), forms)
            found += (await conn.execute(due)).all()
            if len(found) == batch:
                break
        if not found:
            return 0
        ids = [row.id for row in found]
        # (A run not folded yet counts once folded and leaves the counts at once: it
        # is folded without a count; a folded one leaves them.)
        await fold_rows(
            conn,
            forms,
            await taken(conn, ids),
            uncount=[(row.tenant_id, row.status) for row in found],
        )
        for table in RUN_ROWS:
            await conn.execute(table.delete().where(table.c.run_id.in_(ids)))
        await conn.execute(runs.delete().where(runs.c.id.in_(ids)))
    return len(found)


async def _walk(conn: AsyncConnection) -> list[tuple[str, str]]:
    """(tenant, finished status) pairs to sweep: every tenant's (the default one too,
    which owns what was stored before tenants existed)."""
    ids = set((await conn.execute(sa.select(tenants.c.id))).scalars()) | {DEFAULT_TENANT}
    return [(t, s) for t in sorted(ids) for s in ENDED_VALUES]


async def purge(engine: AsyncEngine, cutoff: datetime, batch: int = 200) -> int:
    """Every finished run older than `cutoff`, batch by batch; how many were deleted."""
    total = 0
    while True:
        deleted = await purge_batch(engine, cutoff, batch)
        total += deleted
        if deleted < batch:
            return total
