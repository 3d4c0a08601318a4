"""The run repository: every SQL statement of the run lifecycle lives here.

Each public method is one transaction. Transitions are compare-and-set updates (`WHERE
status IN (...)`, and `AND version = :v` for the lease holder's writes, the fencing
token), with their events appended in the same transaction. No ORM unit of work: Core
statements only, one round trip per statement.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from app.core.lifecycle import RunStatus
from app.store.direct import Compiled, DirectPool, compile_statement
from app.store.records import (
    RUN_COLUMNS,
    EventRecord,
    NewEvent,
    NewToolCall,
    RunRecord,
    ToolCallRecord,
    WebhookRecord,
)
from app.store.retention import add_daily, daily_usage
from app.store.schema import (
    created_beyond,
    model_calls,
    run_events,
    run_watchers,
    runs,
    service_secrets,
    tool_calls,
    webhook_attempts,
    webhook_outbox,
)
from app.store.wakeups import Wakeups
from app.timestamps import iso

NOTIFY_CHANNEL = "agentrun_runs"


@dataclass(frozen=True, slots=True)
class SubmittedResult:
    call_id: str
    result: dict[str, Any]  # {"output": ..., "is_error": bool}
    result_hash: str
    actor: str | None = None  # who submitted it: recorded on its tool_result.received


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


#: Re-reads allowed when concurrent submissions to one run keep moving its version.
SUBMIT_ATTEMPTS = 20


@dataclass(frozen=True, slots=True)
class _Submission:
    """The write a submission makes: run values, events, answers, the call ids it
    accepted, and whether it resumes the run."""

    values: dict[str, Any]
    events: list[NewEvent]
    answers: list[tuple[int, int, Any, str]]  # round, position, result, hash
    accepted: list[str]
    resumed: bool


@dataclass(frozen=True, slots=True)
class SubmitOutcome:
    record: RunRecord
    accepted: list[str]  # call ids newly answered by this request
    resumed: bool


#: Events that are also announced by outbound webhooks (written to the outbox).
WEBHOOK_EVENTS = frozenset(
    {"run.requires_action", "run.completed", "run.failed", "run.cancelled", "run.expired"}
)
#: Events that are also rows of the usage ledger.
LEDGER_EVENTS = frozenset({"model.called", "model.failed"})
EVENTS_CHANNEL = "agentrun_events"
WEBHOOKS_CHANNEL = "agentrun_webhooks"
LEDGER_COLUMNS = (
    "turn",
    "provider",
    "model",
    "outcome",
    "input_tokens",
    "output_tokens",
    "cached_input_tokens",
    "reasoning_tokens",
    "total_tokens",
    "cost_usd",
    "latency_ms",
    "error",
)


def ledger_row(event: NewEvent) -> dict[str, Any]:
    """The usage-ledger row a model.called / model.failed event stands for."""
    d = event.data
    usage = d.get("usage") or {}
    ok = event.type == "model.called"
    return {
        "turn": int(d.get("turn") or 0),
        "provider": str(d.get("provider") or ""),
        "model": str(d.get("model") or ""),
        "outcome": "ok" if ok else "error",
        "input_tokens": int(usage.get("input_tokens", 0)),
        "output_tokens": int(usage.get("output_tokens", 0)),
        "cached_input_tokens": int(usage.get("cached_input_tokens", 0)),
        "reasoning_tokens": int(usage.get("reasoning_tokens", 0)),
        "total_tokens": int(usage.get("total_tokens", 0)),
        "cost_usd": d.get("cost_usd"),
        "latency_ms": d.get("latency_ms"),
        "error": None if ok else str(d.get("message") or ""),
    }


def webhook_payload(event: NewEvent, run_id: str, status: str, now: datetime) -> dict[str, Any]:
    return {
        "type": event.type,
        "timestamp": iso(now),
        "data": {"run_id": run_id, "status": status, **event.data},
    }


def _claim_change(worker_id: str, lease_until: datetime) -> tuple[dict[str, Any], list[NewEvent]]:
    """The columns and event of a claim by `worker_id`."""
    values = {
        "status": RunStatus.RUNNING.value,
        "lease_owner": worker_id,
        "lease_expires_at": lease_until,
        "waiting_reason": {
            "type": "model_call",
            "worker": worker_id,
            "lease_until": iso(lease_until),
        },
    }
    return values, [NewEvent("run.claimed", {"worker": worker_id})]


#: The status a claim takes runs from.
QUEUED = (RunStatus.QUEUED.value,)
#: The columns a claim sets (sorted, as statement shapes key them).
CLAIM_KEYS = tuple(sorted(_claim_change("", datetime.now(UTC))[0]))


def _notify(channel: str, changed: Any, *, watched_only: bool = False) -> Any:
    """NOTIFY for each run in `changed`, as a scalar subquery over it: no run there (a
    refused compare-and-set, or nothing to claim), no notification. `watched_only`: only
    runs whose live stream some API process is serving (`run_watchers`), since a NOTIFY
    makes each notifying commit of the cluster wait for the one before it."""
    notify = sa.select(sa.func.count(sa.func.pg_notify(channel, changed.c.id)))
    if watched_only:
        notify = notify.where(
            sa.exists().where(
                run_watchers.c.run_id == changed.c.id, run_watchers.c.expires_at > sa.func.now()
            )
        )
    return notify.correlate(None).scalar_subquery()


def _status_in(statuses: Iterable[str]) -> sa.ColumnElement[bool]:
    """`status IN (...)` for a run found by its key, as a filter only: `status || ''` keeps
    status-led indexes (ix_runs_lease, ix_runs_expiry, the claim's) from serving the
    lookup, so the primary key does. Seen: with `status` bare, a plan made while few runs
    were suspended found the run through ix_runs_lease, reading every suspended run on
    each submission. The statuses are literals (enum values), part of the shape."""
    status = runs.c.status.concat(sa.literal_column("''"))
    return status.in_([sa.literal_column(f"'{RunStatus(s).value}'") for s in statuses])


def _pool_size(pool: Any) -> int:
    """The SQLAlchemy pool's size, so the direct pool matches it."""
    size = getattr(pool, "size", None)
    return int(size()) if callable(size) else 10


def _typed(name: str, t: Any) -> Any:
    """An explicitly typed parameter for a SELECT list (the server must know each
    parameter's type when it prepares the statement); JSON needs its own bind type so
    the value is serialized."""
    if isinstance(t, sa.Float):
        return sa.cast(sa.bindparam(name, type_=sa.Float()), postgresql.DOUBLE_PRECISION)
    if isinstance(t, sa.JSON):
        return sa.bindparam(name, type_=postgresql.JSONB())
    return sa.cast(sa.bindparam(name), t)


@dataclass(frozen=True, slots=True)
class EventPlan:
    """What a batch of events writes besides the event rows themselves."""

    n: int
    ledger: tuple[int, ...]  # positions of usage-ledger events
    webhooks: tuple[int, ...]  # positions of webhook events

    @classmethod
    def of(cls, events: Sequence[NewEvent]) -> EventPlan:
        return cls(
            len(events),
            tuple(i for i, e in enumerate(events) if e.type in LEDGER_EVENTS),
            tuple(i for i, e in enumerate(events) if e.type in WEBHOOK_EVENTS),
        )


class RunStore:
    def __init__(self, engine: AsyncEngine, *, webhook_url: str | None = None) -> None:
        self.engine = engine
        self.is_postgres = engine.dialect.name == "postgresql"
        self.webhook_url = webhook_url  # the deployment's global endpoint, if any
        self._statements: dict[tuple[Any, ...], Any] = {}
        # One-statement operations run in autocommit on PostgreSQL: the statement is the
        # transaction, which saves the BEGIN and COMMIT round trips.
        self._autocommit = (
            engine.execution_options(isolation_level="AUTOCOMMIT") if self.is_postgres else None
        )
        # The lifecycle's hot statements skip SQLAlchemy's execution layer on PostgreSQL.
        self._direct = DirectPool(engine.url, _pool_size(engine.pool)) if self.is_postgres else None
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

    async def _send_wakeup(self, channel: str) -> None:
        stmt = self._statements.get(("wakeup",))
        if stmt is None:
            stmt = sa.select(sa.func.pg_notify(sa.bindparam("p_channel", type_=sa.String()), ""))
            self._statements[("wakeup",)] = stmt
        await self._fetch(None, stmt, {"p_channel": channel})

    def _wake_after(self, stmt: Any, row: Any, *, notify: bool) -> list[str]:
        """The channels to wake once `row` (a result of `stmt`) is committed: the workers'
        when `notify` and the run changed, the webhook senders' when an outbox row was
        written (PostgreSQL; SQLite listeners poll)."""
        if not self.is_postgres or row is None:
            return []
        channels = [NOTIFY_CHANNEL] if notify and row[0] is not None else []
        key = id(stmt)
        if key not in self._announced_at:
            names = list(stmt.selected_columns.keys())
            self._announced_at[key] = (
                names.index("webhooks_announced") if "webhooks_announced" in names else None
            )
        at = self._announced_at[key]
        if at is not None and row[at]:
            channels.append(WEBHOOKS_CHANNEL)
        return channels

    def _wake(self, channels: Iterable[str]) -> None:
        for channel in channels:
            self.wakeups.poke(channel)

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
        assert self._direct is not None
        return await self._direct.fetchone(self._compile(stmt), params)

    def _single(self) -> Any:
        """For `_update`: None (the direct pool) on PostgreSQL, a transaction on SQLite."""
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

    # --- helpers ------------------------------------------------------------------------

    async def _append_events(
        self,
        conn: AsyncConnection,
        record_id: str,
        last_seq: int,
        events: Sequence[NewEvent],
        now: datetime,
        *,
        status: str | None = None,
        config: dict[str, Any] | None = None,
    ) -> None:
        """SQLite: the event rows, their ledger rows and their outbox rows."""
        if not events:
            return
        first = last_seq - len(events) + 1
        await conn.execute(
            run_events.insert(),
            [
                {
                    "run_id": record_id,
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
        if plan.ledger:
            await conn.execute(
                model_calls.insert(),
                [
                    {"run_id": record_id, "created_at": now, **ledger_row(events[i])}
                    for i in plan.ledger
                ],
            )
        if plan.webhooks and status is not None:
            rows = []
            for i in plan.webhooks:
                payload = webhook_payload(events[i], record_id, status, now)
                for suffix, url in self._webhook_targets(config or {}):
                    rows.append(
                        {
                            "run_id": record_id,
                            "event_seq": first + i,
                            "event_type": events[i].type,
                            "webhook_id": f"msg_{record_id}_{first + i}{suffix}",
                            "url": url,
                            "payload": payload,
                            "status": "pending",
                            "attempts": 0,
                            "next_attempt_at": now,
                            "created_at": now,
                        }
                    )
            if rows:
                await conn.execute(webhook_outbox.insert(), rows)

    def _webhook_targets(self, config: dict[str, Any]) -> list[tuple[str, str]]:
        targets = []
        url = (config.get("webhook") or {}).get("url")
        if url:
            targets.append(("", str(url)))
        if self.webhook_url:
            targets.append(("_g", self.webhook_url))
        return targets

    def _event_params(
        self, events: Sequence[NewEvent], now: datetime, prefix: str = ""
    ) -> dict[str, Any]:
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

    def _change_params(
        self,
        values: dict[str, Any],
        events: Sequence[NewEvent],
        now: datetime,
        prefix: str = "",
    ) -> dict[str, Any]:
        """The parameters of a change built by `_dml` and `_side_ctes` with `prefix`."""
        params = {f"{prefix}v_{k}": v for k, v in values.items()}
        params.update(self._event_params(events, now, prefix))
        return params

    def _update_statement(
        self,
        keys: tuple[str, ...],
        statuses: tuple[str, ...],
        plan: EventPlan,
        fenced: bool,
        claim: bool,
        tool_rows: int = 0,
        answers: int = 0,
        chain: EventPlan | None = None,
    ) -> Any:
        """The compare-and-set UPDATE of one run, built once per shape and reused (building
        SQLAlchemy statements per call costs more CPU than the database spends on them).

        On PostgreSQL the change and its events (with their live-stream NOTIFY, for a
        watched run) are one statement (a CTE), so a transition costs one round trip and
        one commit; wake-ups go out after it (`wakeups`). With `chain` (the claim's
        events), the same statement also claims the next due run (`n_`-prefixed
        parameters); the row then holds both runs, side by side (FULL JOIN: either may be
        missing)."""
        shape = (keys, statuses, plan, fenced, claim, tool_rows, answers, chain)
        cached = self._statements.get(shape)
        if cached is not None:
            return cached
        dml = self._dml(keys, statuses, plan.n, fenced, claim)
        if not self.is_postgres:
            stmt = dml.returning(*runs.c)
        else:
            changed = dml.returning(*runs.c).cte("changed")
            stmt = self._with_events(changed, plan, tool_rows, answers)
            if chain is not None:
                claimed = self._dml(CLAIM_KEYS, QUEUED, chain.n, False, True, "n_")
                claimed = claimed.returning(*runs.c).cte("n_changed")
                stmt = self._side_ctes(stmt, claimed, chain, "n_")
                stmt = stmt.add_columns(*claimed.c).select_from(
                    changed.join(claimed, sa.true(), full=True)
                )
        self._statements[shape] = stmt
        return stmt

    def _dml(
        self,
        keys: tuple[str, ...],
        statuses: tuple[str, ...],
        n_events: int,
        fenced: bool,
        claim: bool,
        prefix: str = "",
    ) -> Any:
        """The UPDATE itself: by id (`claim`: the oldest due queued runs, at most
        `p_limit`), compare-and-set on status (and `version` when `fenced`)."""
        if claim:
            due = (
                sa.select(runs.c.id)
                .where(
                    # A literal, not a parameter: it matches ix_runs_claim's predicate, so
                    # even a generic plan uses that index.
                    runs.c.status == sa.literal_column(f"'{RunStatus.QUEUED.value}'"),
                    runs.c.available_at <= sa.bindparam("p_now"),
                )
                .order_by(runs.c.available_at, runs.c.id)
                .limit(sa.bindparam(f"{prefix}p_limit", type_=sa.Integer()))
            )
            if self.is_postgres:
                # Joined as a derived table (not `IN`): it runs once, locking what it
                # picks, so a concurrent claim's row lock cannot make the re-check skip
                # the rows this claim picked.
                picked = due.with_for_update(skip_locked=True).subquery("due")
                chosen: sa.ColumnElement[bool] = runs.c.id == picked.c.id
            else:  # SQLite: writers are serialized
                chosen = runs.c.id.in_(due)
        else:
            chosen = runs.c.id == sa.bindparam(f"{prefix}p_id")
        where = [chosen]
        if not claim:  # (a claim's pick is row-locked and re-checked by its subquery)
            where.append(_status_in(statuses))
        if fenced:
            where.append(runs.c.version == sa.bindparam(f"{prefix}p_version"))
        values: dict[str, Any] = {
            k: sa.bindparam(f"{prefix}v_{k}", type_=runs.c[k].type) for k in keys
        }
        if claim:
            values["attempts"] = runs.c.attempts + 1
        return (
            runs.update()
            .where(*where)
            .values(
                **values,
                version=runs.c.version + 1,
                last_event_seq=runs.c.last_event_seq + n_events,
                updated_at=sa.bindparam("p_now"),
            )
        )

    def _with_events(
        self, changed: Any, plan: EventPlan, tool_rows: int = 0, answers: int = 0
    ) -> Any:
        """PostgreSQL: the change (`changed`, a `RETURNING runs.*` CTE), its events,
        ledger, outbox and tool-call rows (or answers) and its live-stream NOTIFY as one
        statement (data-modifying CTEs)."""
        stmt = self._side_ctes(sa.select(changed), changed, plan)
        if tool_rows:
            stmt = self._tool_call_ctes(stmt, changed, tool_rows)
        for i in range(answers):
            stmt = stmt.add_cte(self._answer(changed, i).cte(f"answered{i}"))
        return stmt

    def _tool_call_ctes(self, stmt: Any, changed: Any, n: int) -> Any:
        """The pending calls of a suspension: upserted by position, and rows of an earlier
        suspension at the same round beyond them removed (an operator retry)."""
        columns = (
            "round",
            "position",
            "call_id",
            "name",
            "arguments",
            "preresolved",
            "result",
            "submitted_at",
        )
        rows = [
            sa.select(
                changed.c.id,
                *[_typed(f"t{i}_{c}", tool_calls.c[c].type) for c in columns],
            )
            for i in range(n)
        ]
        insert = postgresql.insert(tool_calls).from_select(
            ["run_id", *columns], rows[0] if n == 1 else sa.union_all(*rows)
        )
        upsert = insert.on_conflict_do_update(
            index_elements=["run_id", "round", "position"],
            set_={c: insert.excluded[c] for c in columns[2:]},
        )
        stale = tool_calls.delete().where(
            tool_calls.c.run_id == sa.select(changed.c.id).scalar_subquery(),
            tool_calls.c.round == sa.bindparam("t0_round", type_=sa.Integer()),
            tool_calls.c.position >= n,
        )
        return stmt.add_cte(upsert.cte("tooled")).add_cte(stale.cte("pruned"))

    def _answer(self, changed: Any, i: int) -> Any:
        """One submitted result, written only when the run's compare-and-set succeeded
        (`changed` is empty otherwise)."""
        return (
            tool_calls.update()
            .where(
                tool_calls.c.run_id == sa.select(changed.c.id).scalar_subquery(),
                tool_calls.c.round == sa.bindparam(f"a{i}_round", type_=sa.Integer()),
                tool_calls.c.position == sa.bindparam(f"a{i}_position", type_=sa.Integer()),
            )
            .values(
                result=sa.bindparam(f"a{i}_result", type_=postgresql.JSONB()),
                result_hash=sa.bindparam(f"a{i}_hash", type_=sa.String()),
                submitted_at=sa.bindparam("p_now", type_=sa.DateTime(timezone=True)),
            )
        )

    def _side_ctes(self, stmt: Any, changed: Any, plan: EventPlan, prefix: str = "") -> Any:
        n = plan.n
        if not n:
            return stmt
        now = sa.bindparam("p_now", type_=sa.DateTime(timezone=True))

        def seq(i: int) -> Any:
            return changed.c.last_event_seq - (n - 1 - i)

        def data(i: int) -> Any:
            return sa.bindparam(f"{prefix}e{i}_data", type_=postgresql.JSONB())

        def event_type(i: int) -> Any:
            return sa.bindparam(f"{prefix}e{i}_type", type_=sa.String())

        rows = [
            sa.select(
                changed.c.id,
                seq(i),
                event_type(i),
                data(i),
                sa.bindparam(f"{prefix}e{i}_actor", type_=sa.String()),
                now,
            )
            for i in range(n)
        ]
        appended = (
            run_events.insert()
            .from_select(
                ["run_id", "seq", "type", "data", "actor", "created_at"],
                rows[0] if n == 1 else sa.union_all(*rows),
            )
            .cte(f"{prefix}appended")
        )
        stmt = stmt.add_cte(appended).add_columns(
            _notify(EVENTS_CHANNEL, changed, watched_only=True).label(f"{prefix}events_notified")
        )
        if plan.ledger:
            ledger = [
                sa.select(
                    changed.c.id,
                    *[_typed(f"{prefix}l{i}_{c}", model_calls.c[c].type) for c in LEDGER_COLUMNS],
                    now,
                )
                for i in plan.ledger
            ]
            stmt = stmt.add_cte(
                model_calls.insert()
                .from_select(
                    ["run_id", *LEDGER_COLUMNS, "created_at"],
                    ledger[0] if len(ledger) == 1 else sa.union_all(*ledger),
                )
                .cte(f"{prefix}ledgered")
            )
        if plan.webhooks:
            run_url: Any = sa.literal_column(f"{changed.name}.config -> 'webhook' ->> 'url'")
            targets: list[tuple[str, Any, Any]] = [("", run_url, run_url.is_not(None))]
            if self.webhook_url:
                global_url = sa.bindparam("p_global_url", type_=sa.Text())
                targets.append(("_g", global_url, sa.true()))
            outbox = []
            for i in plan.webhooks:
                payload = sa.func.jsonb_build_object(
                    "type",
                    event_type(i),
                    "timestamp",
                    sa.bindparam("p_now_iso", type_=sa.String()),
                    "data",
                    sa.func.jsonb_build_object(
                        "run_id", changed.c.id, "status", changed.c.status
                    ).op("||")(data(i)),
                )
                for suffix, url, present in targets:
                    webhook_id = sa.func.concat("msg_", changed.c.id, "_", seq(i), suffix)
                    outbox.append(
                        sa.select(
                            changed.c.id,
                            seq(i),
                            event_type(i),
                            webhook_id,
                            url,
                            payload,
                            sa.literal("pending"),
                            sa.literal(0),
                            now,
                            now,
                        ).where(present)
                    )
            announced = (
                webhook_outbox.insert()
                .from_select(
                    [
                        "run_id",
                        "event_seq",
                        "event_type",
                        "webhook_id",
                        "url",
                        "payload",
                        "status",
                        "attempts",
                        "next_attempt_at",
                        "created_at",
                    ],
                    outbox[0] if len(outbox) == 1 else sa.union_all(*outbox),
                )
                .returning(webhook_outbox.c.id)
                .cte(f"{prefix}announced")
            )
            # Wake the senders (after the commit) only when a delivery was written.
            written = sa.select(sa.func.count()).select_from(announced).scalar_subquery()
            stmt = stmt.add_cte(announced).add_columns(written.label(f"{prefix}webhooks_announced"))
        return stmt

    async def _update(
        self,
        conn: AsyncConnection | None,
        run_id: str,
        statuses: Iterable[RunStatus],
        values: dict[str, Any],
        events: Sequence[NewEvent],
        now: datetime,
        *,
        notify: bool = False,
        expect_version: int | None = None,
        tool_rows: Sequence[dict[str, Any]] = (),
        answers: Sequence[tuple[int, int, Any, str]] = (),
        chain: tuple[str, datetime] | None = None,
        wakes: list[str] | None = None,
    ) -> tuple[RunRecord | None, RunRecord | None]:
        """Compare-and-set one run, appending its events in the same transaction; on
        PostgreSQL `tool_rows` (a suspension's pending calls) and `answers` are written by
        the same statement, `chain` (worker, lease until) also claims the next due run in
        it, and `conn` None runs it as its own autocommit statement on the direct pool.
        `notify`: wake the workers once committed (with `conn`, the caller wakes the
        channels added to `wakes` after its commit).
        Returns (the run as changed or None when refused, the run claimed or None)."""
        keys = tuple(sorted(values))
        claim_values, claim_events = _claim_change(*chain) if chain else ({}, [])
        stmt = self._update_statement(
            keys,
            tuple(s.value for s in statuses),
            EventPlan.of(events),
            expect_version is not None,
            False,
            len(tool_rows),
            len(answers),
            EventPlan.of(claim_events) if chain else None,
        )
        params = self._change_params(values, events, now)
        params["p_id"] = run_id
        for i, tool_row in enumerate(tool_rows):
            for column, value in tool_row.items():
                params[f"t{i}_{column}"] = value
        for i, (round, position, result, result_hash) in enumerate(answers):
            params[f"a{i}_round"] = round
            params[f"a{i}_position"] = position
            params[f"a{i}_result"] = result
            params[f"a{i}_hash"] = result_hash
        if expect_version is not None:
            params["p_version"] = expect_version
        if chain:
            params.update(self._change_params(claim_values, claim_events, now, "n_"))
            params["n_p_limit"] = 1
        row = await self._fetch(conn, stmt, params)
        channels = self._wake_after(stmt, row, notify=notify)
        if conn is None:
            self._wake(channels)
        elif wakes is not None:
            wakes.extend(channels)
        if row is None:
            return None, None
        record = RunRecord.from_row(row) if row[0] is not None else None
        width = len(RUN_COLUMNS)
        claimed = RunRecord.from_row(row[-width:]) if chain and row[-width] else None
        if record is not None and conn is not None and not self.is_postgres:
            await self._append_events(
                conn,
                record.id,
                record.last_event_seq,
                events,
                now,
                status=record.status.value,
                config=record.config,
            )
        return record, claimed

    # --- reads --------------------------------------------------------------------------

    async def get(self, run_id: str) -> RunRecord | None:
        row = await self._read_one(self._by("id"), {"p_key": run_id})
        return RunRecord.from_row(row) if row is not None else None

    async def _read_one(self, stmt: Any, params: dict[str, Any]) -> Any:
        if self._direct is not None:
            return await self._fetch(None, stmt, params)
        async with self._reader() as conn:
            return await self._fetch(conn, stmt, params)

    async def list_runs(
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
            stmt = stmt.where(created_beyond(*before, ascending=False))
        async with self._reader() as conn:
            rows = (await conn.execute(stmt)).all()
        return [RunRecord.from_row(r) for r in rows]

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
        stmt = (
            tool_calls.select()
            .where(sa.tuple_(tool_calls.c.run_id, tool_calls.c.round).in_(list(rounds.items())))
            .order_by(tool_calls.c.run_id, tool_calls.c.position)
        )
        async with self._reader() as conn:
            rows = (await conn.execute(stmt)).all()
        out: dict[str, list[ToolCallRecord]] = {run_id: [] for run_id in rounds}
        for row in rows:
            record = ToolCallRecord.from_row(row)
            out[record.run_id].append(record)
        return out

    async def events(self, run_id: str, *, after: int = 0, limit: int = 1000) -> list[EventRecord]:
        stmt = (
            run_events.select()
            .where(run_events.c.run_id == run_id, run_events.c.seq > after)
            .order_by(run_events.c.seq)
            .limit(limit)
        )
        async with self._reader() as conn:
            rows = (await conn.execute(stmt)).all()
        return [EventRecord.from_row(r) for r in rows]

    # --- live-stream watches ---------------------------------------------------------------

    async def watch(self, watcher: str, run_ids: Iterable[str], ttl_seconds: float) -> None:
        """Mark runs as watched by `watcher` (an API process) until `ttl_seconds` from now
        (database clock), so their event appends NOTIFY; drops every lapsed watch."""
        ids = sorted(set(run_ids))
        if not ids or not self.is_postgres:
            return
        expires = sa.func.now() + sa.func.make_interval(0, 0, 0, 0, 0, 0, ttl_seconds)
        insert = postgresql.insert(run_watchers).from_select(
            ["run_id", "watcher", "expires_at"],
            sa.select(
                sa.func.unnest(sa.cast(ids, postgresql.ARRAY(sa.String()))),
                sa.literal(watcher),
                expires,
            ),
        )
        upsert = insert.on_conflict_do_update(
            index_elements=["run_id", "watcher"], set_={"expires_at": insert.excluded.expires_at}
        )
        async with self.engine.begin() as conn:
            await conn.execute(
                run_watchers.delete().where(run_watchers.c.expires_at < sa.func.now())
            )
            await conn.execute(upsert)

    async def unwatch(self, watcher: str, run_ids: Iterable[str] | None = None) -> None:
        """End `watcher`'s watches: of the given runs, or all of them."""
        if not self.is_postgres:
            return
        stmt = run_watchers.delete().where(run_watchers.c.watcher == watcher)
        if run_ids is not None:
            stmt = stmt.where(run_watchers.c.run_id.in_(sorted(set(run_ids))))
        async with self.engine.begin() as conn:
            await conn.execute(stmt)

    async def watched(self) -> list[tuple[str, str]]:
        """(run id, watcher) of every live watch."""
        stmt = sa.select(run_watchers.c.run_id, run_watchers.c.watcher).where(
            run_watchers.c.expires_at > sa.func.now()
        )
        async with self._reader() as conn:
            rows = (await conn.execute(stmt)).all()
        return sorted((r[0], r[1]) for r in rows)

    async def count_by_status(self) -> dict[str, int]:
        stmt = sa.select(runs.c.status, sa.func.count()).group_by(runs.c.status)
        async with self._reader() as conn:
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
        keys = tuple(sorted(values))
        stmt = self._insert_statement(keys, EventPlan.of(events), key is not None)
        params: dict[str, Any] = {f"v_{k}": values[k] for k in keys}
        params.update(self._event_params(events, now))
        async with self._single() as conn:
            row = await self._fetch(conn, stmt, params)
            if row is not None and conn is not None:
                await self._append_events(conn, row[0], len(events), events, now)
            if row is None:  # the idempotency key is taken: the stored run answers
                existing = await self._fetch(conn, self._by("idempotency_key"), {"p_key": key})
                assert existing is not None
                return RunRecord.from_row(existing), False
        self._wake(self._wake_after(stmt, row, notify=True))
        return RunRecord.from_row(row), True

    def _by(self, column: str) -> Any:
        """`SELECT runs.* WHERE <column> = :p_key`, built once."""
        shape = ("by", column)
        stmt = self._statements.get(shape)
        if stmt is None:
            stmt = runs.select().where(runs.c[column] == sa.bindparam("p_key"))
            self._statements[shape] = stmt
        return stmt

    def _insert_statement(self, keys: tuple[str, ...], plan: EventPlan, idempotent: bool) -> Any:
        shape = ("insert", keys, plan, idempotent)
        cached = self._statements.get(shape)
        if cached is not None:
            return cached
        insert = postgresql.insert(runs) if self.is_postgres else sqlite.insert(runs)
        dml = insert.values({k: sa.bindparam(f"v_{k}", type_=runs.c[k].type) for k in keys})
        if idempotent:
            dml = dml.on_conflict_do_nothing(index_elements=["idempotency_key"])
        if self.is_postgres:
            stmt = self._with_events(dml.returning(*runs.c).cte("changed"), plan)
        else:
            stmt = dml.returning(*runs.c)
        self._statements[shape] = stmt
        return stmt

    async def claim(self, worker_id: str, now: datetime, lease_until: datetime) -> RunRecord | None:
        """Take the oldest due queued run (SKIP LOCKED on PostgreSQL)."""
        claimed = await self.claim_many(worker_id, now, lease_until, 1)
        return claimed[0] if claimed else None

    async def claim_many(
        self, worker_id: str, now: datetime, lease_until: datetime, limit: int
    ) -> list[RunRecord]:
        """Take up to `limit` of the oldest due queued runs with one statement, however
        many idle slots it feeds (SKIP LOCKED on PostgreSQL)."""
        values, events = _claim_change(worker_id, lease_until)
        stmt = self._update_statement(CLAIM_KEYS, QUEUED, EventPlan.of(events), False, True)
        params = self._change_params(values, events, now)
        params["p_limit"] = limit
        if self._direct is not None:
            rows = await self._direct.fetchall(self._compile(stmt), params)
            return [RunRecord.from_row(row) for row in rows]
        async with self.engine.begin() as conn:
            records = [RunRecord.from_row(row) for row in await conn.execute(stmt, params)]
            for record in records:
                await self._append_events(conn, record.id, record.last_event_seq, events, now)
        return records

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
                _status_in([RunStatus.RUNNING.value]),
            )
            .values(
                lease_expires_at=lease_until,
                updated_at=now,
                waiting_reason={
                    "type": "model_call",
                    "worker": worker_id,
                    "lease_until": iso(lease_until),
                },
            )
        )
        async with self._one_statement() as conn:
            result = await conn.execute(stmt)
        return bool(result.rowcount == 1)

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
        done, _ = await self.transition_and_claim(
            run_id,
            from_statuses=from_statuses,
            values=values,
            events=events,
            now=now,
            expect_version=expect_version,
            new_tool_calls=new_tool_calls,
            round=round,
            notify=notify,
        )
        return done

    async def transition_and_claim(
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
        claim_for: tuple[str, datetime] | None = None,
    ) -> tuple[RunRecord | None, RunRecord | None]:
        """`transition`, and with `claim_for` (worker, lease until) the claim of the next
        due run for that worker: a lease holder's last write and its next claim cost one
        statement and one commit on PostgreSQL (two on SQLite). The claim happens even
        when the transition is refused (a lost lease); the caller owns what it returns."""
        rows = [
            {
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
        ]
        async with self._single() if self.is_postgres or not rows else self.engine.begin() as conn:
            record, claimed = await self._update(
                conn,
                run_id,
                from_statuses,
                values,
                events,
                now,
                notify=notify,
                expect_version=expect_version,
                tool_rows=rows if self.is_postgres else (),
                chain=claim_for if self.is_postgres else None,
            )
            if record is not None and rows and not self.is_postgres:
                await conn.execute(
                    tool_calls.delete().where(
                        tool_calls.c.run_id == run_id, tool_calls.c.round == round
                    )
                )
                await conn.execute(tool_calls.insert(), [{"run_id": run_id, **row} for row in rows])
        if claim_for is not None and not self.is_postgres:
            claimed = await self.claim(claim_for[0], now, claim_for[1])
        return record, claimed

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
        resumed run (purely) and the run is queued by the same write. A refused request
        (unknown id, different result, wrong status) changes nothing.

        PostgreSQL: one read, then one compare-and-set statement on `version` (answers,
        run, events); a concurrent submission makes it re-read and decide again. SQLite:
        one transaction holding the write lock."""
        column, key = ("id", run_id) if run_id is not None else ("callback_token_hash", token_hash)
        if self._direct is None:
            return await self._submit_locked(column, key, results, now, complete)
        for _ in range(SUBMIT_ATTEMPTS):
            row = await self._fetch(None, self._submission_read(column), {"p_key": key})
            if row is None:
                raise NotFoundError(run_id or "callback")
            record = RunRecord.from_row(row)
            calls = [ToolCallRecord.from_mapping(c) for c in row[-1]]
            decided = await self._decide(record, calls, results, now, complete)
            if isinstance(decided, SubmitOutcome):
                return decided
            updated, _ = await self._update(
                None,
                record.id,
                [RunStatus.REQUIRES_ACTION],
                decided.values,
                decided.events,
                now,
                notify=decided.resumed,
                expect_version=record.version,
                answers=decided.answers,
            )
            if updated is not None:
                return SubmitOutcome(updated, decided.accepted, decided.resumed)
        raise StatusConflict(record)

    async def _submit_locked(
        self,
        column: str,
        key: str | None,
        results: Sequence[SubmittedResult],
        now: datetime,
        complete: Callable[[RunRecord, list[ToolCallRecord]], Awaitable[Completion]],
    ) -> SubmitOutcome:
        async with self.engine.begin() as conn:
            row = (await conn.execute(runs.select().where(runs.c[column] == key))).first()
            if row is None:
                raise NotFoundError(key if column == "id" else "callback")
            record = RunRecord.from_row(row)
            round = int((record.waiting_reason or {}).get("round") or 0)
            rows = (
                await conn.execute(
                    tool_calls.select()
                    .where(tool_calls.c.run_id == record.id, tool_calls.c.round == round)
                    .order_by(tool_calls.c.position)
                )
            ).all()
            calls = [ToolCallRecord.from_row(r) for r in rows]
            decided = await self._decide(record, calls, results, now, complete)
            if isinstance(decided, SubmitOutcome):
                return decided
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
                    {"b_position": pos, "b_result": result, "b_hash": result_hash}
                    for _, pos, result, result_hash in decided.answers
                ],
            )
            updated, _ = await self._update(
                conn,
                record.id,
                [RunStatus.REQUIRES_ACTION],
                decided.values,
                decided.events,
                now,
                notify=decided.resumed,
            )
            assert updated is not None
        return SubmitOutcome(updated, decided.accepted, decided.resumed)

    async def _decide(
        self,
        record: RunRecord,
        calls: list[ToolCallRecord],
        results: Sequence[SubmittedResult],
        now: datetime,
        complete: Callable[[RunRecord, list[ToolCallRecord]], Awaitable[Completion]],
    ) -> SubmitOutcome | _Submission:
        """What a submission does to the run as read: a refusal (raised), a no-op (the
        outcome), or the write to make."""
        reason = record.waiting_reason or {}
        if record.status != RunStatus.REQUIRES_ACTION or reason.get("type") != "tool_results":
            raise StatusConflict(record)
        answered: dict[int, SubmittedResult] = {}
        for submitted in results:
            candidates = [c for c in calls if c.call_id == submitted.call_id]
            if not candidates:
                raise UnknownCallError(submitted.call_id)
            open_ = [c for c in candidates if c.result_hash is None and c.position not in answered]
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
        events = [
            NewEvent("tool_result.received", {"tool_call_id": s.call_id}, s.actor)
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
            values: dict[str, Any] = {"waiting_reason": {**reason, "call_ids": remaining}}
        else:
            completion = await complete(record, merged)
            values = completion.values
            events.extend(completion.events)
        return _Submission(
            values,
            events,
            [(int(reason["round"]), pos, s.result, s.result_hash) for pos, s in answered.items()],
            [s.call_id for s in answered.values()],
            not remaining,
        )

    def _submission_read(self, column: str) -> Any:
        """PostgreSQL: a run and the calls of its pending round, in one query."""
        shape = ("submission", column)
        stmt = self._statements.get(shape)
        if stmt is not None:
            return stmt
        pairs: list[Any] = []
        for c in tool_calls.columns:
            pairs += [sa.literal_column(f"'{c.name}'"), c]
        call = sa.func.jsonb_build_object(*pairs)
        calls = (
            sa.select(
                sa.func.coalesce(
                    sa.func.jsonb_agg(postgresql.aggregate_order_by(call, tool_calls.c.position)),
                    sa.literal_column("'[]'::jsonb"),
                )
            )
            .where(
                tool_calls.c.run_id == runs.c.id,
                tool_calls.c.round == runs.c.waiting_reason["round"].as_integer(),
            )
            .scalar_subquery()
        )
        stmt = sa.select(runs, calls.label("calls")).where(runs.c[column] == sa.bindparam("p_key"))
        self._statements[shape] = stmt
        return stmt

    async def reap_expired_leases(self, now: datetime) -> list[str]:
        """Re-queue running runs whose worker stopped heartbeating (the lease is lost)."""
        return await self._sweep(
            RunStatus.RUNNING,
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
            RunStatus.REQUIRES_ACTION,
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
        status: RunStatus,
        due: sa.ColumnElement[bool],
        values: dict[str, Any],
        event: NewEvent,
        now: datetime,
        notify: bool,
    ) -> list[str]:
        """Apply one transition to every run in `status` matching `due` (row-locked)."""
        wakes: list[str] = []
        async with self.engine.begin() as conn:
            stmt = sa.select(runs.c.id).where(runs.c.status == status.value, due).limit(100)
            if self.is_postgres:
                stmt = stmt.with_for_update(skip_locked=True)
            ids = list((await conn.execute(stmt)).scalars())
            for run_id in ids:
                await self._update(
                    conn, run_id, [status], values, [event], now, notify=notify, wakes=wakes
                )
        self._wake(wakes)
        return ids

    # --- events under a lease -----------------------------------------------------------

    async def usage_totals(self, start: datetime, end: datetime) -> dict[str, Any]:
        """Sums of the usage ledger in [start, end): overall, by run status, by model."""
        sums = [
            sa.func.count().label("calls"),
            sa.func.count().filter(model_calls.c.outcome == "error").label("failed_calls"),
            *[
                sa.func.coalesce(sa.func.sum(model_calls.c[c]), 0).label(c)
                for c in (
                    "input_tokens",
                    "output_tokens",
                    "cached_input_tokens",
                    "reasoning_tokens",
                    "total_tokens",
                )
            ],
            sa.func.sum(model_calls.c.cost_usd).label("cost_usd"),
        ]
        in_range = sa.and_(model_calls.c.created_at >= start, model_calls.c.created_at < end)
        joined = model_calls.join(runs, runs.c.id == model_calls.c.run_id)
        model_key = model_calls.c.provider + ":" + model_calls.c.model
        async with self._reader() as conn:
            total = (await conn.execute(sa.select(*sums).where(in_range))).one()
            by_status = (
                await conn.execute(
                    sa.select(runs.c.status, *sums)
                    .select_from(joined)
                    .where(in_range)
                    .group_by(runs.c.status)
                )
            ).all()
            by_model = (
                await conn.execute(
                    sa.select(model_key.label("key"), *sums).where(in_range).group_by(model_key)
                )
            ).all()
            kept = await daily_usage(conn, start, end)  # of runs retention deleted

        def clean(row: Any) -> dict[str, Any]:
            m = dict(row._mapping)
            m.pop("status", None)
            m.pop("key", None)
            for k, v in m.items():
                if k != "cost_usd":
                    m[k] = int(v or 0)
            m["cost_usd"] = None if m["cost_usd"] is None else float(m["cost_usd"])
            return m

        return add_daily(
            {
                **clean(total),
                "by_status": {r.status: clean(r) for r in by_status},
                "by_model": {r.key: clean(r) for r in by_model},
            },
            kept,
        )

    # --- webhooks -----------------------------------------------------------------------

    async def claim_webhooks(
        self, now: datetime, lease_until: datetime, limit: int = 20
    ) -> list[WebhookRecord]:
        """Take due deliveries; pushing `next_attempt_at` to the lease end keeps another
        worker off them while they are in flight (a crashed sender's rows come back)."""
        due = (
            sa.select(webhook_outbox.c.id)
            .where(webhook_outbox.c.status == "pending", webhook_outbox.c.next_attempt_at <= now)
            .order_by(webhook_outbox.c.next_attempt_at, webhook_outbox.c.id)
            .limit(limit)
        )
        if self.is_postgres:
            due = due.with_for_update(skip_locked=True)
        stmt = (
            webhook_outbox.update()
            .where(webhook_outbox.c.id.in_(due.scalar_subquery()))
            .values(attempts=webhook_outbox.c.attempts + 1, next_attempt_at=lease_until)
            .returning(*webhook_outbox.c)
        )
        async with self._one_statement() as conn:
            rows = (await conn.execute(stmt)).all()
        return [WebhookRecord.from_row(r) for r in rows]

    async def trace_contexts(self, run_ids: Iterable[str]) -> dict[str, dict[str, str]]:
        """The stored trace context (`config["trace"]`, app.tracing) of each run that has
        one; read only while tracing is on."""
        stmt = sa.select(runs.c.id, runs.c.config["trace"]).where(runs.c.id.in_(list(run_ids)))
        async with self._reader() as conn:
            rows = (await conn.execute(stmt)).all()
        return {r[0]: r[1] for r in rows if isinstance(r[1], dict)}

    async def finish_webhook(
        self,
        delivery: WebhookRecord,
        *,
        status_code: int | None,
        error: str | None,
        latency_ms: float,
        next_attempt_at: datetime | None,
        worker: str,
        now: datetime,
    ) -> None:
        """Log the attempt; the delivery is delivered (2xx), retried later, or failed."""
        delivered = status_code is not None and 200 <= status_code < 300
        if delivered:
            state, due = "delivered", delivery.next_attempt_at
        elif next_attempt_at is not None:
            state, due = "pending", next_attempt_at
        else:
            state, due = "failed", delivery.next_attempt_at
        async with self.engine.begin() as conn:
            await conn.execute(
                webhook_attempts.insert().values(
                    outbox_id=delivery.id,
                    attempt=delivery.attempts,
                    status_code=status_code,
                    error=error,
                    latency_ms=latency_ms,
                    worker=worker,
                    created_at=now,
                )
            )
            await conn.execute(
                webhook_outbox.update()
                .where(webhook_outbox.c.id == delivery.id)
                .values(
                    status=state,
                    next_attempt_at=due,
                    last_status=status_code,
                    last_error=error,
                    last_latency_ms=latency_ms,
                    delivered_at=now if delivered else None,
                )
            )

    async def webhook_deliveries(self, run_id: str) -> list[dict[str, Any]]:
        """A run's deliveries with their latest outcome (for the dashboard and the API)."""
        stmt = (
            webhook_outbox.select()
            .where(webhook_outbox.c.run_id == run_id)
            .order_by(webhook_outbox.c.id)
        )
        async with self._reader() as conn:
            rows = (await conn.execute(stmt)).all()
        keys = (
            "event_type",
            "webhook_id",
            "url",
            "status",
            "attempts",
            "last_status",
            "last_error",
            "last_latency_ms",
            "created_at",
            "delivered_at",
        )
        out = []
        for row in rows:
            record = WebhookRecord.from_row(row)
            out.append({k: getattr(record, k) for k in keys})
        return out

    async def webhook_attempts(self, webhook_id: str) -> list[dict[str, Any]]:
        stmt = (
            sa.select(webhook_attempts)
            .join(webhook_outbox, webhook_outbox.c.id == webhook_attempts.c.outbox_id)
            .where(webhook_outbox.c.webhook_id == webhook_id)
            .order_by(webhook_attempts.c.attempt)
        )
        async with self._reader() as conn:
            rows = (await conn.execute(stmt)).all()
        return [dict(r._mapping) for r in rows]

    async def append_events(
        self, run_id: str, version: int | None, events: Sequence[NewEvent], now: datetime
    ) -> bool:
        """Append events to a running run on behalf of its lease holder, without a state
        change: fenced on `version` (and status running), bumps `last_event_seq` only, so the
        fencing token stays what the holder's final transition expects. False when the
        fence refused (the lease was lost). Used for streamed text deltas, so it is one
        round trip on PostgreSQL (a CTE in autocommit). No events: nothing written, True.

        `version` None appends whatever the run's state (and never moves the fencing
        token): how a worker that lost its lease still records the model calls it made, so
        the usage ledger counts cancelled and taken-over attempts too."""
        if not events:
            return True
        stmt = self._append_statement(EventPlan.of(events), fenced=version is not None)
        params = {"p_id": run_id, "p_version": version, **self._event_params(events, now)}
        if self.is_postgres:
            row = await self._fetch(None, stmt, params)
            self._wake(self._wake_after(stmt, row, notify=False))
            return row is not None
        async with self.engine.begin() as conn:
            row = (await conn.execute(stmt, params)).first()
            if row is None:
                return False
            await self._append_events(conn, run_id, row.last_event_seq, events, now)
        return True

    def _append_statement(self, plan: EventPlan, fenced: bool = True) -> Any:
        shape = ("append_events", plan, fenced)
        cached = self._statements.get(shape)
        if cached is not None:
            return cached
        where = [runs.c.id == sa.bindparam("p_id")]
        if fenced:
            where += [
                runs.c.version == sa.bindparam("p_version"),
                _status_in([RunStatus.RUNNING.value]),
            ]
        dml = (
            runs.update()
            .where(*where)
            .values(
                last_event_seq=runs.c.last_event_seq + plan.n,
                updated_at=sa.bindparam("p_now"),
            )
        )
        stmt: Any = dml.returning(runs.c.id, runs.c.last_event_seq)
        if self.is_postgres:
            changed = dml.returning(*runs.c).cte("changed")
            select = sa.select(changed.c.id, changed.c.last_event_seq)
            stmt = self._side_ctes(select, changed, plan)
        self._statements[shape] = stmt
        return stmt
