"""The rows a run gains as it goes: its log, tool calls, events, watchers and webhooks.

They hold rows of a run, written only by the statement (PostgreSQL) or transaction
(SQLite) of a change that the run's compare-and-set let through, so a row never names a
missing run. They carry no foreign key: its check locks the run's row for every child row
(a WAL record and a trigger each), and deletion is explicit (`app.store.retention`, which
deletes a run's rows of every table in RUN_ROWS).
"""

from __future__ import annotations

import sqlalchemy as sa

from app.core.lifecycle import ApprovalStatus
from app.store.schema.base import GivenJson, Json, Timestamp, metadata, tenant_column

# A run's log (app.core.stored): the messages and model calls it gained, one row per
# transition that added some, written once and never updated; `runs.state` holds the rest.
run_messages = sa.Table(
    "run_messages",
    metadata,
    sa.Column("run_id", sa.String(40)),  # (no foreign key: see RUN_ROWS)
    sa.Column("seq", sa.Integer),
    sa.Column("body", sa.Text, nullable=False),
    sa.PrimaryKeyConstraint("run_id", "seq"),
)

# One row per pending tool call of a suspended run (rows of earlier rounds are kept).
tool_calls = sa.Table(
    "tool_calls",
    metadata,
    sa.Column("run_id", sa.String(40)),  # (no foreign key: see RUN_ROWS)
    sa.Column("round", sa.Integer),  # the run's turn when the calls were requested
    sa.Column("position", sa.Integer),  # order within the round; ids may repeat
    sa.Column("call_id", sa.String(255), nullable=False),
    sa.Column("name", sa.String(255), nullable=False),
    sa.Column("arguments", Json),
    sa.Column("preresolved", sa.Boolean, nullable=False, server_default=sa.false()),
    sa.Column("result", GivenJson),  # (a tool's output as given: the model sees it)
    sa.Column("result_hash", sa.String(64)),
    sa.Column("submitted_at", Timestamp),
    # The tool-call queue (app.toolqueue.sql): the queue whose executors lease the call
    # (null: served by whoever answers the run); its current lease, fenced by a token
    # that each lease draws anew; and until when: for a call never leased, when it was
    # offered (it is leasable once this has passed); the leases it has had.
    sa.Column("queue", sa.String(64)),
    sa.Column("lease_owner", sa.String(100)),
    sa.Column("lease_token", sa.String(32)),
    sa.Column("lease_expires_at", Timestamp),
    sa.Column("attempts", sa.Integer, nullable=False, server_default="0"),
    tenant_column(),  # (its run's: a queue is per tenant)
    # Approvals (app.approvals.rows): a gated call's `approval` (pending, approved,
    # rejected; null: not gated), the arguments executed when a person edited them, when
    # it was gated, its deadline (the run's `approval_timeout`), who decided and when.
    sa.Column("approval", sa.String(16)),
    sa.Column("executed_arguments", Json),
    sa.Column("approval_requested_at", Timestamp),
    sa.Column("approval_due_at", Timestamp),
    sa.Column("decided_by", sa.String(100)),
    sa.Column("decided_at", Timestamp),
    # An agent tool's call (app.agents): the child run whose outcome answers it (no
    # executor is handed it; only its child's end writes its result).
    sa.Column("child_run_id", sa.String(40)),
    sa.PrimaryKeyConstraint("run_id", "round", "position"),
)
# Pending approvals: a tenant's inbox, newest first, and the timeout sweep's deadlines.
AWAITING = sa.text(f"approval = '{ApprovalStatus.PENDING.value}'")
sa.Index(
    "ix_tool_calls_awaiting",
    tool_calls.c.tenant_id,
    tool_calls.c.approval_requested_at,
    postgresql_where=AWAITING,
    sqlite_where=AWAITING,
)
sa.Index(
    "ix_tool_calls_approval_due",
    tool_calls.c.approval_due_at,
    postgresql_where=AWAITING,
    sqlite_where=AWAITING,
)
# The calls an executor may lease, in the order they become leasable: unanswered calls of
# a queue (a cancelled or expired run's calls leave the queue in its own statement).
LEASABLE = sa.text("queue IS NOT NULL AND result_hash IS NULL")
sa.Index(
    "ix_tool_calls_leasable",
    tool_calls.c.tenant_id,
    tool_calls.c.queue,
    tool_calls.c.lease_expires_at,
    postgresql_where=LEASABLE,
    sqlite_where=LEASABLE,
)

