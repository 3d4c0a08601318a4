"""The run repository: applies changes (its reads are `app.store.run_reads`). The SQL is built in
`app.store.statements`; what a change writes is decided by `app.store.changes`.

Each public method is one transaction. A change is a compare-and-set (`WHERE status IN
(...)`, and `AND version = :v` for the lease holder's writes, the fencing token) with
its events, side rows and log batch in the same transaction: on PostgreSQL one
statement on the direct pool (`app.store.direct`), on SQLite one transaction.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from app import metrics
from app.core.events import LEDGER_EVENTS
from app.core.stored import Snapshot
from app.store import changes
from app.store.changes import Change
from app.store.direct import Compiled, DirectPool, compile_statement
from app.store.errors import NotFoundError
from app.store.outbox import WEBHOOKS_CHANNEL, Outbox
from app.store.queues import QUEUE_CHANNEL, Queues, QueueStatements
from app.store.records import (
    RUN_FIELDS,
    RUN_WIDTH,
    NewEvent,
    RunRecord,
)
from app.store.run_reads import RunReads
from app.store.schema import (
    run_configs,
    runs,
)
from app.store.sqlite_rows import tool_row, webhook_targets, write_events, write_rows
from app.store.statements import (
    EVENTS_CHANNEL,
    EventPlan,
    Shape,
    Statements,
    ledger_row,
)
from app.store.wakeups import Wakeups
from app.store.watchers import Watchers
from app.timestamps import iso

NOTIFY_CHANNEL = "agentrun_runs"
__all__ = [
    "EVENTS_CHANNEL",
    "NOTIFY_CHANNEL",
    "QUEUE_CHANNEL",
    "WEBHOOKS_CHANNEL",
    "NotFoundError",
    "RunStore",
]


def _event_params(
    events: Sequence[NewEvent], now: datetime, global_url: str | None, prefix: str = ""
) -> dict[str, Any]:
    params: dict[str, Any] = {"p_now": now, "p_now_iso": iso(now)}
    if global_url:
        params["p_global_url"] = global_url
    for i, e in enumerate(events):
        params[f"{prefix}e{i}_type"] = e.type
        params[f"{prefix}e{i}_data"] = e.data
        params[f"{prefix}e{i}_actor"] = e.actor
        if e.type in LEDGER_EVENTS:
            for column, value in ledger_row(e).items():
                params[f"{prefix}l{i}_{column}"] = value
    return params


class RunStore(RunReads, Watchers, Outbox, Queues):
    def __init__(self, engine: AsyncEngine, *, webhook_url: str | None = None) -> None:
        self.engine = engine
        self.is_postgres = engine.dialect.name == "postgresql"
        self.webhook_url = webhook_url  # the deployment's global endpoint, if any
        self.sql = Statements(self.is_postgres, webhook_url)
        self.queue_sql = QueueStatements(self.is_postgres)
        # One-statement operations run in autocommit on PostgreSQL: the statement is the
        # transaction, which saves the BEGIN and COMMIT round trips.
        self._autocommit = (
            engine.execution_options(isolation_level="AUTOCOMMIT") if self.is_postgres else None
        )
        # The lifecycle's hot statements skip SQLAlchemy's execution layer on PostgreSQL.
        self._direct = DirectPool(engine) if self.is_postgres else None
        self._compiled: dict[int, tuple[Any, Compiled]] = {}
        # Wake-ups (workers: a run is due; webhook senders: a delivery is) go out after
        # the commit, coalesced (app.store.wakeups), not as NOTIFYs inside it.
        self.wakeups = Wakeups(self._send_wakeup)
        self._announced_at: dict[int, int | None] = {}

    async def aclose(self) -> None:
        """Send pending wake-ups, close the direct pool and dispose of the engine."""
        await self.wakeups.flush()
        if self._direct is not None:
            await self._direct.aclose()
        await self.engine.dispose()

    # --- execution ------------------------------------------------------------------------

    async def _send_wakeup(self, channel: str, payload: str) -> None:
        stmt = self.sql._cached(
            ("wakeup",),
            lambda: sa.select(
                sa.func.pg_notify(
                    sa.bindparam("p_channel", type_=sa.String()),
                    sa.bindparam("p_payload", type_=sa.String()),
                )
            ),
        )
        await self._fetch(None, stmt, {"p_channel": channel, "p_payload": payload})

    def _wake_after(
        self, stmt: Any, row: Any, *, notify: bool, queues: Iterable[str] = ()
    ) -> list[tuple[str, str]]:
        """The channels (and payloads) to wake once `row` (a result of `stmt`) is
        committed: the workers' when `notify` and the run changed, the webhook senders'
        when an outbox row was written, the executors of each of `queues` when the run
        changed (PostgreSQL; SQLite listeners poll)."""
        if not self.is_postgres or row is None:
            return []
        channels = [(NOTIFY_CHANNEL, "")] if notify and row[0] is not None else []
        if row[0] is not None:
            channels.extend((QUEUE_CHANNEL, q) for q in sorted(set(queues)))
        key = id(stmt)
        if key not in self._announced_at:
            names = list(stmt.selected_columns.keys())
            self._announced_at[key] = (
                names.index("webhooks_announced") if "webhooks_announced" in names else None
            )
        at = self._announced_at[key]
        if at is not None and row[at]:
            channels.append((WEBHOOKS_CHANNEL, ""))
        return channels

    def _wake(self, channels: Iterable[tuple[str, str]]) -> None:
        for channel, payload in channels:
            self.wakeups.poke(channel, payload)

    def _compile(self, stmt: Any) -> Compiled:
        # Keyed by id; the entry keeps the statement alive, so the id stays its own.
        entry = self._compiled.get(id(stmt))
        if entry is None:
            entry = (stmt, compile_statement(stmt, self.engine.dialect))
            self._compiled[id(stmt)] = entry
        return entry[1]

    async def _fetch(self, conn: AsyncConnection | None, stmt: Any, params: dict[str, Any]) -> Any:
        """The first row of `stmt`: on `conn`, or (None, PostgreSQL) as its own autocommit
        statement on the direct pool."""
        if conn is not None:
            return (await conn.execute(stmt, params)).first()
        if self._direct is None:
            raise RuntimeError("no direct pool on this database")
        return await self._direct.fetchone(self._compile(stmt), params)

    def _single(self) -> Any:
        """A change's transaction: none (the direct pool's autocommit statement) on
        PostgreSQL, a transaction on SQLite."""
        if self._direct is not None:
            return contextlib.nullcontext(None)
        return self.engine.begin()

    def _reader(self) -> Any:
        """A connection for a read that is one statement: in autocommit on PostgreSQL,
        so it costs no BEGIN and no ROLLBACK round trip."""
        if self._autocommit is not None:
            return self._autocommit.connect()
        return self.engine.connect()

    def _one_statement(self) -> Any:
        """A connection for an operation that is a single (atomic) statement."""
        if self._autocommit is not None:
            return self._autocommit.connect()
        return self.engine.begin()

    # --- changes --------------------------------------------------------------------------

    async def apply(
        self,
        run_id: str,
        change: Change,
        now: datetime,
        *,
        claim_for: tuple[str, datetime] | None = None,
        conn: AsyncConnection | None = None,
        wakes: list[tuple[str, str]] | None = None,
        known: RunRecord | None = None,
    ) -> tuple[RunRecord | None, RunRecord | None]:
        """Apply `change` to run `run_id` with one compare-and-set: (the run as changed,
        or None when refused: its status or fencing token moved on; the run claimed).

        `known`: the run as the caller read it. Its configuration and metadata never
        change, so the statement does not read them back, and a run with no webhook (in a
        deployment with no global one) gets no outbox step at all (PostgreSQL).

        With `claim_for` (worker, lease until) the same statement also claims the next
        due run for that worker (PostgreSQL; SQLite claims after): a lease holder's last
        write and its next claim cost one round trip. The claim happens even when the
        change is refused (a lost lease); the caller owns what it returns. With `conn`
        (SQLite, or a sweep's transaction) it runs there and the caller wakes the
        channels added to `wakes` after its commit."""
        if conn is None and not self.is_postgres:
            async with self.engine.begin() as own:
                done = await self.apply(run_id, change, now, conn=own, wakes=wakes)
            claimed = await self.claim(claim_for[0], now, claim_for[1]) if claim_for else None
            return done[0], claimed
        values = change.columns()
        batch = change.snapshot.batch if change.snapshot is not None else None
        chain = changes.claim(*claim_for) if claim_for and self.is_postgres else None
        plan = EventPlan.of(change.events)
        if known is not None and not webhook_targets(known.config, self.webhook_url):
            plan = dataclasses.replace(plan, webhooks=())
        shape = Shape(
            tuple(sorted(values)),
            tuple(sorted(s.value for s in change.sources)),
            plan,
            change.expect_version is not None,
            change.moves_token,
            len(change.tool_calls) if self.is_postgres else 0,
            len(change.answers) if self.is_postgres else 0,
            batch is not None and self.is_postgres,
            EventPlan.of(chain.events) if chain else None,
            change.closes_calls and self.is_postgres,
            known is None or not self.is_postgres,
        )
        stmt = self.sql.change(shape)
        params = {f"v_{k}": v for k, v in values.items()}
        params.update(_event_params(change.events, now, self.webhook_url))
        params["p_id"] = run_id
        if change.expect_version is not None:
            params["p_version"] = change.expect_version
        if self.is_postgres:
            _side_params(params, change, now, batch)
        if chain is not None:
            params.update({f"n_v_{k}": v for k, v in chain.columns().items()})
            params.update(_event_params(chain.events, now, self.webhook_url, "n_"))
            params["n_p_limit"] = 1
        row = await self._fetch(conn, stmt, params)
        queues = [c.queue for c in change.tool_calls if c.queue is not None]
        channels = self._wake_after(stmt, row, notify=change.notify, queues=queues)
        if conn is None:
            self._wake(channels)
        elif wakes is not None:
            wakes.extend(channels)
        if row is None:
            return None, None
        if not self.is_postgres and conn is not None:
            row = await self._configured(conn, row)
        elif not shape.reads_config and known is not None:
            row = (*row[:RUN_FIELDS], known.config, known.metadata, *row[RUN_FIELDS:])
        record = RunRecord.from_row(row) if row[0] is not None else None
        claimed = None
        if chain is not None and row[-1 - RUN_WIDTH] is not None:
            claimed = RunRecord.from_row(row[-1 - RUN_WIDTH : -1], log=row[-1])
            metrics.claimed([claimed.available_at], now)
        if record is not None:
            metrics.transition(change.transition.value, record.status.value)
        if record is not None and not self.is_postgres and conn is not None:
            await write_events(
                conn,
                record.id,
                record.last_event_seq,
                change.events,
                now,
                status=record.status.value,
                config=record.config,
                global_url=self.webhook_url,
            )
            await write_rows(
                conn,
                record.id,
                now,
                tool_rows=change.tool_calls,
                round=change.round,
                answers=change.answers,
                batch=batch,
                close=change.closes_calls,
            )
        return record, claimed

    async def create(
        self, values: dict[str, Any], events: Sequence[NewEvent], snapshot: Snapshot, now: datetime
    ) -> tuple[RunRecord, bool]:
        """Insert a run with its log's first batch; with an idempotency key already taken,
        return the stored run."""
        config, meta = values["config"], values["metadata"]
        values = {
            **{k: v for k, v in values.items() if k not in ("config", "metadata")},
            "state": snapshot.control,
            "last_event_seq": len(events),
            "created_at": now,
            "updated_at": now,
        }
        key = values.get("idempotency_key")
        keys = tuple(sorted(values))
        stmt = self.sql.insert(keys, EventPlan.of(events), key is not None)
        params: dict[str, Any] = {f"v_{k}": values[k] for k in keys}
        params.update({"c_config": config, "c_metadata": meta})
        params.update(_event_params(events, now, self.webhook_url))
        batch = snapshot.batch
        if batch is not None:
            params.update({"b_seq": batch.seq, "b_body": batch.body})
        async with self._single() as conn:
            row = await self._fetch(conn, stmt, params)
            if row is not None and conn is not None:
                await conn.execute(
                    run_configs.insert().values(
                        run_id=row[0], config=config, metadata=meta, created_at=now
                    )
                )
                row = (*row, config, meta)
                await write_events(conn, row[0], len(events), events, now)
                await write_rows(conn, row[0], now, batch=batch)
            if row is None:  # the idempotency key is taken: the stored run answers
                existing = await self._fetch(conn, self.sql.by("idempotency_key"), {"p_key": key})
                if existing is None:  # deleted between the two statements: ask again
                    raise NotFoundError("idempotency key")
                return RunRecord.from_row(existing), False
        self._wake(self._wake_after(stmt, row, notify=True))
        record = RunRecord.from_row(row)
        metrics.transition("create", record.status.value)
        return record, True

    async def claim(self, worker_id: str, now: datetime, lease_until: datetime) -> RunRecord | None:
        """Take the oldest due queued run (SKIP LOCKED on PostgreSQL)."""
        claimed = await self.claim_many(worker_id, now, lease_until, 1)
        return claimed[0] if claimed else None

    async def claim_many(
        self, worker_id: str, now: datetime, lease_until: datetime, limit: int
    ) -> list[RunRecord]:
        """Take up to `limit` of the oldest due queued runs with one statement, however
        many idle slots it feeds, each with its log (to load it whole)."""
        change = changes.claim(worker_id, lease_until)
        stmt = self.sql.claim(EventPlan.of(change.events))
        params = {f"v_{k}": v for k, v in change.columns().items()}
        params.update(_event_params(change.events, now, self.webhook_url))
        params["p_limit"] = limit
        if self._direct is not None:
            rows = await self._direct.fetchall(self._compile(stmt), params)
            claimed = [RunRecord.from_row(row, log=row[-1]) for row in rows]
            metrics.claimed([r.available_at for r in claimed], now)
            return claimed
        async with self.engine.begin() as conn:
            rows = [await self._configured(conn, r) for r in await conn.execute(stmt, params)]
            records = [RunRecord.from_row(row) for row in rows]
            out = []
            for record in records:
                await write_events(conn, record.id, record.last_event_seq, change.events, now)
                out.append(record.with_log(await self._log(conn, record.id)))
        metrics.claimed([r.available_at for r in out], now)
        return out

    async def heartbeat(
        self, run_id: str, version: int, worker_id: str, lease_until: datetime, now: datetime
    ) -> bool:
        """Extend the lease; False when it was lost (the fencing token moved on)."""
        done, _ = await self.apply(run_id, changes.heartbeat(version, worker_id, lease_until), now)
        return done is not None

    async def append_events(
        self, run_id: str, version: int | None, events: Sequence[NewEvent], now: datetime
    ) -> bool:
        """Events of the lease holder without a state change (streamed text deltas): fenced
        on `version` and status running, they leave the fencing token where the holder's
        final change expects it; False when the fence refused. `version` None (a worker
        that lost its lease recording the model calls it made, so the ledger counts
        them) appends whatever the run's status. No events: nothing written, True."""
        if not events:
            return True
        change = changes.bill(events) if version is None else changes.record(version, events)
        done, _ = await self.apply(run_id, change, now)
        return done is not None

    # --- sweeps ---------------------------------------------------------------------------

    async def reap_expired_leases(self, now: datetime) -> list[str]:
        """Re-queue running runs whose worker stopped heartbeating (the lease is lost)."""
        return await self._sweep(changes.lease_lost(now), runs.c.lease_expires_at < now, now)

    async def expire_suspended(self, now: datetime) -> list[str]:
        return await self._sweep(changes.expire(), runs.c.expires_at < now, now)

    async def _sweep(self, change: Change, due: sa.ColumnElement[bool], now: datetime) -> list[str]:
        """Apply `change` to every run in its source status matching `due` (row-locked)."""
        wakes: list[tuple[str, str]] = []
        (status,) = change.sources
        async with self.engine.begin() as conn:
            # The status as a literal: it matches the partial index's predicate (a
            # parameter could not, in a generic plan).
            in_status = runs.c.status == sa.literal_column(f"'{status.value}'")
            stmt = sa.select(runs.c.id).where(in_status, due).limit(100)
            if self.is_postgres:
                stmt = stmt.with_for_update(skip_locked=True)
            ids = list((await conn.execute(stmt)).scalars())
            for run_id in ids:
                await self.apply(run_id, change, now, conn=conn, wakes=wakes)
        self._wake(wakes)
        return ids


def _side_params(params: dict[str, Any], change: Change, now: datetime, batch: Any) -> None:
    """PostgreSQL: the parameters of a change's pending calls, answers and log batch."""
    for i, c in enumerate(change.tool_calls):
        for column, value in tool_row(c, change.round, now).items():
            params[f"t{i}_{column}"] = value
    for i, a in enumerate(change.answers):
        params[f"a{i}_round"] = a.round
        params[f"a{i}_position"] = a.position
        params[f"a{i}_result"] = a.result
        params[f"a{i}_hash"] = a.result_hash
    if batch is not None:
        params["b_seq"] = batch.seq
        params["b_body"] = batch.body
