"""The SQLite backend (embedded): every operation is a transaction on SQLAlchemy's
connection. SQLite has no data-modifying CTEs, so a change's side rows follow its UPDATE
in the same transaction (writers are serialized, BEGIN IMMEDIATE: nothing comes between);
nothing notifies, so listeners poll."""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import sqlite
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from app.core.lifecycle import TERMINAL, OutboxStatus
from app.core.scope import Scope
from app.core.stored import Batch
from app.store import changes
from app.store.backend.base import Changed, ChangeWrite, Lease, NewRun, Row, Wake
from app.store.backend.dialect_forms import SqliteForms
from app.store.backend.leases import (
    expired_event,
    in_flight_statement,
    leasable_calls,
    leased_event,
)
from app.store.change_rows import EventPlan, ledger_row, tool_row, webhook_payload, webhook_targets
from app.store.changes import Answer, Change
from app.store.run_records import NewEvent, NewToolCall, RunRecord, ToolCallRecord
from app.store.schema import (
    fair_ranks,
    model_calls,
    run_configs,
    run_events,
    run_messages,
    runs,
    tool_calls,
    unfolded_runs,
    webhook_outbox,
)
from app.store.scoping import scope_params, scoped
from app.store.sql.reads import calls_of_round, key_params, log_batches, run_by
from app.store.sql.runs import change_params, claim_keys, due_runs, fair_rank, update_run

tc = tool_calls


