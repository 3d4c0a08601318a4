"""A run's forks: the runs whose `forked_from_run_id` (written once, with the fork's
configuration; revision 0026) names it, found by the partial index on that column."""

from __future__ import annotations

from datetime import datetime

from app.core.scope import Scope
from app.store.backend.base import Backend
from app.store.run_records import RunRecord
from app.store.schema import created_beyond, oldest_first, run_configs, select_runs
from app.store.scoping import within


async def forks_of(
    backend: Backend,
    run_id: str,
    *,
    limit: int,
    after: tuple[datetime, str] | None,
    scope: Scope,
) -> list[RunRecord]:
    """The forks of `run_id` (in `scope`), oldest first, after a keyset cursor."""
    stmt = (
        select_runs()
        .where(run_configs.c.forked_from_run_id == run_id, *within(run_configs.c.tenant_id, scope))
        .order_by(*oldest_first())
        .limit(limit)
    )
    if after is not None:
        stmt = stmt.where(created_beyond(*after, ascending=True))
    async with backend.reader() as conn:
        rows = (await conn.execute(stmt)).mappings().all()
    return [RunRecord.from_row(r) for r in rows]
