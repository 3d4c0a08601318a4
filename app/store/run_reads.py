"""A run store's reads of runs: a run (with its log), lists, pending calls, events,
counts, service secrets. The statements only these reads use are built here, once; those
the backends use too in `app.store.sql.reads`; the reads whose form differs (a run with
its log, a run with its pending calls) are the backend's."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa

from app.core.lifecycle import RunStatus
from app.core.scope import Scope
from app.store.backend.base import Backend
from app.store.errors import NotFoundError
from app.store.reports import count_by_status
from app.store.run_records import EventRecord, RunRecord, ToolCallRecord
from app.store.schema import (
    CREATED,
    RUN_CREATED,
    created_beyond,
    newest_first,
    run_configs,
    run_events,
    runs,
    select_runs,
    service_secrets,
    tool_calls,
)
from app.store.scoping import p_tenant, scope_params, scoped
from app.store.sql.runs import is_queued
from app.store.usage import usage_totals

# --- statements ----------------------------------------------------------------------------


@functools.cache
def list_runs(status: RunStatus | None, paged: bool, scoped: bool = True) -> sa.Select[Any]:
    """A tenant's runs (`p_tenant`; every tenant's unless `scoped`) newest first, of one
    status or all, after a keyset cursor when `paged`."""
    # Of one status: that status's index on `runs` (ix_runs_waiting or ix_runs_ended,
    # tenant first; running runs, which leases bound, by ix_runs_lease and a sort), else
    # all runs by the creation index of `run_configs` (tenant first).
    on = CREATED if status is None else RUN_CREATED
    stmt = (
        select_runs().order_by(*newest_first(on)).limit(sa.bindparam("p_limit", type_=sa.Integer()))
    )
    if scoped:
        held = run_configs.c.tenant_id if status is None else runs.c.tenant_id
        stmt = stmt.where(held == p_tenant())
    if status is not None:
        stmt = stmt.where(runs.c.status == sa.literal_column(f"'{status.value}'"))
    if paged:
        created = sa.bindparam("p_created", type_=runs.c.created_at.type)
        stmt = stmt.where(
            created_beyond(created, sa.bindparam("p_id", type_=sa.String()), ascending=False, on=on)
        )
    return stmt


@functools.cache
def events_after() -> sa.Select[Any]:
    """A run's events after a sequence number, in order, at most `p_limit`."""
    return (
        run_events.select()
        .where(
            run_events.c.run_id == sa.bindparam("p_id", type_=sa.String()),
            run_events.c.seq > sa.bindparam("p_after", type_=sa.Integer()),
        )
        .order_by(run_events.c.seq)
        .limit(sa.bindparam("p_limit", type_=sa.Integer()))
    )


@functools.cache
def queue_ahead() -> sa.Select[Any]:
    """How many due queued runs go before run (`p_priority`, `p_rank`, `p_available`,
    `p_id`) in claim order, and how many of them for a higher priority: a range of
    ix_runs_claim up to the run's entry."""
    mine: tuple[Any, ...] = (
        sa.bindparam("p_rank", type_=runs.c.fair_rank.type),
        sa.bindparam("p_available", type_=runs.c.available_at.type),
        sa.bindparam("p_id", type_=runs.c.id.type),
    )
    priority = sa.bindparam("p_priority", type_=sa.Integer())
    higher = runs.c.priority > priority
    before = sa.or_(
        higher,
        sa.and_(
            runs.c.priority == priority,
            sa.tuple_(runs.c.fair_rank, runs.c.available_at, runs.c.id) < sa.tuple_(*mine),
        ),
    )
    return sa.select(
        sa.func.count().label("ahead"),
        sa.func.coalesce(sa.func.sum(sa.case((higher, 1), else_=0)), 0).label("higher"),
    ).where(
        is_queued(),
        runs.c.available_at <= sa.bindparam("p_now", type_=runs.c.available_at.type),
        before,
    )


@functools.cache
def secret_named() -> sa.Select[Any]:
    return sa.select(service_secrets.c.value).where(
        service_secrets.c.name == sa.bindparam("p_name", type_=sa.String())
    )


# --- the repository ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Pending:
    """A suspended run as a submission reads it: the run and its pending round's calls."""

    record: RunRecord
    calls: list[ToolCallRecord]


