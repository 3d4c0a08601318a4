"""PostgreSQL's forms of the lifecycle's statements, built (not run) here: one statement
per shape, cached.

Building SQLAlchemy statements per call costs more CPU than the database spends on them,
so each shape (the columns set, the source statuses, the events' kinds, the rows beside
the change) is built once and reused. A change is one statement: the compare-and-set
UPDATE (`app.store.sql.runs.update_run`) as a CTE, its events, usage-ledger rows,
outbox rows, pending calls, answers and the run's log batch as data-modifying CTEs beside
it, and a live-stream NOTIFY for watched runs; so a transition costs one round trip and
one commit. The reads that fold a run's log or its pending calls into its row are in
`app.store.backend.pg_reads`. Pure: `tests/store/test_plans.py` compiles and EXPLAINs them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

from app.core.lifecycle import OutboxStatus, RunStatus
from app.store.backend.base import EVENTS_CHANNEL, LINEAGE, NOTIFY_CHANNEL
from app.store.backend.pg_reads import StatementCache, calls_of, log_of
from app.store.change_rows import LEDGER_COLUMNS, OUTBOX_COLUMNS, TOOL_CALL_COLUMNS, EventPlan
from app.store.schema import (
    ENDED_VALUES,
    config_of,
    fair_ranks,
    metadata_of,
    model_calls,
    run_configs,
    run_events,
    run_messages,
    run_watchers,
    runs,
    tool_calls,
    unfolded_runs,
    webhook_outbox,
)
from app.store.sql.runs import claim_keys, due_runs, fair_rank, update_run


@dataclass(frozen=True, slots=True)
class Shape:
    """Everything that changes a change's statement (not its values)."""

    keys: tuple[str, ...]  # the columns set
    statuses: tuple[str, ...]  # the statuses it may start from
    plan: EventPlan
    fenced: bool  # compare-and-set on `version` too
    bump: bool = True  # moves the fencing token (event-only records do not)
    tool_rows: int = 0
    answers: int = 0
    batch: bool = False  # appends a batch to the run's log
    chain: EventPlan | None = None  # also claims the next due run (its events' plan)
    closes_calls: bool = False  # takes the run's unanswered calls out of their queue
    # Returns the run's configuration and metadata (False: the caller holds them already,
    # and they never change).
    reads_config: bool = True
    scoped: bool = False  # the run must be tenant `p_tenant`'s too
    ends: bool = False  # finishes the run: hands it to the fold (`unfolded_runs`)
    bills: bool = False  # ledger rows whatever the status: an ended run's calls to fold
    # Wakes the workers at its own commit (NOTIFY in the statement), not after it: when
    # no other write of the process is in flight (`PostgresBackend`), so the notify lock
    # has next to no queue (other processes' notifying commits may still hold it).
    wakes: bool = False


def notify_each(channel: str, changed: Any, *, watched_only: bool = False) -> Any:
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


def woken(stmt: Any, changed: Any) -> Any:
    """`stmt` waking the workers at its commit (a NOTIFY for each run in `changed`, on the
    channel they listen on; none when the compare-and-set refused)."""
    return stmt.add_columns(notify_each(NOTIFY_CHANNEL, changed).label("woke"))


def typed(name: str, t: Any) -> Any:
    """An explicitly typed parameter for a SELECT list (the server must know each
    parameter's type when it prepares the statement); JSON needs its own bind type so
    the value is serialized."""
    if isinstance(t, sa.Float):
        return sa.cast(sa.bindparam(name, type_=sa.Float()), postgresql.DOUBLE_PRECISION)
    if isinstance(t, sa.JSON):  # (the column's own: `json` keeps a result's key order)
        return sa.bindparam(name, type_=t)
    return sa.cast(sa.bindparam(name), t)


def record_of(changed: Any) -> Any:
    """A run record's columns of a `RETURNING runs.*` CTE: its row, config, metadata."""
    return sa.select(
        changed,
        config_of(changed.c.id).label("config"),
        metadata_of(changed.c.id).label("metadata"),
    )


