"""Trees of runs: a child run (an agent tool's call made it, app.agents) names its parent
and its root in `run_configs` (`parent_run_id`, `root_run_id`, written once with it).
The reads by tree live here: a run's children, its descendants (a recursive query over
`parent_run_id`, the same on both dialects), their events, a tree's spend, and the open
descendants a cancel takes with it. A run outside any tree costs none of them: the
callers ask only for runs whose configuration can have children (`RunConfig.spawns`) or
has a parent.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from app.core.lifecycle import TERMINAL
from app.core.scope import Scope
from app.store.backend.base import LINEAGE, Backend
from app.store.run_records import EventRecord, RunRecord
from app.store.schema import (
    created_beyond,
    oldest_first,
    run_configs,
    run_events,
    runs,
    select_runs,
)
from app.store.scoping import within

#: The usage counters a tree's spend adds up (the rest of `usage` is per call).
SUMMED = (
    "input_tokens",
    "output_tokens",
    "cached_input_tokens",
    "reasoning_tokens",
    "total_tokens",
    "model_calls",
)


def descendants_of(run_id: str) -> Any:
    """The ids of `run_id`'s descendants (children, their children, ...): a recursive CTE."""
    first = sa.select(run_configs.c.run_id.label("id")).where(run_configs.c.parent_run_id == run_id)
    tree = first.cte("tree", recursive=True)
    deeper = sa.select(run_configs.c.run_id).join(tree, run_configs.c.parent_run_id == tree.c.id)
    return tree.union_all(deeper)


def open_descendants(run_id: str) -> sa.Select[Any]:
    """The descendants of `run_id` that have not ended, oldest first."""
    tree = descendants_of(run_id)
    ended = [s.value for s in TERMINAL]
    return (
        sa.select(runs.c.id)
        .join(tree, tree.c.id == runs.c.id)
        .where(runs.c.status.not_in(ended))
        .order_by(runs.c.created_at, runs.c.id)
    )


def sum_usage(docs: Sequence[Mapping[str, Any] | None]) -> dict[str, Any]:
    """The usage of several runs added up, exact to the token (cost: the sum of the known
    costs, null when none is known)."""
    total: dict[str, Any] = {k: 0 for k in SUMMED}
    cost, priced = 0.0, False
    for doc in docs:
        for key in SUMMED:
            total[key] += int((doc or {}).get(key) or 0)
        if (doc or {}).get("cost_usd") is not None:
            cost += float(doc["cost_usd"])  # type: ignore[index]
            priced = True
    total["cost_usd"] = round(cost, 10) if priced else None
    return total


async def linked_runs(
    backend: Backend,
    column: str,
    run_id: str,
    *,
    limit: int,
    after: tuple[datetime, str] | None,
    scope: Scope,
) -> list[RunRecord]:
    """The runs (in `scope`) whose `column` of `run_configs`, one of the `LINEAGE` columns
    that find a run by another (a child's `parent_run_id`, a fork's `forked_from_run_id`:
    each with its partial index), names `run_id`; oldest first, after a keyset cursor."""
    if column not in LINEAGE:
        raise ValueError(f"not a lineage column: {column}")
    stmt = (
        select_runs()
        .where(run_configs.c[column] == run_id, *within(run_configs.c.tenant_id, scope))
        .order_by(*oldest_first())
        .limit(limit)
    )
    if after is not None:
        stmt = stmt.where(created_beyond(*after, ascending=True))
    async with backend.reader() as conn:
        rows = (await conn.execute(stmt)).mappings().all()
    return [RunRecord.from_row(r) for r in rows]


