"""What both dialects' leases of a queue's calls share (`Backend.lease_calls`; what a
lease does: `app.toolqueue.sql`): the pick of leasable calls, the count of live leases,
the events a lease appends, and the name a queue's wake-up carries.

The kernel keeps these: a lease is one of its writes (a run's `version` and events move
in the lease's statement, PostgreSQL's in `app.store.backend.pg_lease`), and a change
that offers calls wakes their queue's executors in its own statement.
"""

from __future__ import annotations

import functools
from typing import Any

import sqlalchemy as sa

from app.core.events import EventType as E
from app.core.lifecycle import Transition, sources
from app.store.run_records import NewEvent, ToolCallRecord
from app.store.schema import Timestamp, runs, tool_calls
from app.timestamps import iso

tc = tool_calls


def _suspended() -> sa.ColumnElement[bool]:
    """The run may have its calls leased (the lifecycle's sources of LEASE), as literals."""
    return runs.c.status.in_(
        [sa.literal_column(f"'{s.value}'") for s in sorted(sources(Transition.LEASE))]
    )


def _leasable() -> list[sa.ColumnElement[bool]]:
    """Unanswered calls of tenant `p_tenant`'s queue `p_queue` due by `p_now`
    (ix_tool_calls_leasable's predicate and columns), of a run that waits for them."""
    return [
        tc.c.tenant_id == sa.bindparam("p_tenant", type_=sa.String()),
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


@functools.cache
def leasable_calls() -> sa.Select[Any]:
    """The leasable calls of `p_queue`, oldest offer first, at most `p_limit`, with the
    previous lease's owner (each backend row-locks them its way)."""
    return (
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


@functools.cache
def in_flight_statement() -> Any:
    """How many of `p_queue`'s calls are under a live lease (unanswered, leased, not
    lapsed by `p_now`): the far side of ix_tool_calls_leasable's range."""
    return sa.select(sa.func.count().label("n")).where(
        tc.c.tenant_id == sa.bindparam("p_tenant", type_=sa.String()),
        tc.c.queue == sa.bindparam("p_queue", type_=sa.String()),
        tc.c.result_hash.is_(None),
        tc.c.lease_expires_at > sa.bindparam("p_now", type_=Timestamp),
        tc.c.lease_owner.is_not(None),
    )


def bell_of(tenant: str, queue: str) -> str:
    """What names a tenant's queue to its waiting lease requests (the payload of its
    NOTIFY): neither part can hold a `/`."""
    return f"{tenant}/{queue}"
