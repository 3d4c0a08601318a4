"""The run repository: every SQL statement of the run lifecycle lives here.

Each public method is one transaction. Transitions are compare-and-set updates (`WHERE
status IN (...)`, and `AND version = :v` for the lease holder's writes, the fencing
token), with their events appended in the same transaction. No ORM unit of work: Core
statements only, one round trip per statement.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from app.core.lifecycle import RunStatus
from app.store.records import (
    EventRecord,
    NewEvent,
    NewToolCall,
    RunRecord,
    ToolCallRecord,
)
from app.store.schema import run_events, runs, service_secrets, tool_calls

NOTIFY_CHANNEL = "agentrun_runs"


@dataclass(frozen=True, slots=True)
class SubmittedResult:
    call_id: str
    result: dict[str, Any]  # {"output": ..., "is_error": bool}
    result_hash: str


@dataclass(frozen=True, slots=True)
class Completion:
    """What the service computes (purely) when the last pending call is answered."""

    values: dict[str, Any]
    events: list[NewEvent]


class NotFoundError(Exception):
    pass


class StatusConflict(Exception):
    """The run is not in a status the operation needs; `record` is what it is now."""

    def __init__(self, record: RunRecord) -> None:
        super().__init__(record.status.value)
        self.record = record


class UnknownCallError(Exception):
    def __init__(self, call_id: str) -> None:
        super().__init__(call_id)
        self.call_id = call_id


class ResultConflictError(Exception):
    def __init__(self, call_id: str) -> None:
        super().__init__(call_id)
        self.call_id = call_id


@dataclass(frozen=True, slots=True)
class SubmitOutcome:
    record: RunRecord
    accepted: list[str]  # call ids newly answered by this request
    resumed: bool


class RunStore:
    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine
        self.is_postgres = engine.dialect.name == "postgresql"

    # --- helpers ------------------------------------------------------------------------

    async def _append_events(
        self,
        conn: AsyncConnection,
        run_id: str,
        last_seq: int,
        events: Sequence[NewEvent],
        now: datetime,
    ) -> None:
        if not events:
            return
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

    async def _notify(self, conn: AsyncConnection, run_id: str) -> None:
        if self.is_postgres:
            await conn.execute(sa.select(sa.func.pg_notify(NOTIFY_CHANNEL, run_id)))

    async def _update(
        self,
        conn: AsyncConnection,
        run_id: str,
        where: Iterable[sa.ColumnElement[bool]],
        values: dict[str, Any],
        n_events: int,
        now: datetime,
    ) -> RunRecord | None:
        stmt = (
            runs.update()
            .where(runs.c.id == run_id, *where)
            .values(
                **values,
                version=runs.c.version + 1,
                last_event_seq=runs.c.last_event_seq + n_events,
                updated_at=now,
            )
            .returning(*runs.c)
        )
        row = (await conn.execute(stmt)).first()
        return RunRecord.from_row(row) if row is not None else None

    # --- reads --------------------------------------------------------------------------

    async def get(self, run_id: str) -> RunRecord | None:
        async with self.engine.connect() as conn:
            row = (await conn.execute(runs.select().where(runs.c.id == run_id))).first()
        return RunRecord.from_row(row) if row is not None else None

    async def get_by_token_hash(self, token_hash: str) -> RunRecord | None:
        async with self.engine.connect() as conn:
            stmt = runs.select().where(runs.c.callback_token_hash == token_hash)
            row = (await conn.execute(stmt)).first()
        return RunRecord.from_row(row) if row is not None else None

    async def list(
        self,
        *,
        status: RunStatus | None,
        limit: int,
        before: tuple[datetime, str] | None,
    ) -> list[RunRecord]:
        """Newest first; keyset pagination on (created_at, id)."""
        stmt = runs.select().order_by(runs.c.created_at.desc(), runs.c.id.desc()).limit(limit)
        if status is not None:
            stmt = stmt.where(runs.c.status == status.value)
        if before is not None:
            created, run_id = before
            stmt = stmt.where(
                sa.or_(
                    runs.c.created_at < created,
                    sa.and_(runs.c.created_at == created, runs.c.id < run_id),
                )
            )
        async with self.engine.connect() as conn:
            rows = (await conn.execute(stmt)).all()
        return [RunRecord.from_row(r) for r in rows]

    async def tool_calls(self, run_id: str, round: int | None = None) -> list[ToolCallRecord]:
        stmt = tool_calls.select().where(tool_calls.c.run_id == run_id)
        if round is not None:
            stmt = stmt.where(tool_calls.c.round == round)
        stmt = stmt.order_by(tool_calls.c.round, tool_calls.c.position)
        async with self.engine.connect() as conn:
            rows = (await conn.execute(stmt)).all()
        return [ToolCallRecord.from_row(r) for r in rows]

    async def events(self, run_id: str, *, after: int = 0, limit: int = 1000) -> list[EventRecord]:
        stmt = (
            run_events.select()
            .where(run_events.c.run_id == run_id, run_events.c.seq > after)
            .order_by(run_events.c.seq)
            .limit(limit)
        )
        async with self.engine.connect() as conn:
            rows = (await conn.execute(stmt)).all()
        return [EventRecord.from_row(r) for r in rows]

    async def count_by_status(self) -> dict[str, int]:
        stmt = sa.select(runs.c.status, sa.func.count()).group_by(runs.c.status)
        async with self.engine.connect() as conn:
            rows = (await conn.execute(stmt)).all()
        return {status: count for status, count in rows}

    async def secret(self, name: str, make: Callable[[], str]) -> str:
        """A service-wide secret shared by every process (created once, first writer wins)."""
        insert = postgresql.insert if self.is_postgres else sqlite.insert
        async with self.engine.begin() as conn:
            await conn.execute(
                insert(service_secrets)
                .values(name=name, value=make())
                .on_conflict_do_nothing(index_elements=["name"])
            )
            stmt = sa.select(service_secrets.c.value).where(service_secrets.c.name == name)
            value = (await conn.execute(stmt)).scalar_one()
        return str(value)

    # --- writes -------------------------------------------------------------------------

    async def create(
        self, values: dict[str, Any], events: Sequence[NewEvent], now: datetime
    ) -> tuple[RunRecord, bool]:
        """Insert a run; with an idempotency key already taken, return the stored run."""
        values = {**values, "last_event_seq": len(events), "created_at": now, "updated_at": now}
        key = values.get("idempotency_key")
        async with self.engine.begin() as conn:
            if key is None:
                stmt = runs.insert().values(**values).returning(*runs.c)
                row = (await conn.execute(stmt)).first()
            else:
                insert = postgresql.insert(runs) if self.is_postgres else sqlite.insert(runs)
                stmt = (
                    insert.values(**values)
                    .on_conflict_do_nothing(index_elements=["idempotency_key"])
                    .returning(*runs.c)
                )
                row = (await conn.execute(stmt)).first()
                if row is None:
                    existing = (
                        await conn.execute(runs.select().where(runs.c.idempotency_key == key))
                    ).first()
                    assert existing is not None
                    return RunRecord.from_row(existing), False
            assert row is not None
            record = RunRecord.from_row(row)
            await self._append_events(conn, record.id, record.last_event_seq, events, now)
            await self._notify(conn, record.id)
        return record, True

    async def claim(self, worker_id: str, now: datetime, lease_until: datetime) -> RunRecord | None:
        """Take the oldest due queued run (SKIP LOCKED on PostgreSQL)."""
        due = (
            sa.select(runs.c.id)
            .where(runs.c.status == RunStatus.QUEUED.value, runs.c.available_at <= now)
            .order_by(runs.c.available_at, runs.c.id)
            .limit(1)
        )
        if self.is_postgres:
            due = due.with_for_update(skip_locked=True)
        event = NewEvent("run.claimed", {"worker": worker_id})
        async with self.engine.begin() as conn:
            record = await self._update(
                conn,
                due.scalar_subquery(),  # type: ignore[arg-type]
                [runs.c.status == RunStatus.QUEUED.value],
                {
                    "status": RunStatus.RUNNING.value,
                    "lease_owner": worker_id,
                    "lease_expires_at": lease_until,
                    "attempts": runs.c.attempts + 1,
                    "waiting_reason": {
                        "type": "model_call",
                        "worker": worker_id,
                        "lease_until": lease_until.isoformat(),
                    },
                },
                1,
                now,
            )
            if record is not None:
                await self._append_events(conn, record.id, record.last_event_seq, [event], now)
        return record

    async def heartbeat(
        self, run_id: str, version: int, worker_id: str, lease_until: datetime, now: datetime
    ) -> bool:
        """Extend the lease; False when it was lost (the fencing token moved on)."""
        stmt = (
            runs.update()
            .where(
                runs.c.id == run_id,
                runs.c.version == version,
                runs.c.lease_owner == worker_id,
                runs.c.status == RunStatus.RUNNING.value,
            )
            .values(
                lease_expires_at=lease_until,
                updated_at=now,
                waiting_reason={
                    "type": "model_call",
                    "worker": worker_id,
                    "lease_until": lease_until.isoformat(),
                },
            )
        )
        async with self.engine.begin() as conn:
            result = await conn.execute(stmt)
        return result.rowcount == 1  # type: ignore[attr-defined,no-any-return]

    async def transition(
        self,
        run_id: str,
        *,
        from_statuses: Iterable[RunStatus],
        values: dict[str, Any],
        events: Sequence[NewEvent],
        now: datetime,
        expect_version: int | None = None,
        new_tool_calls: Sequence[NewToolCall] = (),
        round: int | None = None,
        notify: bool = False,
    ) -> RunRecord | None:
        """Compare-and-set transition; None when refused (status or fencing token moved)."""
        where = [runs.c.status.in_([s.value for s in from_statuses])]
        if expect_version is not None:
            where.append(runs.c.version == expect_version)
        async with self.engine.begin() as conn:
            record = await self._update(conn, run_id, where, values, len(events), now)
            if record is None:
                return None
            if new_tool_calls:
                await conn.execute(
                    tool_calls.insert(),
                    [
                        {
                            "run_id": run_id,
                            "round": round,
                            "position": c.position,
                            "call_id": c.call_id,
                            "name": c.name,
                            "arguments": c.arguments,
                            "preresolved": c.preresolved_result is not None,
                            "result": c.preresolved_result,
                            "submitted_at": now if c.preresolved_result is not None else None,
                        }
                        for c in new_tool_calls
                    ],
                )
            await self._append_events(conn, run_id, record.last_event_seq, events, now)
            if notify:
                await self._notify(conn, run_id)
        return record

    async def submit_results(
        self,
        *,
        run_id: str | None = None,
        token_hash: str | None = None,
        results: Sequence[SubmittedResult],
        now: datetime,
        complete: Callable[[RunRecord, list[ToolCallRecord]], Awaitable[Completion]],
    ) -> SubmitOutcome:
        """Answer pending calls; when the last one is answered, `complete` computes the
        resumed run (purely) and the run is queued in the same transaction. A refused
        request (unknown id, different result, wrong status) changes nothing."""
        where = (
            runs.c.id == run_id
            if run_id is not None
            else (runs.c.callback_token_hash == token_hash)
        )
        async with self.engine.begin() as conn:
            stmt = runs.select().where(where)
            if self.is_postgres:
                stmt = stmt.with_for_update()
            row = (await conn.execute(stmt)).first()
            if row is None:
                raise NotFoundError(run_id or "callback")
            record = RunRecord.from_row(row)
            reason = record.waiting_reason or {}
            if record.status != RunStatus.REQUIRES_ACTION or reason.get("type") != "tool_results":
                raise StatusConflict(record)
            round = int(reason["round"])
            rows = (
                await conn.execute(
                    tool_calls.select()
                    .where(tool_calls.c.run_id == record.id, tool_calls.c.round == round)
                    .order_by(tool_calls.c.position)
                )
            ).all()
            calls = [ToolCallRecord.from_row(r) for r in rows]
            answered: dict[int, SubmittedResult] = {}
            for submitted in results:
                candidates = [c for c in calls if c.call_id == submitted.call_id]
                if not candidates:
                    raise UnknownCallError(submitted.call_id)
                open_ = [
                    c for c in candidates if c.result_hash is None and c.position not in answered
                ]
                if open_:
                    answered[open_[0].position] = submitted
                    continue
                earlier = [c.result_hash for c in candidates] + [
                    answered[c.position].result_hash for c in candidates if c.position in answered
                ]
                if submitted.result_hash not in earlier:
                    raise ResultConflictError(submitted.call_id)
            if not answered:
                return SubmitOutcome(record, [], False)
            await conn.execute(
                tool_calls.update()
                .where(
                    tool_calls.c.run_id == record.id,
                    tool_calls.c.round == round,
                    tool_calls.c.position == sa.bindparam("b_position"),
                )
                .values(
                    result=sa.bindparam("b_result"),
                    result_hash=sa.bindparam("b_hash"),
                    submitted_at=now,
                ),
                [
                    {"b_position": pos, "b_result": s.result, "b_hash": s.result_hash}
                    for pos, s in answered.items()
                ],
            )
            events = [
                NewEvent("tool_result.received", {"tool_call_id": s.call_id})
                for s in answered.values()
            ]
            merged = [
                ToolCallRecord(
                    c.run_id,
                    c.round,
                    c.position,
                    c.call_id,
                    c.name,
                    c.arguments,
                    c.preresolved,
                    answered[c.position].result if c.position in answered else c.result,
                    answered[c.position].result_hash if c.position in answered else c.result_hash,
                    now if c.position in answered else c.submitted_at,
                )
                for c in calls
            ]
            remaining = [c.call_id for c in merged if c.result_hash is None and not c.preresolved]
            if remaining:
                values: dict[str, Any] = {
                    "waiting_reason": {**reason, "call_ids": remaining},
                }
                resumed = False
            else:
                completion = await complete(record, merged)
                values = completion.values
                events.extend(completion.events)
                resumed = True
            updated = await self._update(conn, record.id, [], values, len(events), now)
            assert updated is not None
            await self._append_events(conn, record.id, updated.last_event_seq, events, now)
            if resumed:
                await self._notify(conn, record.id)
        return SubmitOutcome(updated, [s.call_id for s in answered.values()], resumed)

    async def reap_expired_leases(self, now: datetime) -> list[str]:
        """Re-queue running runs whose worker stopped heartbeating (the lease is lost)."""
        return await self._sweep(
            runs.c.status == RunStatus.RUNNING.value,
            runs.c.lease_expires_at < now,
            values={
                "status": RunStatus.QUEUED.value,
                "lease_owner": None,
                "lease_expires_at": None,
                "available_at": now,
                "waiting_reason": {"type": "queued"},
            },
            event=NewEvent("run.lease_lost", {}),
            now=now,
            notify=True,
        )

    async def expire_suspended(self, now: datetime) -> list[str]:
        return await self._sweep(
            runs.c.status == RunStatus.REQUIRES_ACTION.value,
            runs.c.expires_at < now,
            values={
                "status": RunStatus.EXPIRED.value,
                "waiting_reason": None,
                "callback_token_hash": None,
                "error": {"type": "expired", "message": "the run waited past expires_at"},
            },
            event=NewEvent("run.expired", {}),
            now=now,
            notify=False,
        )

    async def _sweep(
        self,
        *where: sa.ColumnElement[bool],
        values: dict[str, Any],
        event: NewEvent,
        now: datetime,
        notify: bool,
    ) -> list[str]:
        async with self.engine.begin() as conn:
            stmt = sa.select(runs.c.id).where(*where).limit(100)
            if self.is_postgres:
                stmt = stmt.with_for_update(skip_locked=True)
            ids = list((await conn.execute(stmt)).scalars())
            for run_id in ids:
                record = await self._update(conn, run_id, list(where), values, 1, now)
                if record is not None:
                    await self._append_events(conn, run_id, record.last_event_seq, [event], now)
                    if notify:
                        await self._notify(conn, run_id)
        return ids
