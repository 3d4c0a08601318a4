"""The figures /metrics reads from the database at scrape time, each from a statement that
an index serves (the partial indexes of queued and of suspended runs, the outbox's index
on its status), so a scrape costs what is in flight, never what is kept.

Statuses are literals, not parameters: a partial index's predicate can only be matched
by a literal (a generic plan of a parameter could not use it).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from app.core.lifecycle import OutboxStatus, RunStatus
from app.store.backend.dialect_forms import forms_for
from app.store.run_records import utc
from app.store.schema import runs, tool_calls, webhook_outbox

#: Deliveries a scrape counts: waiting to be sent, and given up (delivered ones pile up).
OPEN_DELIVERIES = (OutboxStatus.PENDING.value, OutboxStatus.FAILED.value)


@dataclass(frozen=True, slots=True)
class Gauges:
    depth: int  # queued runs due now
    suspended: int  # runs waiting in requires_action
    suspended_within: list[int]  # how many have waited at most each edge (cumulative)
    suspended_seconds: float  # the sum of their waits
    oldest_suspended: datetime | None  # the oldest `updated_at` among them
    deliveries: dict[str, int]  # pending and failed webhook deliveries


def _literal(value: str) -> sa.ColumnElement[Any]:
    return sa.literal_column(f"'{value}'")


def _seconds_since(engine: AsyncEngine, now: datetime, column: Any) -> sa.ColumnElement[Any]:
    return forms_for(engine).seconds_since(sa.bindparam("now", now, type_=column.type), column)


def statements(engine: AsyncEngine, now: datetime, edges: Sequence[float]) -> list[Any]:
    """The scrape's statements (also what the plan tests EXPLAIN)."""
    suspended = runs.c.status == _literal(RunStatus.REQUIRES_ACTION.value)
    waits = sa.select(
        sa.func.count(),
        sa.func.min(runs.c.updated_at),
        sa.func.coalesce(sa.func.sum(_seconds_since(engine, now, runs.c.updated_at)), 0.0),
        *[
            sa.func.count().filter(runs.c.updated_at >= now - timedelta(seconds=edge))
            for edge in edges
        ],
    ).where(suspended)
    depth = sa.select(sa.func.count()).where(
        runs.c.status == _literal(RunStatus.QUEUED.value), runs.c.available_at <= now
    )
    deliveries = (
        sa.select(webhook_outbox.c.status, sa.func.count())
        .where(webhook_outbox.c.status.in_([_literal(s) for s in OPEN_DELIVERIES]))
        .group_by(webhook_outbox.c.status)
    )
    return [waits, depth, deliveries]


async def read(engine: AsyncEngine, now: datetime, edges: Sequence[float]) -> Gauges:
    waits, depth, deliveries = statements(engine, now, edges)
    async with engine.connect() as conn:
        count, oldest, total, *within = (await conn.execute(waits)).one()
        due = (await conn.execute(depth)).scalar_one()
        states = {str(s): int(n) for s, n in (await conn.execute(deliveries)).all()}
    if isinstance(oldest, str):  # (an aggregate of timestamps is text on SQLite)
        oldest = datetime.fromisoformat(oldest)
    return Gauges(
        depth=int(due),
        suspended=int(count),
        suspended_within=[int(n) for n in within],
        suspended_seconds=max(0.0, float(total)),
        oldest_suspended=utc(oldest),
        deliveries={s: states.get(s, 0) for s in OPEN_DELIVERIES},
    )


@dataclass(frozen=True, slots=True)
class QueueDepth:
    queue: str
    queued: int  # unanswered calls no live lease holds (never leased, or lapsed)
    leased: int  # calls under a live lease


async def queue_depths(engine: AsyncEngine, now: datetime) -> list[QueueDepth]:
    """Per tool-call queue: unanswered calls waiting for a lease, and calls under a live
    lease (the executors' queue, `app.toolqueue`, as /metrics shows it)."""
    tc = tool_calls
    live = sa.and_(tc.c.lease_owner.is_not(None), tc.c.lease_expires_at > now)
    stmt = (
        sa.select(
            tc.c.queue,
            sa.func.sum(sa.case((live, 0), else_=1)),
            sa.func.sum(sa.case((live, 1), else_=0)),
        )
        .where(tc.c.queue.is_not(None), tc.c.result_hash.is_(None))
        .group_by(tc.c.queue)
        .order_by(tc.c.queue)
    )
    async with engine.connect() as conn:
        rows = (await conn.execute(stmt)).all()
    return [QueueDepth(q, int(a), int(b)) for q, a, b in rows]


def throttled_statement(now: datetime) -> Any:
    """Queued runs a shared limit deferred (not due yet), by the limit key they wait for:
    the claim index's queued runs, filtered on their waiting reason."""
    reason = runs.c.waiting_reason
    key = reason["key"].as_string()
    return (
        sa.select(key, sa.func.count())
        .where(
            runs.c.status == _literal(RunStatus.QUEUED.value),
            runs.c.available_at > now,
            reason["type"].as_string() == "rate_limit",
        )
        .group_by(key)
    )


async def throttled(engine: AsyncEngine, now: datetime) -> dict[str, int]:
    """`throttled_statement`'s counts by key."""
    async with engine.connect() as conn:
        rows = (await conn.execute(throttled_statement(now))).all()
    return {str(k): int(n) for k, n in rows if k is not None}
