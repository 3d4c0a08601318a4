"""The store's `Backend` in memory (as procrastinate's InMemoryConnector): the lifecycle's
operations over dicts, so the service and the worker run through the real repositories
(`app.store.transitions`, `lookups`) with no database. What it keeps is what the SQL
backends keep of a run (its row, events, pending calls, log batches) and the shared
secrets; the reads that only SQL answers (reports, sweeps, the outbox, the queue's
leases) are not here and say so."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

import orjson
import sqlalchemy as sa
from sqlalchemy.dialects import sqlite

from app.core.lifecycle import RunStatus
from app.core.scope import Scope
from app.store import changes
from app.store.backend.base import Changed, ChangeWrite, Lease, NewRun, Row, Wake
from app.store.change_rows import tool_row
from app.store.changes import Change
from app.store.run_reads import events_after, queue_ahead, secret_named
from app.store.run_records import NewEvent, RunRecord, ToolCallRecord
from app.store.schema import DEFAULT_TENANT, runs, service_secrets
from app.toolqueue.sql import call_statement

JSON_COLUMNS = {"waiting_reason", "error", "usage", "config", "metadata", "limits"}


def _server_default(column: sa.Column[Any]) -> Any:
    """A column's server default as the database would fill it in (numbers, the tenant)."""
    if column.server_default is None:
        return None
    arg = column.server_default.arg  # type: ignore[attr-defined]
    return arg if column.name in ("tenant_id", "fair_key") else int(arg)


def _stored(value: Any) -> Any:
    """A JSON value as a database gives it back (a copy; tuples become lists)."""
    return orjson.loads(orjson.dumps(value))


class InMemoryUnsupported(NotImplementedError):
    """An operation only a SQL backend answers."""


class _NoRows:
    def mappings(self) -> _NoRows:
        return self

    def first(self) -> None:
        return None


class _TenantReads:
    def __init__(self, backend: MemoryBackend) -> None:
        self.backend = backend

    async def __aenter__(self) -> _TenantReads:
        return self

    async def __aexit__(self, *exc: object) -> None:
        return None

    async def execute(self, stmt: Any) -> _NoRows:
        if [getattr(t, "name", None) for t in stmt.columns_clause_froms] != ["tenants"]:
            raise self.backend._sql("a SQL read")
        return _NoRows()


class _Sequence(_TenantReads):
    """(`MemoryBackend.transaction`) Changes applied in order; SQL refused."""

    async def execute(self, stmt: Any, *params: Any) -> _NoRows:
        raise self.backend._sql("a SQL statement in a transaction")