def claimed_runs(prefix: str = "") -> sa.ColumnElement[bool]:
    """A claim's pick, joined as a derived table (not `IN`): it runs once, locking what it
    picks, so a concurrent claim's row lock cannot make the re-check skip the rows this
    claim picked."""
    picked = due_runs(prefix).with_for_update(skip_locked=True).subquery("due")
    return runs.c.id == picked.c.id


class PgStatements(StatementCache):
    """The statement of each shape, built on first use."""

    def __init__(self, webhook_url: str | None) -> None:
        super().__init__()
        self.webhook_url = webhook_url

    # --- changes ------------------------------------------------------------------------

    def change(self, shape: Shape) -> Any:
        """The compare-and-set UPDATE of one run by id. With `shape.chain` (the claim's
        events), the same statement also claims the next due run (`n_`-prefixed
        parameters and columns); the row then holds both runs side by side (FULL JOIN:
        either may be missing)."""
        return self._cached(shape, lambda: self._change(shape))

    def _change(self, shape: Shape) -> Any:
        dml = update_run(
            shape.keys,
            shape.statuses,
            shape.plan.n,
            fenced=shape.fenced,
            bump=shape.bump,
            scoped=shape.scoped,
        )
        changed = dml.returning(*runs.c).cte("changed")
        head = None if shape.reads_config else sa.select(changed)
        stmt = self.with_rows(
            changed, shape.plan, shape.tool_rows, shape.answers, shape.batch, head=head
        )
        if shape.closes_calls:
            stmt = stmt.add_cte(self._unqueue(changed).cte("unqueued"))
        if shape.ends or shape.bills:
            stmt = stmt.add_cte(self._unfolded(changed, shape.ends).cte("unfolded"))
        if shape.wakes:
            stmt = woken(stmt, changed)
        if shape.chain is not None:
            claimed = update_run(
                claim_keys(),
                (RunStatus.QUEUED.value,),
                shape.chain.n,
                claimed=claimed_runs("n_"),
                prefix="n_",
            )
            claimed = claimed.returning(*runs.c).cte("n_changed")
            stmt = self.side_ctes(stmt, claimed, shape.chain, "n_")
            stmt = stmt.add_columns(
                *[c.label(f"n_{c.name}") for c in claimed.c],
                config_of(claimed.c.id).label("n_config"),
                metadata_of(claimed.c.id).label("n_metadata"),
                log_of(claimed.c.id).label("n_log"),
                calls_of(claimed.c.id, claimed.c.turn).label("n_calls"),
            )
            stmt = stmt.select_from(changed.join(claimed, sa.true(), full=True))
        return stmt

    def claim(self, plan: EventPlan) -> Any:
        """The claim of up to `p_limit` due queued runs, with each run's log and the
        calls of the round at its turn (answered: the worker applies them)."""

        def build() -> Any:
            dml = update_run(
                claim_keys(), (RunStatus.QUEUED.value,), plan.n, claimed=claimed_runs()
            )
            changed = dml.returning(*runs.c).cte("changed")
            stmt = self.side_ctes(record_of(changed), changed, plan)
            return stmt.add_columns(
                log_of(changed.c.id).label("log"),
                calls_of(changed.c.id, changed.c.turn).label("calls"),
            )

        return self._cached(("claim", plan), build)

    def with_rows(
        self,
        changed: Any,
        plan: EventPlan,
        tool_rows: int = 0,
        answers: int = 0,
        batch: bool = False,
        head: Any = None,
    ) -> Any:
        """The change (`changed`, a `RETURNING runs.*` CTE) with its events,
        ledger, outbox, tool-call rows, answers, log batch and live-stream NOTIFY, as one
        statement (data-modifying CTEs)."""
        stmt = self.side_ctes(record_of(changed) if head is None else head, changed, plan)
        if tool_rows:
            stmt = self._tool_call_ctes(stmt, changed, tool_rows)
        for i in range(answers):
            stmt = stmt.add_cte(self._answer(changed, i).cte(f"answered{i}"))
        if batch:
            appended = run_messages.insert().from_select(
                ["run_id", "seq", "body"],
                sa.select(
                    changed.c.id,
                    sa.bindparam("b_seq", type_=sa.Integer()),
                    sa.bindparam("b_body", type_=sa.Text()),
                ),
            )
            stmt = stmt.add_cte(appended.cte("logged"))
        return stmt

    def _tool_call_ctes(self, stmt: Any, changed: Any, n: int) -> Any:
        """The pending calls of a suspension: upserted by position, and rows of an earlier
        suspension at the same round beyond them removed (an operator retry)."""
        rows = [
            sa.select(
                changed.c.id,
                changed.c.tenant_id,
                *[typed(f"t{i}_{c}", tool_calls.c[c].type) for c in TOOL_CALL_COLUMNS],
            )
            for i in range(n)
        ]
        insert = postgresql.insert(tool_calls).from_select(
            ["run_id", "tenant_id", *TOOL_CALL_COLUMNS], rows[0] if n == 1 else sa.union_all(*rows)
        )
        # (A row of an earlier suspension at this round is open again, as on SQLite:
        # answers given before an operator retry are not in the state it resumes from.)
        upsert = insert.on_conflict_do_update(
            index_elements=["run_id", "round", "position"],
            set_={c: insert.excluded[c] for c in TOOL_CALL_COLUMNS[2:]} | {"result_hash": None},
        )
        stale = tool_calls.delete().where(
            tool_calls.c.run_id == sa.select(changed.c.id).scalar_subquery(),
            tool_calls.c.round == sa.bindparam("t0_round", type_=sa.Integer()),
            tool_calls.c.position >= n,
        )
        return stmt.add_cte(upsert.cte("tooled")).add_cte(stale.cte("pruned"))

    def _unqueue(self, changed: Any) -> Any:
        """A run that stops waiting for results (cancelled, expired): its unanswered calls
        leave their queue (and ix_tool_calls_leasable), so no executor leases them."""
        return (
            tool_calls.update()
            .where(
                tool_calls.c.run_id == sa.select(changed.c.id).scalar_subquery(),
                tool_calls.c.queue.is_not(None),
                # (Unanswered, said so that the partial index of leasable calls, which
                # holds every queue's, cannot serve this lookup by run.)
                sa.func.coalesce(tool_calls.c.result_hash, sa.literal_column("''"))
                == sa.literal_column("''"),
            )
            .values(queue=None)
        )

    def _unfolded(self, changed: Any, ends: bool) -> Any:
        """The run's row of `unfolded_runs` (app.store.fold): `ends`, the run finished
        now (it counts); else a ledger write on a run that may have ended: a row for its
        calls if it has (ON CONFLICT DO UPDATE, not DO NOTHING: it waits for a fold that
        holds the row, so the fold cannot miss this write's calls)."""
        now = sa.bindparam("p_now", type_=sa.DateTime(timezone=True))
        columns = ["run_id", "tenant_id", "status", "ended_at", "counts"]
        if ends:
            row = sa.select(changed.c.id, changed.c.tenant_id, changed.c.status, now, sa.true())
            return postgresql.insert(unfolded_runs).from_select(columns, row)
        ended: list[Any] = [sa.literal_column(f"'{s}'") for s in ENDED_VALUES]
        row = sa.select(
            changed.c.id,
            changed.c.tenant_id,
            changed.c.status,
            sa.null(),
            sa.false(),
        ).where(changed.c.status.in_(ended))
        insert = postgresql.insert(unfolded_runs).from_select(columns, row)
        return insert.on_conflict_do_update(
            index_elements=["run_id"], set_={"status": insert.excluded.status}
        )

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
                result=sa.bindparam(f"a{i}_result", type_=tool_calls.c.result.type),
                result_hash=sa.bindparam(f"a{i}_hash", type_=sa.String()),
                submitted_at=sa.bindparam("p_now", type_=sa.DateTime(timezone=True)),
            )
        )

    def side_ctes(self, stmt: Any, changed: Any, plan: EventPlan, prefix: str = "") -> Any:
        """The event rows of `changed` (with their ledger and outbox rows)."""
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
            notify_each(EVENTS_CHANNEL, changed, watched_only=True).label(
                f"{prefix}events_notified"
            )
        )
        if plan.ledger:
            ledger = [
                sa.select(
                    changed.c.id,
                    changed.c.tenant_id,
                    *[typed(f"{prefix}l{i}_{c}", model_calls.c[c].type) for c in LEDGER_COLUMNS],
                    now,
                )
                for i in plan.ledger
            ]
            stmt = stmt.add_cte(
                model_calls.insert()
                .from_select(
                    ["run_id", "tenant_id", *LEDGER_COLUMNS, "created_at"],
                    ledger[0] if len(ledger) == 1 else sa.union_all(*ledger),
                )
                .cte(f"{prefix}ledgered")
            )
        if plan.webhooks:
            stmt = self._outbox_cte(stmt, changed, plan, seq, data, event_type, now, prefix)
        return stmt

    def _outbox_cte(
        self,
        stmt: Any,
        changed: Any,
        plan: EventPlan,
        seq: Any,
        data: Any,
        event_type: Any,
        now: Any,
        prefix: str,
    ) -> Any:
        run_url: Any = (
            sa.select(sa.literal_column("run_configs.config -> 'webhook' ->> 'url'"))
            .select_from(run_configs)
            .where(run_configs.c.run_id == changed.c.id)
            .scalar_subquery()
        )
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
                "data",  # (as `webhook_payload`: the run's id and status win)
                data(i).op("||")(
                    sa.func.jsonb_build_object("run_id", changed.c.id, "status", changed.c.status)
                ),
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
                        sa.literal(OutboxStatus.PENDING.value),
                        sa.literal(0),
                        now,
                        now,
                    ).where(present)
                )
        announced = (
            webhook_outbox.insert()
            .from_select(
                list(OUTBOX_COLUMNS), outbox[0] if len(outbox) == 1 else sa.union_all(*outbox)
            )
            .returning(webhook_outbox.c.id)
            .cte(f"{prefix}announced")
        )
        # Wake the senders (after the commit) only when a delivery was written.
        written = sa.select(sa.func.count()).select_from(announced).scalar_subquery()
        return stmt.add_cte(announced).add_columns(written.label(f"{prefix}webhooks_announced"))

    # --- inserts and reads ----------------------------------------------------------------

    def insert(
        self, keys: tuple[str, ...], plan: EventPlan, idempotent: bool, wakes: bool = False
    ) -> Any:
        """A new run with its configuration, events and first log batch (`wakes`: and
        the workers' NOTIFY, as `Shape.wakes`)."""

        def build() -> Any:
            values: dict[str, Any] = {k: sa.bindparam(f"v_{k}", type_=runs.c[k].type) for k in keys}
            ranked = fair_rank(
                postgresql.insert(fair_ranks),
                values["priority"],
                values["fair_key"],
                values["created_at"],
                sa.func.greatest,
            ).cte("ranked")
            values["fair_rank"] = sa.select(ranked.c.rank).scalar_subquery()
            dml = postgresql.insert(runs).values(values)
            if idempotent:
                dml = dml.on_conflict_do_nothing(
                    index_elements=["tenant_id", "idempotency_key"],
                    index_where=runs.c.idempotency_key.is_not(None),
                )
            changed = dml.returning(*runs.c).cte("changed")
            config = typed("c_config", run_configs.c.config.type)
            meta = typed("c_metadata", run_configs.c.metadata.type)
            lineage = [typed(f"c_{k}", run_configs.c[k].type) for k in LINEAGE]
            configured = run_configs.insert().from_select(
                ["run_id", "config", "metadata", "created_at", "tenant_id", *LINEAGE],
                sa.select(
                    changed.c.id, config, meta, changed.c.created_at, changed.c.tenant_id, *lineage
                ),
            )
            # (The configuration this statement inserts is not visible to it: the
            # record's columns come from the parameters.)
            head = sa.select(changed, config.label("config"), meta.label("metadata"))
            stmt = self.with_rows(changed, plan, batch=True, head=head)
            stmt = stmt.add_cte(configured.cte("configured"))
            return woken(stmt, changed) if wakes else stmt

        return self._cached(("insert", keys, plan, idempotent, wakes), build)
