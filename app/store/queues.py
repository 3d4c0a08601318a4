"""The tool-call queue: executors lease the pending calls of runs that name a queue.

A suspension writes each call with its queue (if any) and `lease_expires_at` = the time it
was offered; a call is *leasable* while it is unanswered and that time has passed. A lease
is one statement (PostgreSQL; one transaction on SQLite) over the partial index of leasable
calls, `FOR UPDATE SKIP LOCKED` on the calls and their runs (so concurrent leases never
wait for each other, and take runs' row locks in no order that could deadlock with a
transition): each picked call gets a new fencing token, its owner, an expiry and one more
attempt; each run a `tool_call.leased` event per call (preceded by `tool_call.lease_expired`
when the call had been leased before and never answered: that lease lapsed) and one more
`version`, so a submission that read the run before the lease is refused by its
compare-and-set and reads again (`app.service.queues` checks the token on what it reads).

Nothing reaps lapsed leases: the lease statement takes a call whose lease has expired as
readily as a new one (lazy re-offer). A cancelled or expired run's calls leave the queue in
the run's own statement (`Change.closes_calls`).
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from app.core.events import EventType as E
from app.core.lifecycle import Transition, sources
from app.store.records import NewEvent, ToolCallRecord, utc
from app.store.schema import Timestamp, run_events, runs, tool_calls
from app.store.sqlite_rows import write_events
from app.store.statements import EVENTS_CHANNEL, notify_each
from app.timestamps import iso

#: NOTIFY channel (payload: the queue's name) sent after a commit offered calls of a queue.
QUEUE_CHANNEL = "agentrun_tool_calls"

tc = tool_calls


def _suspended() -> sa.ColumnElement[bool]:
    """The run may have its calls leased (the lifecycle's sources of LEASE), as literals."""
    return runs.c.status.in_(
        [sa.literal_column(f"'{s.value}'") for s in sorted(sources(Transition.LEASE))]
    )


def _leasable() -> list[sa.ColumnElement[bool]]:
    """Unanswered calls of `p_queue` due by `p_now` (ix_tool_calls_leasable's predicate
    and columns), of a run that waits for them."""
    return [
        tc.c.queue == sa.bindparam("p_queue", type_=sa.String()),
        tc.c.result_hash.is_(None),
        tc.c.lease_expires_at <= sa.bindparam("p_now", type_=Timestamp),
        runs.c.id == tc.c.run_id,
        _suspended(),
    ]


def leased_event(call: ToolCallRecord) -> NewEvent:
    return NewEvent(
        E.TOOL_CALL_LEASED,
        {
            "tool_call_id": call.call_id,
            "round": call.round,
            "queue": call.queue,
            "executor": call.lease_owner,
            "attempt": call.attempts,
            "lease_expires_at": iso(call.lease_expires_at) if call.lease_expires_at else None,
        },
    )


def expired_event(call_id: str, round: int, attempt: int, owner: str | None) -> NewEvent:
    """The lease `attempt` of a call lapsed unanswered (recorded when the call is leased
    again: nothing watches the clock)."""
    return NewEvent(
        E.TOOL_CALL_LEASE_EXPIRED,
        {"tool_call_id": call_id, "round": round, "attempt": attempt, "executor": owner},
    )


def _object(**fields: Any) -> Any:
    """`jsonb_build_object` of the fields, in order."""
    return sa.func.jsonb_build_object(*[x for kv in fields.items() for x in kv])


class QueueStatements:
    """The queue's statements, built once per store."""

    def __init__(self, is_postgres: bool) -> None:
        self.is_postgres = is_postgres
        self.lease = self._lease_pg() if is_postgres else None
        self.pick = self._pick()
        self.extend = (
            tc.update()
            .where(
                tc.c.run_id == sa.bindparam("p_run", type_=sa.String()),
                tc.c.round == sa.bindparam("p_round", type_=sa.Integer()),
                tc.c.position == sa.bindparam("p_position", type_=sa.Integer()),
                tc.c.lease_token == sa.bindparam("p_token", type_=sa.String()),
                tc.c.queue == sa.bindparam("p_queue", type_=sa.String()),
                # Unanswered, said so that the partial index of leasable calls cannot
                # serve this lookup by key (a generic plan made on an empty table chose
                # it, which would read every leasable call of the queue).
                sa.func.coalesce(tc.c.result_hash, sa.literal_column("''"))
                == sa.literal_column("''"),
            )
            .values(lease_expires_at=sa.bindparam("p_until", type_=Timestamp))
            .returning(tc.c.lease_expires_at)
        )
        self.call = tc.select().where(
            tc.c.run_id == sa.bindparam("p_run", type_=sa.String()),
            tc.c.round == sa.bindparam("p_round", type_=sa.Integer()),
            tc.c.position == sa.bindparam("p_position", type_=sa.Integer()),
        )
        self.next_due = sa.select(sa.func.min(tc.c.lease_expires_at)).where(
            tc.c.queue == sa.bindparam("p_queue", type_=sa.String()), tc.c.result_hash.is_(None)
        )

    def _pick(self) -> Any:
        """The leasable calls of a queue, oldest offer first, at most `p_limit`, with the
        previous lease's owner (row-locked and skipping locked rows on PostgreSQL)."""
        stmt = (
            sa.select(
                tc.c.run_id,
                tc.c.round,
                tc.c.position,
                tc.c.lease_owner,
                tc.c.lease_expires_at.label("offered"),
            )
            .where(*_leasable())
            .order_by(tc.c.lease_expires_at, tc.c.run_id, tc.c.round, tc.c.position)
            .limit(sa.bindparam("p_limit", type_=sa.Integer()))
        )
        if self.is_postgres:
            stmt = stmt.with_for_update(skip_locked=True, of=[tc, runs])
        return stmt

    def _lease_pg(self) -> Any:
        """One statement: pick, lease, move each run's token and event count on, append
        the events, notify live streams of watched runs; returns the leased calls."""
        picked = self._pick().cte("picked")
        nonce = sa.func.replace(sa.cast(sa.func.gen_random_uuid(), sa.Text), "-", "")
        leased = (
            tc.update()
            .where(
                tc.c.run_id == picked.c.run_id,
                tc.c.round == picked.c.round,
                tc.c.position == picked.c.position,
            )
            .values(
                lease_owner=sa.bindparam("p_owner", type_=sa.String()),
                lease_token=nonce,
                lease_expires_at=sa.bindparam("p_until", type_=Timestamp),
                attempts=tc.c.attempts + 1,
            )
            .returning(*tc.c)
            .cte("leased")
        )
        weight = sa.case((leased.c.attempts > 1, 2), else_=1)  # events per call
        counted = (
            sa.select(leased.c.run_id, sa.func.sum(weight).label("n"))
            .group_by(leased.c.run_id)
            .cte("counted")
        )
        bumped = (
            runs.update()
            .where(runs.c.id == counted.c.run_id)
            .values(
                version=runs.c.version + 1,
                last_event_seq=runs.c.last_event_seq + counted.c.n,
            )
            .returning(runs.c.id, runs.c.last_event_seq, counted.c.n)
            .cte("bumped")
        )
        order = (leased.c.round, leased.c.position)
        numbered = (
            sa.select(
                leased,
                picked.c.lease_owner.label("previous_owner"),
                picked.c.offered,
                (
                    bumped.c.last_event_seq
                    - bumped.c.n
                    + sa.func.sum(weight).over(partition_by=leased.c.run_id, order_by=order)
                ).label("seq"),
            )
            .select_from(
                leased.join(bumped, bumped.c.id == leased.c.run_id).join(
                    picked,
                    sa.and_(
                        picked.c.run_id == leased.c.run_id,
                        picked.c.round == leased.c.round,
                        picked.c.position == leased.c.position,
                    ),
                )
            )
            .cte("numbered")
        )
        now = sa.bindparam("p_now", type_=Timestamp)
        n = numbered.c
        rows = sa.union_all(
            sa.select(
                n.run_id,
                n.seq,
                sa.literal(E.TOOL_CALL_LEASED.value),
                _object(
                    tool_call_id=n.call_id,
                    round=n.round,
                    queue=n.queue,
                    executor=n.lease_owner,
                    attempt=n.attempts,
                    lease_expires_at=sa.bindparam("p_until_iso", type_=sa.String()),
                ),
                sa.null(),
                now,
            ),
            sa.select(
                n.run_id,
                n.seq - 1,
                sa.literal(E.TOOL_CALL_LEASE_EXPIRED.value),
                _object(
                    tool_call_id=n.call_id,
                    round=n.round,
                    attempt=n.attempts - 1,
                    executor=n.previous_owner,
                ),
                sa.null(),
                now,
            ).where(n.attempts > 1),
        )
        appended = run_events.insert().from_select(
            ["run_id", "seq", "type", "data", "actor", "created_at"], rows
        )
        return (
            sa.select(*[numbered.c[c.name] for c in tc.columns])
            .add_columns(notify_each(EVENTS_CHANNEL, bumped, watched_only=True).label("notified"))
            .add_cte(appended.cte("appended"))
            .order_by(numbered.c.offered, numbered.c.run_id, numbered.c.round, numbered.c.position)
        )


@dataclass(frozen=True, slots=True)
class QueueDepth:
    queue: str
    queued: int  # unanswered calls no live lease holds (never leased, or lapsed)
    leased: int  # calls under a live lease


class Queues:
    """Mixed into `RunStore` (uses its engine and its direct pool on PostgreSQL)."""

    engine: AsyncEngine
    is_postgres: bool
    queue_sql: QueueStatements

    async def _fetch(self, conn: Any, stmt: Any, params: dict[str, Any]) -> Any:
        raise NotImplementedError

    async def _rows(self, stmt: Any, params: dict[str, Any]) -> list[Any]:
        raise NotImplementedError

    async def lease_calls(
        self, queue: str, owner: str, now: datetime, until: datetime, limit: int
    ) -> list[ToolCallRecord]:
        """Lease up to `limit` leasable calls of `queue` to `owner` until `until`."""
        params: dict[str, Any] = {
            "p_queue": queue,
            "p_now": now,
            "p_limit": limit,
            "p_owner": owner,
            "p_until": until,
            "p_until_iso": iso(until),
        }
        if self.is_postgres:
            rows = await self._rows(self.queue_sql.lease, params)
            return [ToolCallRecord.from_row(r[:-1]) for r in rows]
        return await self._lease_sqlite(params)

    async def _lease_sqlite(self, params: dict[str, Any]) -> list[ToolCallRecord]:
        """SQLite: the same in one transaction (BEGIN IMMEDIATE: writers are serialized)."""
        out: list[ToolCallRecord] = []
        async with self.engine.begin() as conn:
            picked = (await conn.execute(self.queue_sql.pick, params)).all()
            by_run: dict[str, list[NewEvent]] = {}
            for run_id, round, position, previous, _ in picked:
                row = (
                    await conn.execute(
                        tc.update()
                        .where(
                            tc.c.run_id == run_id, tc.c.round == round, tc.c.position == position
                        )
                        .values(
                            lease_owner=params["p_owner"],
                            lease_token=secrets.token_hex(16),
                            lease_expires_at=params["p_until"],
                            attempts=tc.c.attempts + 1,
                        )
                        .returning(*tc.c)
                    )
                ).one()
                call = ToolCallRecord.from_row(row)
                events = by_run.setdefault(run_id, [])
                if call.attempts > 1:
                    events.append(expired_event(call.call_id, round, call.attempts - 1, previous))
                events.append(leased_event(call))
                out.append(call)
            for run_id, events in by_run.items():
                last = (
                    await conn.execute(
                        runs.update()
                        .where(runs.c.id == run_id)
                        .values(
                            version=runs.c.version + 1,
                            last_event_seq=runs.c.last_event_seq + len(events),
                        )
                        .returning(runs.c.last_event_seq)
                    )
                ).scalar_one()
                await write_events(conn, run_id, last, events, params["p_now"])
        return out

    async def extend_lease(
        self, run_id: str, round: int, position: int, token: str, queue: str, until: datetime
    ) -> datetime | None:
        """Extend a call's lease while `token` holds it and it is unanswered; the new
        expiry, or None (the lease moved on, the call was answered or left the queue)."""
        params = {
            "p_run": run_id,
            "p_round": round,
            "p_position": position,
            "p_token": token,
            "p_queue": queue,
            "p_until": until,
        }
        if self.is_postgres:
            row = await self._fetch(None, self.queue_sql.extend, params)
        else:
            async with self.engine.begin() as conn:
                row = (await conn.execute(self.queue_sql.extend, params)).first()
        return None if row is None else until

    async def next_offer(self, queue: str) -> datetime | None:
        """When the earliest unanswered call of `queue` is (or was) leasable: its offer
        or its lease's expiry; None when the queue is empty."""
        rows = await self._rows(self.queue_sql.next_due, {"p_queue": queue})
        return utc(rows[0][0]) if rows else None

    async def call_row(self, run_id: str, round: int, position: int) -> ToolCallRecord | None:
        """One call of a run's round, by its position."""
        params = {"p_run": run_id, "p_round": round, "p_position": position}
        rows = await self._rows(self.queue_sql.call, params)
        return ToolCallRecord.from_row(rows[0]) if rows else None

    async def queue_depths(self, now: datetime) -> list[QueueDepth]:
        """Per queue: unanswered calls waiting for a lease, and calls under a live lease."""
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
        async with self.engine.connect() as conn:
            rows = (await conn.execute(stmt)).all()
        return [QueueDepth(q, int(a), int(b)) for q, a, b in rows]