class Lookups:
    """The reads of runs and what hangs off them."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self._insert_secret: Any = None  # (in the backend's form of insert-on-conflict)

    async def get(self, run_id: str, *, with_log: bool = False, scope: Scope) -> RunRecord | None:
        """A run (with its log when `with_log`: to load it whole), if it is in `scope`
        (None otherwise, as for a missing run)."""
        return await self.backend.run("id", run_id, with_log=with_log, scope=scope)

    async def by_idempotency_key(self, key: str, *, scope: Scope) -> RunRecord | None:
        """The run a create with this `Idempotency-Key` made in `scope` (a tenant's:
        keys are unique per tenant), if any."""
        return await self.backend.run("idempotency_key", key, with_log=False, scope=scope)

    async def list_runs(
        self,
        *,
        status: RunStatus | None,
        limit: int,
        before: tuple[datetime, str] | None,
        scope: Scope,
    ) -> list[RunRecord]:
        """Newest first; keyset pagination on (created_at, id); the runs in `scope`."""
        params: dict[str, Any] = {"p_limit": limit, **scope_params(scope)}
        if before is not None:
            params["p_created"], params["p_id"] = before
        stmt = list_runs(status, before is not None, scoped(scope))
        rows = await self.backend.fetch(stmt, params)
        return [RunRecord.from_row(r) for r in rows]

    async def tool_calls(self, run_id: str, round: int | None = None) -> list[ToolCallRecord]:
        stmt = tool_calls.select().where(tool_calls.c.run_id == run_id)
        if round is not None:
            stmt = stmt.where(tool_calls.c.round == round)
        stmt = stmt.order_by(tool_calls.c.round, tool_calls.c.position)
        async with self.backend.reader() as conn:
            rows = (await conn.execute(stmt)).mappings().all()
        return [ToolCallRecord.from_row(r) for r in rows]

    async def pending_calls(self, rounds: Mapping[str, int]) -> dict[str, list[ToolCallRecord]]:
        """The tool calls of each run's given round, for many runs in one query."""
        if not rounds:
            return {}
        out: dict[str, list[ToolCallRecord]] = {run_id: [] for run_id in rounds}
        for record in await self.backend.calls_of_rounds(rounds):
            out[record.run_id].append(record)
        return out

    async def pending(
        self,
        *,
        run_id: str | None = None,
        token_hash: str | None = None,
        scope: Scope,
    ) -> Pending:
        """A run (by id or callback token; in `scope` only) and the calls of
        its pending round, as a submission decides on them; `NotFoundError` when there is
        no such run."""
        if run_id is not None:
            found = await self.backend.pending("id", run_id, scope=scope)
        else:
            found = await self.backend.pending("callback_token_hash", token_hash or "", scope=scope)
        if found is None:
            raise NotFoundError(run_id or "callback")
        return Pending(*found)

    async def fences(self, run_ids: Sequence[str]) -> dict[str, int]:
        """The fencing token of each of these runs that is still running (a run missing
        from the answer is not: cancelled, re-queued, gone). One statement, by key."""
        if not run_ids:
            return {}
        stmt = sa.select(runs.c.id, runs.c.version).where(
            runs.c.id.in_(list(run_ids)), runs.c.status == RunStatus.RUNNING.value
        )
        async with self.backend.reader() as conn:
            rows = (await conn.execute(stmt)).all()
        return {str(r.id): int(r.version) for r in rows}

    async def events(self, run_id: str, *, after: int = 0, limit: int = 1000) -> list[EventRecord]:
        params = {"p_id": run_id, "p_after": after, "p_limit": limit}
        return [EventRecord.from_row(r) for r in await self.backend.fetch(events_after(), params)]

    async def queue_ahead(self, record: RunRecord, now: datetime) -> tuple[int, int]:
        """(How many due queued runs the claim takes before `record`, how many of those
        for a higher priority)."""
        params = {
            "p_priority": record.priority,
            "p_rank": record.fair_rank,
            "p_available": record.available_at,
            "p_id": record.id,
            "p_now": now,
        }
        row = await self.backend.fetch_one(queue_ahead(), params)
        return (0, 0) if row is None else (int(row["ahead"]), int(row["higher"]))

    async def count_by_status(self, scope: Scope) -> dict[str, int]:
        """By index and rollup, not by counting `runs` (app.store.reports)."""
        return await count_by_status(self.backend.engine, scope)

    async def usage_totals(self, start: datetime, end: datetime, scope: Scope) -> dict[str, Any]:
        """Sums of the usage ledger in [start, end): overall, by run status, by model (of
        the runs in `scope`)."""
        # (In a transaction, not autocommit: the report's session settings hold for it.)
        async with self.backend.engine.connect() as conn:
            return await usage_totals(conn, start, end, scope)

    async def secret(self, name: str, make: Callable[[], str]) -> str:
        """A service-wide secret shared by every process (created once, first writer wins:
        an insert that does nothing when the name is taken, then the stored value; no row
        is rewritten, so asking again writes nothing)."""
        if self._insert_secret is None:
            self._insert_secret = (
                self.backend.insert(service_secrets)
                .values(
                    name=sa.bindparam("p_name", type_=sa.String()),
                    value=sa.bindparam("p_value", type_=sa.String()),
                )
                .on_conflict_do_nothing(index_elements=["name"])
                .returning(service_secrets.c.value)
            )
        params = {"p_name": name, "p_value": make()}
        row = await self.backend.fetch_one(self._insert_secret, params)
        if row is None:  # taken: the first writer's
            row = await self.backend.fetch_one(secret_named(), params)
        if row is None:  # (secrets are never deleted)
            raise RuntimeError(f"secret {name!r} was neither stored nor found")
        return str(row["value"])