class MemoryBackend:
    notifies = False
    folds = False  # (no rollups here: a retry is its compare-and-set alone)
    engine = None

    def __init__(self) -> None:
        self.runs: dict[str, dict[str, Any]] = {}  # `runs` columns, config, metadata
        self.events: dict[str, list[dict[str, Any]]] = {}
        self.calls: dict[str, dict[tuple[int, int], dict[str, Any]]] = {}
        self.logs: dict[str, list[tuple[int, str]]] = {}
        self.secrets: dict[str, str] = {}
        self.fair_ranks: dict[tuple[str, int], int] = {}  # (fair key, priority): last rank
        self.woken: list[Wake] = []

    # --- running statements ----------------------------------------------------------

    def _sql(self, what: str) -> InMemoryUnsupported:
        return InMemoryUnsupported(f"{what} needs a SQL backend")

    def reader(self) -> Any:
        """Only a tenant's row is read here (the budget check's limits): none is kept,
        so every tenant has no limits."""
        return _TenantReads(self)

    def transaction(self) -> Any:
        """One process, no concurrency here: a transaction of changes is their sequence
        (`change` ignores its `conn`); a SQL statement on it is not answered."""
        return _Sequence(self)

    def atomic(self) -> Any:
        raise self._sql("a SQL statement")

    async def fetch(self, stmt: Any, params: Mapping[str, Any]) -> list[Row]:
        if stmt is events_after():
            events = self.events.get(params["p_id"], [])
            return [e for e in events if e["seq"] > params["p_after"]][: params["p_limit"]]
        raise self._sql(f"statement {str(stmt)[:40]!r}")

    async def fetch_one(self, stmt: Any, params: Mapping[str, Any]) -> Row | None:
        if isinstance(stmt, sa.Insert) and stmt.table is service_secrets:
            if params["p_name"] in self.secrets:
                return None  # (on conflict do nothing)
            self.secrets[params["p_name"]] = params["p_value"]
            return {"value": params["p_value"]}
        if stmt is secret_named():
            value = self.secrets.get(params["p_name"])
            return None if value is None else {"value": value}
        if stmt is queue_ahead():  # (the claim's order, as `claim` sorts)
            mine = (-params["p_priority"], params["p_rank"], params["p_available"], params["p_id"])
            ahead = [
                r
                for r in self.runs.values()
                if r["status"] == "queued"
                and r["available_at"] <= params["p_now"]
                and (-r["priority"], r["fair_rank"], r["available_at"], r["id"]) < mine
            ]
            higher = sum(r["priority"] > params["p_priority"] for r in ahead)
            return {"ahead": len(ahead), "higher": higher}
        if stmt is call_statement():
            calls = self.calls.get(params["p_run"], {})
            return calls.get((params["p_round"], params["p_position"]))
        raise self._sql(f"statement {str(stmt)[:40]!r}")

    def wake(self, wakes: Iterable[Wake]) -> None:
        self.woken.extend(wakes)

    async def flush(self) -> None:
        pass

    async def aclose(self) -> None:
        pass

    # --- statement forms (built by the repositories, recognised above) ---------------

    def insert(self, table: sa.Table) -> Any:
        return sqlite.insert(table)

    def for_update(self, stmt: Any) -> Any:
        return stmt

    def skip_locked(self, stmt: Any, *of: sa.Table) -> Any:
        return stmt

    # --- writes and reads ------------------------------------------------------------

    async def change(self, write: ChangeWrite) -> Changed:
        row = self.runs.get(write.run_id)
        if row is not None and not write.scope.admits(row["tenant_id"]):
            return Changed(None)  # (another tenant's run: refused as a missing one)
        done = Changed(self._change(write.run_id, write.change, write.now))
        if write.claim_for is not None:
            claimed = await self.claim(changes.claim(*write.claim_for), write.now, 1)
            done.claimed = claimed[0] if claimed else None
        return done

    def _change(self, run_id: str, change: Change, now: datetime) -> RunRecord | None:
        row = self.runs.get(run_id)
        if row is None or RunStatus(row["status"]) not in change.sources:
            return None
        if change.expect_version is not None and row["version"] != change.expect_version:
            return None
        self._set(row, change, now)
        if change.moves_token:
            row["version"] += 1
        calls = self.calls.setdefault(run_id, {})
        if change.tool_calls:  # (an earlier suspension's calls at this round go)
            for key in [k for k in calls if k[0] == change.round]:
                del calls[key]
        for c in change.tool_calls:
            calls[(change.round, c.position)] = self._call(run_id, tool_row(c, change.round, now))
        for a in change.answers:
            call = calls[(a.round, a.position)]
            call.update(result=_stored(a.result), result_hash=a.result_hash, submitted_at=now)
        if change.closes_calls:
            for call in calls.values():
                if call["queue"] is not None and call["result_hash"] is None:
                    call["queue"] = None
        self._log(run_id, change.snapshot.batch if change.snapshot else None)
        if change.notify:
            self.woken.append(("runs", ""))
        return self._record(row)

    def _set(self, row: dict[str, Any], change: Change, now: datetime) -> None:
        """The UPDATE: the change's columns, its events, the bookkeeping."""
        for key, value in change.columns().items():
            row[key] = _stored(value) if key in JSON_COLUMNS else value
        row["last_event_seq"] += len(change.events)
        row["updated_at"] = now
        self._events(row["id"], row["last_event_seq"], change.events, now)

    def _call(self, run_id: str, columns: dict[str, Any]) -> dict[str, Any]:
        call = {"run_id": run_id, "result_hash": None, **columns}
        call["arguments"], call["result"] = _stored(call["arguments"]), _stored(call["result"])
        return call

    def _events(self, run_id: str, last: int, events: Sequence[NewEvent], now: datetime) -> None:
        rows = self.events.setdefault(run_id, [])
        first = last - len(events) + 1
        for i, e in enumerate(events):
            rows.append(
                {
                    "run_id": run_id,
                    "seq": first + i,
                    "type": e.type,
                    "data": _stored(e.data),
                    "actor": e.actor,
                    "created_at": now,
                }
            )

    def _log(self, run_id: str, batch: Any) -> None:
        if batch is not None:
            self.logs.setdefault(run_id, []).append((batch.seq, batch.body))

    async def create(self, run: NewRun) -> Changed:
        key = run.values.get("idempotency_key")
        tenant = run.values.get("tenant_id", DEFAULT_TENANT)
        if key is not None and any(
            (r["tenant_id"], r["idempotency_key"]) == (tenant, key) for r in self.runs.values()
        ):
            return Changed(None)
        row: dict[str, Any] = {c.name: _server_default(c) for c in runs.columns}
        row.update({k: _stored(v) if k in JSON_COLUMNS else v for k, v in run.values.items()})
        row["config"], row["metadata"] = _stored(run.config), _stored(run.metadata)
        at = row["priority"]
        queued = [r["fair_rank"] for r in self.runs.values() if r["status"] == "queued"
                  and r["priority"] == at]  # fmt: skip
        given = [rank for (_, p), rank in self.fair_ranks.items() if p == at]
        head = min(queued) if queued else max(given, default=0)
        last = self.fair_ranks.get((row["fair_key"], at), 0)
        row["fair_rank"] = self.fair_ranks[(row["fair_key"], at)] = max(last + 1, head + 1)
        self.runs[row["id"]] = row
        self._events(row["id"], row["last_event_seq"], run.events, run.now)
        self._log(row["id"], run.snapshot.batch)
        return Changed(self._record(row), wakes=[("runs", "")])

    async def claim(self, change: Change, now: datetime, limit: int) -> list[RunRecord]:
        due = sorted(
            (r for r in self.runs.values() if r["status"] == "queued" and r["available_at"] <= now),
            key=lambda r: (-r["priority"], r["fair_rank"], r["available_at"], r["id"]),
        )
        out = []
        for row in due[:limit]:
            self._set(row, change, now)
            row["attempts"] += 1
            row["version"] += 1
            out.append(self._record(row, self._log_of(row["id"])))
        return out

    def _record(self, row: dict[str, Any], log: str | None = None) -> RunRecord:
        """The run as a read gives it: a copy (a caller's change to it stays its own)."""
        copy = {k: _stored(v) if k in JSON_COLUMNS else v for k, v in row.items()}
        return RunRecord.from_row(copy, log=log)

    def _log_of(self, run_id: str) -> str:
        return "[" + ",".join(body for _, body in sorted(self.logs.get(run_id, []))) + "]"

    async def run(self, key: str, value: str, *, with_log: bool, scope: Scope) -> RunRecord | None:
        for row in self.runs.values():
            if row[key] == value and scope.admits(row["tenant_id"]):
                return self._record(row, self._log_of(row["id"]) if with_log else None)
        return None

    async def pending(
        self, key: str, value: str, *, scope: Scope
    ) -> tuple[RunRecord, list[ToolCallRecord]] | None:
        record = await self.run(key, value, with_log=False, scope=scope)
        if record is None:
            return None
        return record, self._round(record.id, record.waiting_round or 0)

    def _round(self, run_id: str, round: int) -> list[ToolCallRecord]:
        calls = self.calls.get(run_id, {})
        return [ToolCallRecord.from_row(calls[k]) for k in sorted(calls) if k[0] == round]

    async def calls_of_rounds(self, rounds: Mapping[str, int]) -> list[ToolCallRecord]:
        return [call for run_id in sorted(rounds) for call in self._round(run_id, rounds[run_id])]

    async def lease_calls(self, lease: Lease) -> list[ToolCallRecord]:
        raise self._sql("the queue's lease")

    async def watch(self, watcher: str, run_ids: Sequence[str], ttl_seconds: float) -> None:
        pass  # (nothing notifies)
