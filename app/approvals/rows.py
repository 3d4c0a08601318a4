"""Approvals in the store: the decisions' writes on gated calls, and the reads of pending
approvals (a tenant's inbox, a run's, the timeout sweep's, the dashboard's inbox with
what each card shows of its run).

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
from app.approvals.inbox import CallKey, InboxRow
from app.core.lifecycle import ApprovalStatus, RunStatus
from app.core.scope import Scope
from app.store.backend.base import QUEUE_CHANNEL, Backend, ChangeWrite, Wake
from app.store.backend.leases import bell_of
from app.store.changes import Change
from app.store.run_records import RunRecord, ToolCallRecord
from app.store.schema import Timestamp, run_configs, run_messages, runs, tool_calls
from app.store.scoping import p_tenant, scope_params, scoped, within

tc = tool_calls
#: Pending approvals (the partial indexes' predicate, as a literal).
AWAITING = tc.c.approval == sa.literal_column(f"'{ApprovalStatus.PENDING.value}'")
#: The named agent a run started from (its configuration's `agent` mark), as text.
AGENT_NAME = run_configs.c.config[("agent", "name")].as_string()
AGENT_VERSION = run_configs.c.config[("agent", "version")].as_string()


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
    return stmt.where(_before_cursor(order)) if paged else stmt


def _before_cursor(order: tuple[Any, ...]) -> Any:
    """The calls after the cursor's (`p_at`, `p_run`, `p_round`, `p_position`), newest
    first: a row comparison on the order's columns."""
    after = sa.tuple_(
        sa.bindparam("p_at", type_=Timestamp),
        sa.bindparam("p_run", type_=sa.String()),
        sa.bindparam("p_round", type_=sa.Integer()),
        sa.bindparam("p_position", type_=sa.Integer()),
    )
    return sa.tuple_(*order) < after


@functools.cache
def inbox_statement(paged: bool, tenant: bool, tool: bool, agent: bool) -> Any:
    """Pending approvals newest first, at most `p_limit`, with their runs' agents; only
    tenant `p_tenant`'s (`tenant`), tool `p_tool`'s (`tool`), of runs started from agent
    `p_agent` (`agent`), before the cursor (`paged`: as `awaiting_statement`)."""
    order = (tc.c.approval_requested_at, tc.c.run_id, tc.c.round, tc.c.position)
    stmt = (
        sa.select(*tc.c, AGENT_NAME.label("agent_name"), AGENT_VERSION.label("agent_version"))
        .select_from(tc.join(run_configs, run_configs.c.run_id == tc.c.run_id))
        .where(AWAITING, *_waiting_runs())
        .order_by(*(c.desc() for c in order))
        .limit(sa.bindparam("p_limit", type_=sa.Integer()))
    )
    if tenant:
        stmt = stmt.where(tc.c.tenant_id == p_tenant())
    if tool:
        stmt = stmt.where(tc.c.name == sa.bindparam("p_tool", type_=sa.String()))
    if agent:
        stmt = stmt.where(sa.bindparam("p_agent", type_=sa.String()) == AGENT_NAME)
    return stmt.where(_before_cursor(order)) if paged else stmt


def named_query(keys: Sequence[CallKey], scope: Scope) -> sa.Select[Any]:
    """The gated calls of these keys in `scope`, decided or not, each with its run's
    status and turn (whether it still awaits a decision)."""
    return (
        sa.select(*tc.c, runs.c.status.label("run_status"), runs.c.turn.label("run_turn"))
        .select_from(tc.join(runs, runs.c.id == tc.c.run_id))
        .where(sa.tuple_(tc.c.run_id, tc.c.round, tc.c.position).in_(list(keys)))
        .where(tc.c.approval.is_not(None), *within(tc.c.tenant_id, scope))
    )


def log_ends_query(run_ids: Sequence[str]) -> sa.Select[Any]:
    """The first and the latest log batch of each run (by primary key): the first holds
    its prompt, the latest the model turn that asked for its waiting round's calls."""
    log = run_messages
    other = run_messages.alias("other")
    first = sa.select(sa.func.min(other.c.seq)).where(other.c.run_id == log.c.run_id)
    latest = sa.select(sa.func.max(other.c.seq)).where(other.c.run_id == log.c.run_id)
    return (
        sa.select(log.c.run_id, log.c.seq, log.c.body)
        .where(log.c.run_id.in_(list(run_ids)))
        .where(sa.or_(log.c.seq == first.scalar_subquery(), log.c.seq == latest.scalar_subquery()))
        .order_by(log.c.run_id, log.c.seq)
    )


def rounds_query(rounds: Sequence[tuple[str, int]]) -> sa.Select[Any]:
    """Every call of these rounds (run id, round), in order."""
    return (
        tc.select()
        .where(sa.tuple_(tc.c.run_id, tc.c.round).in_(list(rounds)))
        .order_by(tc.c.run_id, tc.c.round, tc.c.position)
    )


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

    async def inbox(
        self,
        scope: Scope,
        limit: int,
        *,
        tool: str | None = None,
        agent: str | None = None,
        before: tuple[datetime, str, int, int] | None = None,
    ) -> list[InboxRow]:
        """A page of the pending approvals in `scope`, newest first, of tool `tool` and
        agent `agent` (None: any), older than `before` (a cursor's key)."""
        params: dict[str, Any] = {"p_limit": limit, **scope_params(scope)}
        if tool is not None:
            params["p_tool"] = tool
        if agent is not None:
            params["p_agent"] = agent
        paged = before is not None
        if before is not None:
            params.update(zip(("p_at", "p_run", "p_round", "p_position"), before, strict=True))
        stmt = inbox_statement(paged, scoped(scope), tool is not None, agent is not None)
        rows = await self.backend.fetch(stmt, params)
        return [
            InboxRow(
                ToolCallRecord.from_row(r),
                None if r["agent_name"] is None else str(r["agent_name"]),
                None if r["agent_version"] is None else str(r["agent_version"]),
            )
            for r in rows
        ]

    async def named(
        self, keys: Sequence[CallKey], scope: Scope
    ) -> list[tuple[ToolCallRecord, bool]]:
        """The gated calls of `keys` in `scope` (a key of none is left out), each with
        whether it still awaits a decision (pending, of its run's waiting round)."""
        if not keys:
            return []
        async with self.backend.reader() as conn:
            rows = (await conn.execute(named_query(keys, scope))).mappings().all()
        out = []
        for r in rows:
            call = ToolCallRecord.from_row(r)
            waiting = r["run_status"] == RunStatus.REQUIRES_ACTION.value
            out.append((call, call.awaits_approval and waiting and r["run_turn"] == call.round))
        return out

    async def log_ends(self, run_ids: Sequence[str]) -> dict[str, list[str]]:
        """The bodies of each run's first and latest log batches, in order (one when
        they are the same); a run without a log (a legacy whole document) has none."""
        out: dict[str, list[str]] = {run_id: [] for run_id in run_ids}
        if not run_ids:
            return out
        async with self.backend.reader() as conn:
            rows = (await conn.execute(log_ends_query(run_ids))).all()
        for run_id, _, body in rows:
            out[run_id].append(body)
        return out

    async def rounds(self, rounds: Sequence[tuple[str, int]]) -> list[ToolCallRecord]:
        """Every call of these rounds, gated or not, in order."""
        if not rounds:
            return []
        async with self.backend.reader() as conn:
            rows = (await conn.execute(rounds_query(rounds))).mappings().all()
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
