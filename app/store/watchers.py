"""Live-stream watches: which runs some API process streams, so their event appends
NOTIFY (a NOTIFY makes each notifying commit of the cluster wait for the one before it,
so only watched runs pay for it)."""

from __future__ import annotations

from collections.abc import Iterable

import sqlalchemy as sa

from app.store.backend.base import Backend
from app.store.schema import run_watchers


class Watchers:
    """Watches of live streams (a backend without NOTIFY keeps none: nothing to wake)."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend

    async def watch(self, watcher: str, run_ids: Iterable[str], ttl_seconds: float) -> None:
        """Mark runs as watched by `watcher` (an API process) until `ttl_seconds` from now
        (database clock), so their event appends NOTIFY; drops every lapsed watch."""
        ids = sorted(set(run_ids))
        if ids and self.backend.notifies:
            await self.backend.watch(watcher, ids, ttl_seconds)

    async def unwatch(self, watcher: str, run_ids: Iterable[str] | None = None) -> None:
        """End `watcher`'s watches: of the given runs, or all of them."""
        if not self.backend.notifies:
            return
        stmt = run_watchers.delete().where(run_watchers.c.watcher == watcher)
        if run_ids is not None:
            stmt = stmt.where(run_watchers.c.run_id.in_(sorted(set(run_ids))))
        async with self.backend.transaction() as conn:
            await conn.execute(stmt)

    async def watched(self) -> list[tuple[str, str]]:
        """(run id, watcher) of every live watch."""
        stmt = sa.select(run_watchers.c.run_id, run_watchers.c.watcher).where(
            run_watchers.c.expires_at > sa.func.now()
        )
        async with self.backend.reader() as conn:
            rows = (await conn.execute(stmt)).all()
        return sorted((r.run_id, r.watcher) for r in rows)