# Agent tools' calls still open (app.agents): the sweep that answers a waiting parent
# whose child ended reads them (a crash between the child's end and its answer).
CHILD_OPEN = sa.text("child_run_id IS NOT NULL AND result_hash IS NULL")
sa.Index(
    "ix_tool_calls_child_open",
    tool_calls.c.child_run_id,
    postgresql_where=CHILD_OPEN,
    sqlite_where=CHILD_OPEN,
)

# The append-only event log; `seq` counts per run.
run_events = sa.Table(
    "run_events",
    metadata,
    sa.Column("run_id", sa.String(40)),  # (no foreign key: see RUN_ROWS)
    sa.Column("seq", sa.Integer),
    sa.Column("type", sa.String(60), nullable=False),
    sa.Column("data", Json, nullable=False),
    sa.Column("actor", sa.String(100)),
    sa.Column("created_at", Timestamp, nullable=False),
    sa.PrimaryKeyConstraint("run_id", "seq"),
)

# Runs whose live event stream an API process is serving (one row per run and process,
# kept alive while it streams). A NOTIFY makes every notifying commit of the cluster wait
# for the one before it, so event appends notify only for runs someone is watching.
run_watchers = sa.Table(
    "run_watchers",
    metadata,
    sa.Column("run_id", sa.String(40), nullable=False),
    sa.Column("watcher", sa.String(100), nullable=False),
    sa.Column("expires_at", Timestamp, nullable=False),
    sa.PrimaryKeyConstraint("run_id", "watcher"),
)

# Secrets every process must share, e.g. the key callback tokens are derived from.
service_secrets = sa.Table(
    "service_secrets",
    metadata,
    sa.Column("name", sa.String(100), primary_key=True),
    sa.Column("value", sa.Text, nullable=False),
)

# The webhook outbox: written in the same transaction as the state change it announces,
# delivered (and retried) by the workers. `webhook_id` is stable across retries.
webhook_outbox = sa.Table(
    "webhook_outbox",
    metadata,
    sa.Column("id", sa.BigInteger().with_variant(sa.Integer, "sqlite"), primary_key=True),
    sa.Column(
        "run_id",
        sa.String(40),
        nullable=False,  # (no foreign key: see RUN_ROWS)
    ),
    sa.Column("event_seq", sa.Integer, nullable=False),
    sa.Column("event_type", sa.String(60), nullable=False),
    sa.Column("webhook_id", sa.String(100), nullable=False),
    sa.Column("url", sa.Text, nullable=False),
    sa.Column("payload", Json, nullable=False),
    sa.Column("status", sa.String(20), nullable=False),  # pending | delivered | failed
    sa.Column("attempts", sa.Integer, nullable=False, server_default="0"),
    sa.Column("next_attempt_at", Timestamp, nullable=False),
    sa.Column("last_status", sa.Integer),
    sa.Column("last_error", sa.Text),
    sa.Column("last_latency_ms", sa.Float),
    sa.Column("created_at", Timestamp, nullable=False),
    sa.Column("delivered_at", Timestamp),
    sa.UniqueConstraint("webhook_id"),
)
sa.Index("ix_webhook_outbox_due", webhook_outbox.c.status, webhook_outbox.c.next_attempt_at)
sa.Index("ix_webhook_outbox_run", webhook_outbox.c.run_id)

# Every delivery attempt: status, latency, error.
webhook_attempts = sa.Table(
    "webhook_attempts",
    metadata,
    sa.Column("id", sa.BigInteger().with_variant(sa.Integer, "sqlite"), primary_key=True),
    sa.Column(
        "outbox_id",
        sa.BigInteger().with_variant(sa.Integer, "sqlite"),
        sa.ForeignKey("webhook_outbox.id", ondelete="CASCADE"),
        nullable=False,
    ),
    sa.Column("attempt", sa.Integer, nullable=False),
    sa.Column("status_code", sa.Integer),
    sa.Column("error", sa.Text),
    sa.Column("latency_ms", sa.Float, nullable=False),
    sa.Column("worker", sa.String(100)),
    sa.Column("created_at", Timestamp, nullable=False),
)
sa.Index("ix_webhook_attempts_outbox", webhook_attempts.c.outbox_id)