class SqliteBackend(SqliteForms):
    """(Its statement forms are its dialect's: `SqliteForms`.)"""

    notifies = False
    folds = True

    def __init__(self, engine: AsyncEngine, webhook_url: str | None = None) -> None:
        self.engine = engine
        self.webhook_url = webhook_url

    # --- running statements ----------------------------------------------------------

    def reader(self) -> contextlib.AbstractAsyncContextManager[AsyncConnection]:
        return self.engine.connect()

    def transaction(self) -> contextlib.AbstractAsyncContextManager[AsyncConnection]:
        return self.engine.begin()

    def atomic(self) -> contextlib.AbstractAsyncContextManager[AsyncConnection]:
        return self.engine.begin()

    @contextlib.asynccontextmanager
    async def _joined(self, conn: AsyncConnection | None) -> AsyncIterator[AsyncConnection]:
        """`conn` (a transaction the write joins), else a transaction of its own."""
        if conn is not None:
            yield conn
            return
        async with self.engine.begin() as own:
            yield own

    async def fetch(self, stmt: Any, params: Mapping[str, Any]) -> list[Row]:
        async with self.engine.begin() as conn:
            return list((await conn.execute(stmt, params)).mappings().all())

    async def fetch_one(self, stmt: Any, params: Mapping[str, Any]) -> Row | None:
        async with self.engine.begin() as conn:
            return (await conn.execute(stmt, params)).mappings().first()

    def wake(self, wakes: Iterable[Wake]) -> None:
        """Nothing listens: workers and streams poll."""

    async def flush(self) -> None:
        """No wake-ups to send."""

    async def aclose(self) -> None:
        await self.engine.dispose()

    # --- writes and reads ------------------------------------------------------------

    async def change(self, write: ChangeWrite) -> Changed:
        if write.conn is None:
            async with self.engine.begin() as conn:
                done = await self._change(write, conn)
        else:
            done = await self._change(write, write.conn)
        if write.claim_for is not None:
            claimed = await self.claim(changes.claim(*write.claim_for), write.now, 1)
            done.claimed = claimed[0] if claimed else None
        return done

    async def _change(self, write: ChangeWrite, conn: AsyncConnection) -> Changed:
        change, run_id, now = write.change, write.run_id, write.now
        values = change.columns()
        stmt = update_run(
            tuple(sorted(values)),
            tuple(sorted(s.value for s in change.sources)),
            len(change.events),
            fenced=change.expect_version is not None,
            bump=change.moves_token,
            scoped=scoped(write.scope),
        ).returning(*runs.c)
        params = {**change_params(change, now), "p_id": run_id, **scope_params(write.scope)}
        row = (await conn.execute(stmt, params)).mappings().first()
        if row is None:
            return Changed(None)
        record = await self._configured(conn, row)
        await self._write_events(conn, record, change.events, now, outbox=True)
        await _write_rows(conn, record, change, now)
        if change.ends or (change.bills and record.status in TERMINAL):
            unfolded = sqlite.insert(unfolded_runs).values(
                run_id=record.id,
                tenant_id=record.tenant_id,
                status=record.status.value,
                ended_at=now if change.ends else None,
                counts=change.ends,
            )
            await conn.execute(unfolded.on_conflict_do_nothing())
        return Changed(record)

    async def _configured(
        self, conn: AsyncConnection, row: Row, log: str | None = None
    ) -> RunRecord:
        """A `RETURNING runs.*` row as a record, with the run's config and metadata."""
        found = (
            await conn.execute(
                sa.select(run_configs.c.config, run_configs.c.metadata).where(
                    run_configs.c.run_id == row["id"]
                )
            )
        ).first()
        config, metadata = found if found is not None else (None, None)
        return RunRecord.from_row({**row, "config": config, "metadata": metadata}, log=log)

    async def create(self, run: NewRun) -> Changed:
        values = dict(run.values)
        rank = fair_rank(
            sqlite.insert(fair_ranks),
            sa.literal(values["priority"], runs.c.priority.type),
            sa.literal(values["fair_key"], runs.c.fair_key.type),
            sa.literal(values["created_at"], runs.c.available_at.type),
            sa.func.max,  # (SQLite's two-argument max is the greatest)
        )
        async with self._joined(run.conn) as conn:
            values["fair_rank"] = (await conn.execute(rank)).scalar_one()
            insert = sqlite.insert(runs).values(values)
            if run.values.get("idempotency_key") is not None:
                insert = insert.on_conflict_do_nothing(
                    index_elements=["tenant_id", "idempotency_key"],
                    index_where=runs.c.idempotency_key.is_not(None),
                )
            row = (await conn.execute(insert.returning(*runs.c))).mappings().first()
            if row is None:
                return Changed(None)
            await conn.execute(
                run_configs.insert().values(
                    run_id=row["id"],
                    config=run.config,
                    metadata=run.metadata,
                    created_at=run.now,
                    tenant_id=row["tenant_id"],
                    **run.lineage,
                )
            )
            record = RunRecord.from_row({**row, "config": run.config, "metadata": run.metadata})
            await self._write_events(conn, record, run.events, run.now, outbox=False)
            await _write_batch(conn, record.id, run.snapshot.batch)
        return Changed(record)

    async def claim(self, change: Change, now: datetime, limit: int) -> list[RunRecord]:
        stmt = update_run(
            claim_keys(), (), len(change.events), claimed=runs.c.id.in_(due_runs())
        ).returning(*runs.c)
        params = {**change_params(change, now), "p_limit": limit}
        out = []
        async with self.engine.begin() as conn:
            for row in (await conn.execute(stmt, params)).mappings().all():
                record = await self._configured(conn, row, await _log(conn, row["id"]))
                await self._write_events(conn, record, change.events, now, outbox=False)
                at = {"p_id": record.id, "p_round": record.turn}
                calls = (await conn.execute(calls_of_round(), at)).mappings().all()
                out.append(record.with_calls(calls))
        return out

    async def run(self, key: str, value: str, *, with_log: bool, scope: Scope) -> RunRecord | None:
        stmt, params = run_by(key, scoped(scope)), key_params(value, scope)
        async with self.engine.connect() as conn:
            row = (await conn.execute(stmt, params)).mappings().first()
            if row is None:
                return None
            log = await _log(conn, row["id"]) if with_log else None
        return RunRecord.from_row(row, log=log)

    async def pending(
        self, key: str, value: str, *, scope: Scope
    ) -> tuple[RunRecord, list[ToolCallRecord]] | None:
        stmt, params = run_by(key, scoped(scope)), key_params(value, scope)
        async with self.engine.connect() as conn:
            row = (await conn.execute(stmt, params)).mappings().first()
            if row is None:
                return None
            record = RunRecord.from_row(row)
            params = {"p_id": record.id, "p_round": record.waiting_round or 0}
            rows = (await conn.execute(calls_of_round(), params)).mappings().all()
        return record, [ToolCallRecord.from_row(r) for r in rows]

    async def calls_of_rounds(self, rounds: Mapping[str, int]) -> list[ToolCallRecord]:
        stmt = (
            tc.select()
            .where(sa.tuple_(tc.c.run_id, tc.c.round).in_(list(rounds.items())))
            .order_by(tc.c.run_id, tc.c.position)
        )
        async with self.engine.connect() as conn:
            rows = (await conn.execute(stmt)).mappings().all()
        return [ToolCallRecord.from_row(r) for r in rows]

    async def lease_calls(self, lease: Lease) -> list[ToolCallRecord]:
        """The lease in one transaction (BEGIN IMMEDIATE: writers are serialized)."""
        params = {
            "p_tenant": lease.tenant,
            "p_queue": lease.queue,
            "p_now": lease.now,
            "p_limit": lease.limit,
        }
        out: list[ToolCallRecord] = []
        async with self.engine.begin() as conn:
            if lease.max_in_flight is not None:  # (writers are serialized: count, then pick)
                busy = (await conn.execute(in_flight_statement(), params)).scalar_one()
                room = min(lease.limit, lease.max_in_flight - int(busy))
                if room <= 0:
                    return out
                params["p_limit"] = room
            picked = (await conn.execute(leasable_calls(), params)).mappings().all()
            by_run: dict[str, list[NewEvent]] = {}
            for pick in picked:
                key = (tc.c.run_id == pick["run_id"], tc.c.round == pick["round"])
                row = (
                    (
                        await conn.execute(
                            tc.update()
                            .where(*key, tc.c.position == pick["position"])
                            .values(
                                lease_owner=lease.owner,
                                lease_token=secrets.token_hex(16),
                                lease_expires_at=lease.until,
                                attempts=tc.c.attempts + 1,
                            )
                            .returning(*tc.c)
                        )
                    )
                    .mappings()
                    .one()
                )
                call = ToolCallRecord.from_row(row)
                events = by_run.setdefault(call.run_id, [])
                if call.attempts > 1:
                    previous = pick["lease_owner"]
                    events.append(
                        expired_event(call.call_id, call.round, call.attempts - 1, previous)
                    )
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
                await _write_event_rows(conn, run_id, last, events, lease.now, lease.tenant)
        return out

    async def watch(self, watcher: str, run_ids: Sequence[str], ttl_seconds: float) -> None:
        """Nothing notifies: no watches."""

    # --- the follow-up rows ----------------------------------------------------------

    async def _write_events(
        self,
        conn: AsyncConnection,
        record: RunRecord,
        events: Sequence[NewEvent],
        now: datetime,
        *,
        outbox: bool,
    ) -> None:
        """The event rows, their ledger rows and (`outbox`) their outbox rows."""
        if not events:
            return
        await _write_event_rows(
            conn, record.id, record.last_event_seq, events, now, record.tenant_id
        )
        plan = EventPlan.of(events)
        if not plan.webhooks or not outbox:
            return
        first = record.last_event_seq - len(events) + 1
        rows = []
        for i in plan.webhooks:
            payload = webhook_payload(events[i], record.id, record.status.value, now)
            for suffix, url in webhook_targets(record.config or {}, self.webhook_url):
                rows.append(
                    {
                        "run_id": record.id,
                        "event_seq": first + i,
                        "event_type": events[i].type,
                        "webhook_id": f"msg_{record.id}_{first + i}{suffix}",
                        "url": url,
                        "payload": payload,
                        "status": OutboxStatus.PENDING.value,
                        "attempts": 0,
                        "next_attempt_at": now,
                        "created_at": now,
                    }
                )
        if rows:
            await conn.execute(webhook_outbox.insert(), rows)


