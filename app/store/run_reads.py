"""A run store's reads: a run (with its log), lists, pending calls, events, counts.

Mixed into `RunStore` (app/store/runs.py), whose execution helpers they use: the direct
pool's statements on PostgreSQL (`_fetch`, `_rows`), one connection on SQLite."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from app.core.lifecycle import RunStatus
from app.store.direct import Compiled, DirectPool
from app.store.errors import NotFoundError
from app.store.records import EventRecord, RunRecord, ToolCallRecord
from app.store.reports import count_by_status
from app.store.schema import run_configs, runs, select_runs, service_secrets, tool_calls
from app.store.statements import Statements
from app.store.usage import usage_totals


@dataclass(frozen=True, slots=True)
class Pending:
    """A suspended run as a submission reads it: the run and its pending round's calls."""

    record: RunRecord
    calls: list[ToolCallRecord]


class RunReads:
    """Mixed into `RunStore` (uses its engine, statements and execution helpers)."""

    engine: AsyncEngine
    is_postgres: bool
    sql: Statements
    _direct: DirectPool | None

    def _reader(self) -> Any:
        raise NotImplementedError

    def _compile(self, stmt: Any) -> Compiled:
        raise NotImplementedError

    async def _fetch(self, conn: AsyncConnection | None, stmt: Any, params: dict[str, Any]) -> Any:
        raise NotImplementedError

    async def get(self, run_id: str, *, with_log: bool = False) -> RunRecord | None:
        """A run (with its log when `with_log`: to load it whole)."""
        stmt = self.sql.by("id", with_log=with_log)
        if self._direct is not None:
            row = await self._fetch(None, stmt, {"p_key": run_id})
            if row is None:
                return None
            return RunRecord.from_row(row, log=row[-1] if with_log else None)
        async with self._reader() as conn:
            row = await self._fetch(conn, stmt, {"p_key": run_id})
            if row is None:
                return None
            record = RunRecord.from_row(row)
            return record.with_log(await self._log(conn, run_id)) if with_log else record

    async def _configured(self, conn: AsyncConnection, row: Any) -> tuple[Any, ...]:
        """SQLite: a `RETURNING runs.*` row with the run's config and metadata added."""
        if row[0] is None:
            return tuple(row)
        found = (
            await conn.execute(
                sa.select(run_configs.c.config, run_configs.c.metadata).where(
                    run_configs.c.run_id == row[0]
                )
            )
        ).first()
        return (*row, *(found if found is not None else (None, None)))

    async def _log(self, conn: AsyncConnection, run_id: str) -> str:
        bodies = (await conn.execute(self.sql.log(), {"p_key": run_id})).scalars()
        return "[" + ",".join(bodies) + "]"

    async def _rows(self, stmt: Any, params: dict[str, Any]) -> list[Any]:
        """Every row of a read: on the direct pool (PostgreSQL), else one connection."""
        if self._direct is not None:
            return await self._direct.fetchall(self._compile(stmt), params)
        async with self._reader() as conn:
            return list((await conn.execute(stmt, params)).all())

    async def list_runs(
        self, *, status: RunStatus | None, limit: int, before: tuple[datetime, str] | None
    ) -> list[RunRecord]:
        """Newest first; keyset pagination on (created_at, id)."""
        stmt = self.sql.list_runs(status, before is not None)
        params: dict[str, Any] = {"p_limit": limit}
        if before is not None:
            params["p_created"], params["p_id"] = before
        return [RunRecord.from_row(r) for r in await self._rows(stmt, params)]

    async def tool_calls(self, run_id: str, round: int | None = None) -> list[ToolCallRecord]:
        stmt = tool_calls.select().where(tool_calls.c.run_id == run_id)
        if round is not None:
            stmt = stmt.where(tool_calls.c.round == round)
        stmt = stmt.order_by(tool_calls.c.round, tool_calls.c.position)
        async with self._reader() as conn:
            rows = (await conn.execute(stmt)).all()
        return [ToolCallRecord.from_row(r) for r in rows]

    async def pending_calls(self, rounds: dict[str, int]) -> dict[str, list[ToolCallRecord]]:
        """The tool calls of each run's given round, for many runs in one query."""
        if not rounds:
            return {}
        if self._direct is not None:
            params = {"p_ids": list(rounds), "p_rounds": list(rounds.values())}
            rows = await self._rows(self.sql.pending_calls(), params)
        else:
            stmt = (
                tool_calls.select()
                .where(sa.tuple_(tool_calls.c.run_id, tool_calls.c.round).in_(list(rounds.items())))
                .order_by(tool_calls.c.run_id, tool_calls.c.position)
            )
            rows = await self._rows(stmt, {})
        out: dict[str, list[ToolCallRecord]] = {run_id: [] for run_id in rounds}
        for row in rows:
            record = ToolCallRecord.from_row(row)
            out[record.run_id].append(record)
        return out

    async def pending(self, *, run_id: str | None = None, token_hash: str | None = None) -> Pending:
        """A run (by id or callback token) and the calls of its pending round, as a
        submission decides on them; `NotFoundError` when there is no such run."""
        column, key = ("id", run_id) if run_id is not None else ("callback_token_hash", token_hash)
        if self._direct is not None:
            row = await self._fetch(None, self.sql.submission_read(column), {"p_key": key})
            if row is None:
                raise NotFoundError(run_id or "callback")
            calls = [ToolCallRecord.from_mapping(c) for c in row[-1]]
            return Pending(RunRecord.from_row(row), calls)
        async with self._reader() as conn:
            row = (await conn.execute(select_runs().where(runs.c[column] == key))).first()
            if row is None:
                raise NotFoundError(run_id or "callback")
            record = RunRecord.from_row(row)
            round = int((record.waiting_reason or {}).get("round") or 0)
            rows = (
                await conn.execute(
                    tool_calls.select()
                    .where(tool_calls.c.run_id == record.id, tool_calls.c.round == round)
                    .order_by(tool_calls.c.position)
                )
            ).all()
        return Pending(record, [ToolCallRecord.from_row(r) for r in rows])

    async def events(self, run_id: str, *, after: int = 0, limit: int = 1000) -> list[EventRecord]:
        params = {"p_id": run_id, "p_after": after, "p_limit": limit}
        return [EventRecord.from_row(r) for r in await self._rows(self.sql.events(), params)]

    async def count_by_status(self) -> dict[str, int]:
        """By index and rollup, not by counting `runs` (app.store.reports)."""
        return await count_by_status(self.engine)

    async def usage_totals(self, start: datetime, end: datetime) -> dict[str, Any]:
        """Sums of the usage ledger in [start, end): overall, by run status, by model."""
        async with self._reader() as conn:
            return await usage_totals(conn, start, end)

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
