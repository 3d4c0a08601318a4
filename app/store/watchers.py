"""Live-stream watches: which runs some API process streams, so their event appends
NOTIFY (a NOTIFY makes each notifying commit of the cluster wait for the one before it,
so only watched runs pay for it)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql
from sqlalchemy.ext.asyncio import AsyncEngine

from app.store.schema import run_watchers


class Watchers:
    """Mixed into `RunStore` (uses its engine and reader)."""

    engine: AsyncEngine
    is_postgres: bool

    def _reader(self) -> Any:
        raise NotImplementedError

    async def watch(self, watcher: str, run_ids: Iterable[str], ttl_seconds: float) -> None:
        """Mark runs as watched by `watcher` (an API process) until `ttl_seconds` from now
        (database clock), so their event appends NOTIFY; drops every lapsed watch."""
        ids = sorted(set(run_ids))
        if not ids or not self.is_postgres:
            return
        expires = sa.func.now() + sa.func.make_interval(0, 0, 0, 0, 0, 0, ttl_seconds)
        insert = postgresql.insert(run_watchers).from_select(
            ["run_id", "watcher", "expires_at"],
            sa.select(
                sa.func.unnest(sa.cast(ids, postgresql.ARRAY(sa.String()))),
                sa.literal(watcher),
                expires,
            ),
        )
        upsert = insert.on_conflict_do_update(
            index_elements=["run_id", "watcher"], set_={"expires_at": insert.excluded.expires_at}
        )
        async with self.engine.begin() as conn:
            await conn.execute(
                run_watchers.delete().where(run_watchers.c.expires_at < sa.func.now())
            )
            await conn.execute(upsert)

    async def unwatch(self, watcher: str, run_ids: Iterable[str] | None = None) -> None:
        """End `watcher`'s watches: of the given runs, or all of them."""
        if not self.is_postgres:
            return
        stmt = run_watchers.delete().where(run_watchers.c.watcher == watcher)
        if run_ids is not None:
            stmt = stmt.where(run_watchers.c.run_id.in_(sorted(set(run_ids))))
        async with self.engine.begin() as conn:
            await conn.execute(stmt)

    async def watched(self) -> list[tuple[str, str]]:
        """(run id, watcher) of every live watch."""
        stmt = sa.select(run_watchers.c.run_id, run_watchers.c.watcher).where(
            run_watchers.c.expires_at > sa.func.now()
        )
        async with self._reader() as conn:
            rows = (await conn.execute(stmt)).all()
        return sorted((r[0], r[1]) for r in rows)
