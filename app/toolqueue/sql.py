"""The tool-call queue: executors lease the pending calls of runs that name a queue.

A suspension writes each call with its queue (if any) and `lease_expires_at` = the time it
was offered; a call is *leasable* while it is unanswered and that time has passed.

A lease is one of the kernel's writes, so the backend makes it (`Backend.lease_calls`;
PostgreSQL: one statement, `app.store.backend.pg_lease`; SQLite: one transaction; what
both share: `app.store.backend.leases`), over the partial index of leasable calls, `FOR
UPDATE SKIP LOCKED` on the calls and their runs (so concurrent leases never wait for each
other, and take runs' row locks in no order that could deadlock with a transition): each
picked call gets a new fencing token, its owner, an expiry and one more attempt; each run
a `tool_call.leased` event per call (preceded by `tool_call.lease_expired` when the call
had been leased before and never answered: that lease lapsed) and one more `version`, so
a submission that read the run before the lease is refused by its compare-and-set and
reads again (`app.toolqueue.service` checks the token on what it reads).

A queue is a tenant's: tenant A's `gpu` queue is not B's. Every statement here names the
tenant beside the queue (`tool_calls.tenant_id`, its run's, leads ix_tool_calls_leasable).

Nothing reaps lapsed leases: the lease statement takes a call whose lease has expired as
readily as a new one (lazy re-offer). A cancelled or expired run's calls leave the queue in
the run's own statement (`Change.closes_calls`).
"""

from __future__ import annotations

import functools
from datetime import datetime
from typing import Any

import sqlalchemy as sa

from app.core.scope import Scope
from app.store.backend.base import Backend, Lease
from app.store.run_records import ToolCallRecord, utc
from app.store.schema import DEFAULT_TENANT, Timestamp, tool_calls
from app.store.scoping import p_tenant, scope_params, scoped

tc = tool_calls


@functools.cache
def extend_statement() -> Any:
    return (
        tc.update()
        .where(
            tc.c.run_id == sa.bindparam("p_run", type_=sa.String()),
            tc.c.round == sa.bindparam("p_round", type_=sa.Integer()),
            tc.c.position == sa.bindparam("p_position", type_=sa.Integer()),
            tc.c.lease_token == sa.bindparam("p_token", type_=sa.String()),
            tc.c.queue == sa.bindparam("p_queue", type_=sa.String()),
            tc.c.tenant_id == sa.bindparam("p_tenant", type_=sa.String()),
            # Unanswered, said so that the partial index of leasable calls cannot serve
            # this lookup by key (a generic plan made on an empty table chose it, which
            # would read every leasable call of the queue).
            sa.func.coalesce(tc.c.result_hash, sa.literal_column("''")) == sa.literal_column("''"),
        )
        .values(lease_expires_at=sa.bindparam("p_until", type_=Timestamp))
        .returning(tc.c.lease_expires_at)
    )


@functools.cache
def call_statement(scoped: bool = False) -> Any:
    stmt = tc.select().where(
        tc.c.run_id == sa.bindparam("p_run", type_=sa.String()),
        tc.c.round == sa.bindparam("p_round", type_=sa.Integer()),
        tc.c.position == sa.bindparam("p_position", type_=sa.Integer()),
    )
    return stmt.where(tc.c.tenant_id == p_tenant()) if scoped else stmt


@functools.cache
def next_due_statement() -> Any:
    return sa.select(sa.func.min(tc.c.lease_expires_at).label("due")).where(
        tc.c.tenant_id == sa.bindparam("p_tenant", type_=sa.String()),
        tc.c.queue == sa.bindparam("p_queue", type_=sa.String()),
        tc.c.result_hash.is_(None),
    )


class ToolCallQueue:
    """The executors' side of the tool-call queue: leases and their extensions."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend

    async def lease_calls(
        self,
        queue: str,
        owner: str,
        now: datetime,
        until: datetime,
        limit: int,
        tenant: str = DEFAULT_TENANT,
        max_in_flight: int | None = None,
    ) -> list[ToolCallRecord]:
        """Lease up to `limit` leasable calls of `tenant`'s `queue` to `owner` until `until`
        (and with `max_in_flight`, no more than leave that many under a live lease, however
        many leases run at once in however many processes)."""
        lease = Lease(queue, owner, now, until, limit, tenant, max_in_flight)
        return await self.backend.lease_calls(lease)

    async def extend_lease(
        self,
        run_id: str,
        round: int,
        position: int,
        token: str,
        queue: str,
        until: datetime,
        tenant: str = DEFAULT_TENANT,
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
            "p_tenant": tenant,
        }
        row = await self.backend.fetch_one(extend_statement(), params)
        return None if row is None else until

    async def next_offer(self, queue: str, tenant: str = DEFAULT_TENANT) -> datetime | None:
        """When the earliest unanswered call of `tenant`'s `queue` is (or was) leasable:
        its offer or its lease's expiry; None when the queue is empty."""
        params = {"p_queue": queue, "p_tenant": tenant}
        row = await self.backend.fetch_one(next_due_statement(), params)
        return None if row is None else utc(row["due"])

    async def call_row(
        self, run_id: str, round: int, position: int, scope: Scope
    ) -> ToolCallRecord | None:
        """One call of a run's round, by its position (of a run in `scope`)."""
        params = {"p_run": run_id, "p_round": round, "p_position": position, **scope_params(scope)}
        row = await self.backend.fetch_one(call_statement(scoped(scope)), params)
        return None if row is None else ToolCallRecord.from_row(row)