class Trees:
    """The reads by tree of one backend."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend

    async def children(
        self,
        run_id: str,
        *,
        limit: int,
        after: tuple[datetime, str] | None,
        scope: Scope,
    ) -> list[RunRecord]:
        """`run_id`'s children (in `scope`), oldest first, after a keyset cursor."""
        return await linked_runs(
            self.backend, "parent_run_id", run_id, limit=limit, after=after, scope=scope
        )

    async def in_tree(
        self,
        root_run_id: str,
        *,
        limit: int,
        before: tuple[datetime, str] | None,
        scope: Scope,
        status: str | None = None,
    ) -> list[RunRecord]:
        """The runs of the tree `root_run_id` (the root and its descendants, in `scope`;
        of one status if given), newest first, before a keyset cursor (the run list's
        `root_run_id` filter)."""
        stmt = (
            select_runs()
            .where(
                sa.or_(
                    run_configs.c.root_run_id == root_run_id,
                    run_configs.c.run_id == root_run_id,
                ),
                *within(run_configs.c.tenant_id, scope),
            )
            .order_by(*(c.desc() for c in (run_configs.c.created_at, run_configs.c.run_id)))
            .limit(limit)
        )
        if before is not None:
            stmt = stmt.where(created_beyond(*before, ascending=False))
        if status is not None:
            stmt = stmt.where(runs.c.status == status)
        async with self.backend.reader() as conn:
            rows = (await conn.execute(stmt)).mappings().all()
        return [RunRecord.from_row(r) for r in rows]

    async def subtree(self, run_id: str) -> list[str]:
        """`run_id` and the ids of its descendants."""
        tree = descendants_of(run_id)
        async with self.backend.reader() as conn:
            ids = (await conn.execute(sa.select(tree.c.id))).scalars().all()
        return [run_id, *ids]

    async def subtree_events(
        self, run_id: str, after: Mapping[str, int], limit: int
    ) -> list[EventRecord]:
        """The first `limit` events of `run_id` and its descendants after each run's mark
        in `after` (0 for a run it does not name), by `created_at`, run and `seq`. Each
        event goes by the latest `created_at` of its run up to it, so a run's events keep
        their order whatever its writers' clocks said (a page never skips one of them)."""
        tree = descendants_of(run_id)
        e = run_events.c
        mark = sa.case(dict(after), value=e.run_id, else_=0) if after else sa.literal(0)
        at = sa.func.max(e.created_at).over(partition_by=e.run_id, order_by=e.seq).label("at")
        ranked = (
            sa.select(run_events, at)
            .where(sa.or_(e.run_id == run_id, e.run_id.in_(sa.select(tree.c.id))), e.seq > mark)
            .subquery()
        )
        stmt = (
            sa.select(*(ranked.c[c.name] for c in e))
            .order_by(ranked.c.at, ranked.c.run_id, ranked.c.seq)
            .limit(limit)
        )
        async with self.backend.reader() as conn:
            rows = (await conn.execute(stmt)).mappings().all()
        return [EventRecord.from_row(r) for r in rows]

    async def subtree_usage(self, run_id: str) -> dict[str, Any]:
        """The usage of `run_id` and all its descendants, added up (`tree_usage`)."""
        tree = descendants_of(run_id)
        stmt = sa.select(runs.c.usage).where(
            sa.or_(runs.c.id == run_id, runs.c.id.in_(sa.select(tree.c.id)))
        )
        async with self.backend.reader() as conn:
            docs = (await conn.execute(stmt)).scalars().all()
        return sum_usage(docs)

    async def open_descendants(self, run_id: str) -> list[RunRecord]:
        """The descendants of `run_id` that have not ended, oldest first."""
        stmt = select_runs().where(runs.c.id.in_(open_descendants(run_id)))
        async with self.backend.reader() as conn:
            rows = (await conn.execute(stmt)).mappings().all()
        return sorted((RunRecord.from_row(r) for r in rows), key=lambda r: (r.created_at, r.id))

    async def count(self, parent_run_id: str, root_run_id: str) -> tuple[int, int]:
        """How many children `parent_run_id` has, and how many runs the tree of
        `root_run_id` has below its root."""
        by_parent = sa.select(sa.func.count()).where(run_configs.c.parent_run_id == parent_run_id)
        by_root = sa.select(sa.func.count()).where(run_configs.c.root_run_id == root_run_id)
        async with self.backend.reader() as conn:
            parents = (await conn.execute(by_parent)).scalar_one()
            roots = (await conn.execute(by_root)).scalar_one()
        return int(parents), int(roots)


async def open_descendant_ids(conn: AsyncConnection, run_id: str) -> list[str]:
    """(In a cancel's transaction) the descendants of `run_id` that have not ended."""
    return list((await conn.execute(open_descendants(run_id))).scalars().all())