async def _write_event_rows(
    conn: AsyncConnection,
    run_id: str,
    last_seq: int,
    events: Sequence[NewEvent],
    now: datetime,
    tenant: str,  # the run's (its ledger rows are the tenant's)
) -> None:
    """The event rows ending at `last_seq`, and the usage-ledger rows of model calls."""
    first = last_seq - len(events) + 1
    await conn.execute(
        run_events.insert(),
        [
            {
                "run_id": run_id,
                "seq": first + i,
                "type": e.type,
                "data": e.data,
                "actor": e.actor,
                "created_at": now,
            }
            for i, e in enumerate(events)
        ],
    )
    plan = EventPlan.of(events)
    owner = {"tenant_id": tenant}
    if plan.ledger:
        await conn.execute(
            model_calls.insert(),
            [
                {"run_id": run_id, "created_at": now, **owner, **ledger_row(events[i])}
                for i in plan.ledger
            ],
        )


async def _write_rows(
    conn: AsyncConnection, record: RunRecord, change: Change, now: datetime
) -> None:
    """A suspension's pending calls (replacing an earlier suspension's at that round; of
    the run's tenant), submitted answers, the run's log batch; a change that
    `closes_calls`: its unanswered calls leave their queue."""
    run_id = record.id
    await _write_calls(conn, record, change.tool_calls, change.round, now)
    await _write_answers(conn, run_id, change.answers, now)
    await _write_batch(conn, run_id, change.snapshot.batch if change.snapshot else None)
    if change.closes_calls:
        await conn.execute(
            tc.update()
            .where(tc.c.run_id == run_id, tc.c.queue.is_not(None), tc.c.result_hash.is_(None))
            .values(queue=None)
        )


async def _write_calls(
    conn: AsyncConnection,
    record: RunRecord,
    calls: Sequence[NewToolCall],
    round: int | None,
    now: datetime,
) -> None:
    if not calls:
        return
    run_id, tenant = record.id, record.tenant_id
    await conn.execute(tc.delete().where(tc.c.run_id == run_id, tc.c.round == round))
    await conn.execute(
        tc.insert(),
        [{"run_id": run_id, "tenant_id": tenant, **tool_row(c, round, now)} for c in calls],
    )


async def _write_answers(
    conn: AsyncConnection, run_id: str, answers: Sequence[Answer], now: datetime
) -> None:
    for a in answers:
        await conn.execute(
            tc.update()
            .where(tc.c.run_id == run_id, tc.c.round == a.round, tc.c.position == a.position)
            .values(result=a.result, result_hash=a.result_hash, submitted_at=now)
        )


async def _write_batch(conn: AsyncConnection, run_id: str, batch: Batch | None) -> None:
    if batch is not None:
        await conn.execute(
            run_messages.insert().values(run_id=run_id, seq=batch.seq, body=batch.body)
        )


async def _log(conn: AsyncConnection, run_id: str) -> str:
    """A run's log: its batches as one JSON array text."""
    bodies = (await conn.execute(log_batches(), {"p_key": run_id})).scalars()
    return "[" + ",".join(bodies) + "]"
