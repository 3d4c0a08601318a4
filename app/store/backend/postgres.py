"""The PostgreSQL backend. A change, a creation, a claim and a lease are each one
statement of data-modifying CTEs (`app.store.backend.pg_statements`, `pg_lease`), run
with the lifecycle's other hot statements as their own autocommit statements on asyncpg
directly (`app.store.backend.pg_direct`): CPU is what limits throughput here. Wake-ups
(NOTIFY) go out after the commit, coalesced (`app.store.wakeups`), except the workers' for
a write that is the only one of its process in flight: it notifies in its own statement,
one round trip sooner (no other notifying commit of the process to queue behind)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from app.core.events import LEDGER_EVENTS
from app.core.scope import Scope
from app.store import changes
from app.store.backend.base import (
    NOTIFY_CHANNEL,
    QUEUE_CHANNEL,
    STOP_CHANNEL,
    WEBHOOKS_CHANNEL,
    Changed,
    ChangeWrite,
    Lease,
    NewRun,
    Row,
    Wake,
)
from app.store.backend.dialect_forms import PostgresForms
from app.store.backend.leases import bell_of, in_flight_statement
from app.store.backend.pg_direct import Compiled, DirectPool, compile_statement
from app.store.backend.pg_lease import lease_statement
from app.store.backend.pg_reads import PgReads
from app.store.backend.pg_statements import PgStatements, Shape
from app.store.change_rows import EventPlan, ledger_row, tool_row, webhook_targets
from app.store.changes import Change
from app.store.run_records import NewEvent, RunRecord, ToolCallRecord
from app.store.schema import run_watchers
from app.store.scoping import scope_params, scoped
from app.store.sql.reads import key_params, run_by
from app.store.sql.runs import change_params
from app.store.wakeups import Wakeups
from app.timestamps import iso


class PostgresBackend(PostgresForms):
    """(Its statement forms are its dialect's: `PostgresForms`.)"""

    notifies = True
    folds = True

    def __init__(self, engine: AsyncEngine, webhook_url: str | None = None) -> None:
        self.engine = engine
        self.webhook_url = webhook_url  # the deployment's global endpoint, if any
        self.sql = PgStatements(webhook_url)
        self.reads = PgReads()
        # One-statement operations run in autocommit: the statement is the transaction,
        # which saves the BEGIN and COMMIT round trips.
        self._autocommit = engine.execution_options(isolation_level="AUTOCOMMIT")
        self.direct = DirectPool(engine)
        self._compiled: dict[int, tuple[Any, Compiled]] = {}
        self.wakeups = Wakeups(self._send_wakeup)
        self._writing = 0  # changes of this process in flight (`Shape.wakes`)

    # --- running statements ----------------------------------------------------------

    def reader(self) -> AbstractAsyncContextManager[AsyncConnection]:
        return self._autocommit.connect()

    def transaction(self) -> AbstractAsyncContextManager[AsyncConnection]:
        return self.engine.begin()

    def atomic(self) -> AbstractAsyncContextManager[AsyncConnection]:
        return self._autocommit.connect()

    def compile(self, stmt: Any) -> Compiled:
        """`stmt` as the direct pool runs it (compiled once)."""
        # Keyed by id; the entry keeps the statement alive, so the id stays its own.
        entry = self._compiled.get(id(stmt))
        if entry is None:
            entry = (stmt, compile_statement(stmt, self.engine.dialect))
            self._compiled[id(stmt)] = entry
        return entry[1]

    async def fetch(self, stmt: Any, params: Mapping[str, Any]) -> list[Row]:
        return await self.direct.fetchall(self.compile(stmt), params)

    async def fetch_one(self, stmt: Any, params: Mapping[str, Any]) -> Row | None:
        return await self.direct.fetchone(self.compile(stmt), params)  # type: ignore[no-any-return]

    async def _fetch_one(
        self, conn: AsyncConnection | None, stmt: Any, params: Mapping[str, Any]
    ) -> Row | None:
        """On `conn` (a sweep's transaction), else as its own statement on the direct pool."""
        if conn is None:
            return await self.fetch_one(stmt, params)
        return (await conn.execute(stmt, params)).mappings().first()

    def _alone(self) -> bool:
        """Whether no other write of this process is in flight: a write that makes a run
        due then wakes the workers in its own statement (`Shape.wakes`)."""
        return self._writing == 0

    async def _write(self, conn: Any, stmt: Any, params: Mapping[str, Any]) -> Row | None:
        """`_fetch_one`, counted as a write in flight."""
        self._writing += 1
        try:
            return await self._fetch_one(conn, stmt, params)
        finally:
            self._writing -= 1

    def wake(self, wakes: Iterable[Wake]) -> None:
        for channel, payload in wakes:
            self.wakeups.poke(channel, payload)

    async def _send_wakeup(self, channel: str, payload: str) -> None:
        stmt = self.reads._cached(
            ("wakeup",),
            lambda: sa.select(
                sa.func.pg_notify(
                    sa.bindparam("p_channel", type_=sa.String()),
                    sa.bindparam("p_payload", type_=sa.String()),
                )
            ),
        )
        await self.fetch_one(stmt, {"p_channel": channel, "p_payload": payload})

    async def flush(self) -> None:
        await self.wakeups.flush()

    async def aclose(self) -> None:
        """Send pending wake-ups, close the direct pool and dispose of the engine."""
        await self.wakeups.flush()
        await self.direct.aclose()
        await self.engine.dispose()

    # --- writes and reads ------------------------------------------------------------

    async def change(self, write: ChangeWrite) -> Changed:
        change, known, now = write.change, write.known, write.now
        values = change.columns()
        batch = change.snapshot.batch if change.snapshot is not None else None
        chain = changes.claim(*write.claim_for) if write.claim_for else None
        plan = EventPlan.of(change.events)
        if known is not None and not webhook_targets(known.config, self.webhook_url):
            plan = dataclasses.replace(plan, webhooks=())
        shape = Shape(
            keys=tuple(sorted(values)),
            statuses=tuple(sorted(s.value for s in change.sources)),
            plan=plan,
            fenced=change.expect_version is not None,
            bump=change.moves_token,
            tool_rows=len(change.tool_calls),
            answers=len(change.answers),
            batch=batch is not None,
            chain=EventPlan.of(chain.events) if chain else None,
            closes_calls=change.closes_calls,
            reads_config=known is None,
            scoped=scoped(write.scope),
            ends=change.ends,
            bills=change.bills,
            wakes=change.notify and self._alone(),
        )
        params = change_params(change, now)
        params.update(self._event_params(change.events, now))
        params["p_id"] = write.run_id
        params.update(scope_params(write.scope))
        _side_params(params, change, now)
        if chain is not None:
            params.update(change_params(chain, now, "n_"))
            params.update(self._event_params(chain.events, now, "n_"))
            params["n_p_limit"] = 1
        row = await self._write(write.conn, self.sql.change(shape), params)
        if row is None:
            return Changed(None)
        queues = sorted({c.queue for c in change.tool_calls if c.queue is not None})
        if queues and row["id"] is not None:  # (the bell of the run's tenant's queue)
            queues = [bell_of(row["tenant_id"], q) for q in queues]
        done = Changed(
            None,
            wakes=_wakes(
                row, notify=change.notify and not shape.wakes, queues=queues, stops=change.stops
            ),
        )
        if row["id"] is not None:
            done.record = RunRecord.from_row(row, known=known)
        if chain is not None and row["n_id"] is not None:
            claimed = RunRecord.from_row(row, prefix="n_", log=row["n_log"])
            done.claimed = claimed.with_calls(row["n_calls"])
        return done

    async def create(self, run: NewRun) -> Changed:
        keys = tuple(sorted(run.values))
        idempotent = run.values.get("idempotency_key") is not None
        woken = self._alone() and run.conn is None
        stmt = self.sql.insert(keys, EventPlan.of(run.events), idempotent, woken)
        params: dict[str, Any] = {f"v_{k}": run.values[k] for k in keys}
        params.update({"c_config": run.config, "c_metadata": run.metadata})
        params.update({f"c_{k}": v for k, v in run.lineage.items()})
        params.update(self._event_params(run.events, run.now))
        batch = run.snapshot.batch
        if batch is not None:
            params.update({"b_seq": batch.seq, "b_body": batch.body})
        row = await self._write(run.conn, stmt, params)
        if row is None:
            return Changed(None)
        return Changed(RunRecord.from_row(row), wakes=_wakes(row, notify=not woken))

    async def claim(self, change: Change, now: datetime, limit: int) -> list[RunRecord]:
        stmt = self.sql.claim(EventPlan.of(change.events))
        params = change_params(change, now)
        params.update(self._event_params(change.events, now))
        params["p_limit"] = limit
        rows = await self.fetch(stmt, params)
        return [RunRecord.from_row(r, log=r["log"]).with_calls(r["calls"]) for r in rows]

    async def run(self, key: str, value: str, *, with_log: bool, scope: Scope) -> RunRecord | None:
        shape = scoped(scope)
        stmt = self.reads.by(key, shape) if with_log else run_by(key, shape)
        row = await self.fetch_one(stmt, key_params(value, scope))
        if row is None:
            return None
        return RunRecord.from_row(row, log=row["log"] if with_log else None)

    async def pending(
        self, key: str, value: str, *, scope: Scope
    ) -> tuple[RunRecord, list[ToolCallRecord]] | None:
        stmt = self.reads.submission_read(key, scoped(scope))
        row = await self.fetch_one(stmt, key_params(value, scope))
        if row is None:
            return None
        return RunRecord.from_row(row), [ToolCallRecord.from_row(c) for c in row["calls"]]

    async def calls_of_rounds(self, rounds: Mapping[str, int]) -> list[ToolCallRecord]:
        params = {"p_ids": list(rounds), "p_rounds": list(rounds.values())}
        rows = await self.fetch(self.reads.calls_of_rounds(), params)
        return [ToolCallRecord.from_row(r) for r in rows]

    async def lease_calls(self, lease: Lease) -> list[ToolCallRecord]:
        params: dict[str, Any] = {
            "p_tenant": lease.tenant,
            "p_queue": lease.queue,
            "p_now": lease.now,
            "p_limit": lease.limit,
            "p_owner": lease.owner,
            "p_until": lease.until,
            "p_until_iso": iso(lease.until),
        }
        if lease.max_in_flight is None:
            rows = await self.fetch(lease_statement(), params)
            return [ToolCallRecord.from_row(r) for r in rows]
        # A limited queue: its leases take turns (a transaction-scoped advisory lock on
        # the limit key), and each counts what is in flight in a statement that starts
        # after the lock, so it sees every lease committed before it: none overshoots.
        key = f"queue:{lease.tenant}/{lease.queue}"
        async with self.engine.begin() as conn:
            await conn.execute(
                sa.select(sa.func.pg_advisory_xact_lock(sa.func.hashtextextended(key, 0)))
            )
            busy = (await conn.execute(in_flight_statement(), params)).scalar_one()
            room = min(lease.limit, lease.max_in_flight - int(busy))
            if room <= 0:
                return []
            leased = await conn.execute(lease_statement(), {**params, "p_limit": room})
            return [ToolCallRecord.from_row(r) for r in leased.mappings().all()]

    async def watch(self, watcher: str, run_ids: Sequence[str], ttl_seconds: float) -> None:
        params = {"p_ids": list(run_ids), "p_watcher": watcher, "p_ttl": float(ttl_seconds)}
        async with self.engine.begin() as conn:
            await conn.execute(
                run_watchers.delete().where(run_watchers.c.expires_at < sa.func.now())
            )
            await conn.execute(self.reads.watch(), params)

    # --- parameters ------------------------------------------------------------------

    def _event_params(
        self, events: Sequence[NewEvent], now: datetime, prefix: str = ""
    ) -> dict[str, Any]:
        """The events' rows (and their ledger rows) as parameters of the CTEs."""
        params: dict[str, Any] = {"p_now": now, "p_now_iso": iso(now)}
        if self.webhook_url:
            params["p_global_url"] = self.webhook_url
        for i, e in enumerate(events):
            params[f"{prefix}e{i}_type"] = e.type
            params[f"{prefix}e{i}_data"] = e.data
            params[f"{prefix}e{i}_actor"] = e.actor
            if e.type in LEDGER_EVENTS:
                for column, value in ledger_row(e).items():
                    params[f"{prefix}l{i}_{column}"] = value
        return params


def _side_params(params: dict[str, Any], change: Change, now: datetime) -> None:
    """The parameters of a change's pending calls, answers and log batch."""
    for i, c in enumerate(change.tool_calls):
        for column, value in tool_row(c, change.round, now).items():
            params[f"t{i}_{column}"] = value
    for i, a in enumerate(change.answers):
        params[f"a{i}_round"] = a.round
        params[f"a{i}_position"] = a.position
        params[f"a{i}_result"] = a.result
        params[f"a{i}_hash"] = a.result_hash
    batch = change.snapshot.batch if change.snapshot is not None else None
    if batch is not None:
        params["b_seq"] = batch.seq
        params["b_body"] = batch.body


def _wakes(
    row: Row, *, notify: bool, queues: Sequence[str] = (), stops: bool = False
) -> list[Wake]:
    """What to wake once the write of `row` is committed: the workers when `notify` and
    the run changed, the executors of each of `queues` when it changed, the webhook
    senders when an outbox row was written, and with `stops` the worker that may hold
    the run (payload: its id)."""
    wakes: list[Wake] = []
    if row["id"] is not None:
        if stops:
            wakes.append((STOP_CHANNEL, str(row["id"])))
        if notify:
            wakes.append((NOTIFY_CHANNEL, ""))
        wakes.extend((QUEUE_CHANNEL, q) for q in queues)
    if row.get("webhooks_announced"):
        wakes.append((WEBHOOKS_CHANNEL, ""))
    return wakes
