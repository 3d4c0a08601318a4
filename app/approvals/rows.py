"""Approvals in the store: the decisions' writes on gated calls, and the reads of pending
approvals (a tenant's inbox, a run's, the timeout sweep's).

A gated call is a `tool_calls` row with an `approval` (ApprovalStatus), written by its suspension
in no queue (so the lease statement, which reads queued calls only, never sees it) and
left out of every listing of pending calls (`app.service`). A decision is one
transaction: the run's compare-and-set (`Change` DECIDE or RESUME, fenced on the version
the decider read, as a submission is) and, only when it won, the decided calls' rows:
approved (into its queue, leasable now, with the edited arguments) or rejected (its
error result, as if submitted).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa

from app import metrics
from app.core.lifecycle import ApprovalStatus, RunStatus
from app.core.scope import Scope
from app.store.backend.base import QUEUE_CHANNEL, Backend, ChangeWrite, Wake
from app.store.backend.leases import bell_of
from app.store.changes import Change
from app.store.run_records import RunRecord, ToolCallRecord
from app.store.schema import Timestamp, runs, tool_calls

tc = tool_calls
#: Pending approvals (the partial indexes' predicate, as a literal).
AWAITING = tc.c.approval == sa.literal_column(f"'{ApprovalStatus.PENDING.value}'")


@dataclass(frozen=True, slots=True)
class CallDecision:
    """What a decision writes to one gated call (round, position)."""

    round: int
    position: int
    approval: str  # ApprovalStatus: approved or rejected
    decided_by: str | None
    executed_arguments: Any = None  # approved with edits
    queue: str | None = None  # approved: the queue that now offers it
    result: Any = None  # rejected: its error result
    result_hash: str | None = None


def _waiting_runs() -> list[sa.ColumnElement[bool]]:
    """The call is of its run's current round, and the run still waits."""
    return [
        runs.c.id == tc.c.run_id,
        runs.c.status == sa.literal_column(f"'{RunStatus.REQUIRES_ACTION.value}'"),
        runs.c.turn == tc.c.round,
    ]


@functools.cache
def awaiting_statement(paged: bool) -> Any:
    """Tenant `p_tenant`'s pending approvals, newest first, at most `p_limit`."""
    order = (tc.c.approval_requested_at, tc.c.run_id, tc.c.round, tc.c.position)
    stmt = (
        sa.select(tc)
        .where(AWAITING, tc.c.tenant_id == sa.bindparam("p_tenant", type_=sa.String()))
        .where(*_waiting_runs())
        .order_by(*(c.desc() for c in order))
        .limit(sa.bindparam("p_limit", type_=sa.Integer()))
    )
    if paged:
        after = sa.tuple_(
            sa.bindparam("p_at", type_=Timestamp),
            sa.bindparam("p_run", type_=sa.String()),
            sa.bindparam("p_round", type_=sa.Integer()),
            sa.bindparam("p_position", type_=sa.Integer()),
        )
        stmt = stmt.where(sa.tuple_(*order) < after)
    return stmt


@functools.cache
def run_statement() -> Any:
    """Every gated call of run `p_run`, decided or not, in order."""
    return (
        sa.select(tc)
        .where(tc.c.run_id == sa.bindparam("p_run", type_=sa.String()), tc.c.approval.is_not(None))
        .order_by(tc.c.round, tc.c.position)
    )


@functools.cache
def due_statement() -> Any:
    """Runs with a pending approval past its deadline (`p_now`), at most 100."""
    return (
        sa.select(tc.c.run_id)
        .where(AWAITING, tc.c.approval_due_at <= sa.bindparam("p_now", type_=Timestamp))
        .where(*_waiting_runs())
        .distinct()
        .limit(100)
    )


class Approvals:
    """The approvals' reads and the decisions' writes."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend

    async def awaiting(
        self, tenant: str, limit: int, before: tuple[datetime, str, int, int] | None = None
    ) -> list[ToolCallRecord]:
        params: dict[str, Any] = {"p_tenant": tenant, "p_limit": limit}
        if before is not None:
            params.update(zip(("p_at", "p_run", "p_round", "p_position"), before, strict=True))
        rows = await self.backend.fetch(awaiting_statement(before is not None), params)
        return [ToolCallRecord.from_row(r) for r in rows]

    async def of_run(self, run_id: str) -> list[ToolCallRecord]:
        rows = await self.backend.fetch(run_statement(), {"p_run": run_id})
        return [ToolCallRecord.from_row(r) for r in rows]

    async def due(self, now: datetime) -> list[str]:
        rows = await self.backend.fetch(due_statement(), {"p_now": now})
        return [str(r["run_id"]) for r in rows]

    async def decide(
        self,
        record: RunRecord,
        change: Change,
        decisions: Sequence[CallDecision],
        now: datetime,
    ) -> RunRecord | None:
        """Apply `change` to the run as read and, if it won, write `decisions`; the run as
        changed, or None when refused (someone else changed it first: read again)."""
        wakes: list[Wake] = []
        async with self.backend.transaction() as conn:
            done = await self.backend.change(
                ChangeWrite(
                    record.id,
                    change,
                    now,
                    known=record,
                    conn=conn,
                    scope=Scope.of(record.tenant_id),
                )
            )
            if done.record is None:
                return None
            for d in decisions:
                values: dict[str, Any] = {
                    "approval": d.approval,
                    "decided_by": d.decided_by,
                    "decided_at": now,
                    "executed_arguments": d.executed_arguments,
                }
                if d.queue is not None:
                    values |= {"queue": d.queue, "lease_expires_at": now}
                    wakes.append((QUEUE_CHANNEL, bell_of(record.tenant_id, d.queue)))
                if d.result_hash is not None:
                    values |= {"result": d.result, "result_hash": d.result_hash}
                    values["submitted_at"] = now
                await conn.execute(
                    tc.update()
                    .where(
                        tc.c.run_id == record.id,
                        tc.c.round == d.round,
                        tc.c.position == d.position,
                    )
                    .values(values)
                )
        self.backend.wake([*done.wakes, *wakes])
        metrics.transition(change.transition.value, done.record.status.value)
        return done.record
