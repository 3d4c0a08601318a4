"""Tables. Every change here needs an Alembic revision (a test checks there is no drift)."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

from app.core.lifecycle import TERMINAL, ApprovalStatus, RunStatus

metadata = sa.MetaData(
    naming_convention={
        "ix": "ix_%(table_name)s_%(column_0_N_name)s",
        "uq": "uq_%(table_name)s_%(column_0_N_name)s",
        "ck": "ck_%(table_name)s_%(constraint_name)s",
        "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
        "pk": "pk_%(table_name)s",
    }
)

# JSON documents: JSONB on PostgreSQL, JSON text on SQLite.
Json = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")
Timestamp = sa.DateTime(timezone=True)

#: The tenant of every row stored before tenants existed (revision 0013), as
#: `app.service.access.DEFAULT_TENANT` names it.
DEFAULT_TENANT = "default"


def tenant_column() -> sa.Column[str]:
    """The tenant a run's row belongs to (`tenants.id`; no foreign key, as `run_id`)."""
    return sa.Column("tenant_id", sa.String(64), nullable=False, server_default=DEFAULT_TENANT)


runs = sa.Table(
    "runs",
    metadata,
    sa.Column("id", sa.String(40), primary_key=True),
    sa.Column("status", sa.String(20), nullable=False),
    # The run's control document (app.core.stored), its last durable state without its
    # log (`run_messages`); rows written before revision 0006 held the whole run.
    sa.Column("state", sa.Text, nullable=False),
    sa.Column("schema_version", sa.Integer, nullable=False),
    # Fencing token and optimistic lock: every transition is a compare-and-set on it.
    sa.Column("version", sa.Integer, nullable=False, server_default="1"),
    sa.Column("lease_owner", sa.String(100)),
    sa.Column("lease_expires_at", Timestamp),
    sa.Column("attempts", sa.Integer, nullable=False, server_default="0"),
    sa.Column("model_attempts", sa.Integer, nullable=False, server_default="0"),
    sa.Column("model_retry_since", Timestamp),  # first failure of the model call retried
    sa.Column("available_at", Timestamp, nullable=False),
    sa.Column("expires_at", Timestamp),
    sa.Column("idempotency_key", sa.String(255)),
    sa.Column("request_hash", sa.String(64)),
    sa.Column("callback_token_hash", sa.String(64)),
    sa.Column("waiting_reason", Json),
    sa.Column("turn", sa.Integer, nullable=False, server_default="0"),
    sa.Column("max_turns", sa.Integer, nullable=False),
    sa.Column("output", sa.Text),
    sa.Column("error", Json),
    sa.Column("usage", Json),
    sa.Column("last_event_seq", sa.Integer, nullable=False, server_default="0"),
    sa.Column("created_at", Timestamp, nullable=False),
    sa.Column("updated_at", Timestamp, nullable=False),
    # When it last suspended (its latest `run.requires_action` event's time): the
    # dashboard's and /metrics' suspended ages read it beside the status index.
    sa.Column("suspended_at", Timestamp),
    # Whose run it is: every read by id, list, queue and rollup is scoped to it.
    tenant_column(),
    # The run's budget (`max_total_tokens`, `max_cost_usd`, `max_model_calls`,
    # `max_duration_seconds`: app.service.budgets); null: none. Raised by
    # `POST /v1/runs/{id}/limits`, so not part of the configuration written once.
    sa.Column("limits", Json),
    # The run waiting for this one to end (`if_busy: enqueue`, app.service.conversations);
    # the ending write returns it, so a run nobody waits for costs no look.
    sa.Column("awaited_by", sa.String(40)),
    # A shared-limit reservation the run holds (app.store.flow): set by a throttle (the
    # time its reserved call may go), honoured by its next model call, cleared after.
    sa.Column("flow_reserved_at", Timestamp),
    # Claim order (revision 0017): higher `priority` first (-100..100); within one, the
    # lower `fair_rank` (start-time fair queuing: set at enqueue from the run's
    # `fair_key`, app.store.transitions.fair_rank), so fair keys take turns.
    sa.Column("priority", sa.Integer, nullable=False, server_default="0"),
    sa.Column("fair_key", sa.String(300), nullable=False, server_default=""),
    sa.Column("fair_rank", sa.BigInteger, nullable=False, server_default="0"),
)
# The claim's index holds queued runs only, in claim order: a generic plan picks it even
# on an empty table (no sticky seq-scan plan), and other transitions do not write to it.
# `available_at` is in the key so the claim's "due" test is checked on the index entry
# (a run not yet due is stepped over without reading its row).
QUEUED = sa.text(f"status = '{RunStatus.QUEUED.value}'")
sa.Index(
    "ix_runs_claim",
    runs.c.priority.desc(),
    runs.c.fair_rank,
    runs.c.available_at,
    runs.c.id,
    postgresql_where=QUEUED,
    sqlite_where=QUEUED,
)

# A fair key's last rank at a priority (start-time fair queuing, revision 0017), moved on
# by the INSERT of each of its runs, in the same statement: its row lock gives the
# concurrent creates of one key ranks of their own. One row per key and priority used.
fair_ranks = sa.Table(
    "fair_ranks",
    metadata,
    sa.Column("fair_key", sa.String(300), primary_key=True),
    sa.Column("priority", sa.Integer, primary_key=True),
    sa.Column("rank", sa.BigInteger, nullable=False),
)


# The indexes below hold only the rows that need them (partial), so a transition of a
# run writes entries in few of them: every update that is not HOT adds an entry to each
# index whose predicate the new row version matches.
RUNNING = sa.text(f"status = '{RunStatus.RUNNING.value}'")
SUSPENDED = sa.text(f"status = '{RunStatus.REQUIRES_ACTION.value}'")
sa.Index("ix_runs_lease", runs.c.lease_expires_at, postgresql_where=RUNNING, sqlite_where=RUNNING)
sa.Index("ix_runs_expiry", runs.c.expires_at, postgresql_where=SUSPENDED, sqlite_where=SUSPENDED)

# Runs by status in creation order, for lists of one status (either order, keyset; the
# status a literal, so the planner sees the predicate holds) and the retention sweep:
# waiting runs (a transition into queued or suspended adds an entry) and finished runs
# (the finishing transition and the fold add one each). Running runs, which a worker's
# lease bounds, are listed from ix_runs_lease.
WAITING_SQL = f"status IN ('{RunStatus.QUEUED.value}', '{RunStatus.REQUIRES_ACTION.value}')"
#: The finished statuses' values, in order (the literals of ENDED_SQL).
ENDED_VALUES = tuple(sorted(s.value for s in TERMINAL))
ENDED_SQL = "status IN ({})".format(", ".join(f"'{v}'" for v in ENDED_VALUES))
IS_WAITING, IS_ENDED = sa.text(WAITING_SQL), sa.text(ENDED_SQL)
sa.Index(
    "ix_runs_waiting",
    runs.c.tenant_id,
    runs.c.status,
    runs.c.created_at,
    runs.c.id,
    postgresql_where=IS_WAITING,
    sqlite_where=IS_WAITING,
)
sa.Index(
    "ix_runs_ended",
    runs.c.tenant_id,
    runs.c.status,
    runs.c.created_at,
    runs.c.id,
    postgresql_where=IS_ENDED,
    sqlite_where=IS_ENDED,
)
HAS_KEY = runs.c.idempotency_key.is_not(None)
HAS_TOKEN = runs.c.callback_token_hash.is_not(None)
sa.Index(
    "uq_runs_idempotency_key",
    runs.c.tenant_id,
    runs.c.idempotency_key,
    unique=True,
    postgresql_where=HAS_KEY,
    sqlite_where=HAS_KEY,
)
sa.Index(
    "uq_runs_callback_token_hash",
    runs.c.callback_token_hash,
    unique=True,
    postgresql_where=HAS_TOKEN,
    sqlite_where=HAS_TOKEN,
)

# The tables below hold rows of a run, written only by the statement (PostgreSQL) or
# transaction (SQLite) of a change that the run's compare-and-set let through, so a row
# never names a missing run. They carry no foreign key: its check locks the run's row for
# every child row (a WAL record and a trigger each), and deletion is explicit
# (`app.store.retention`, which deletes a run's rows of every table in RUN_ROWS).

# What a run was created with and never changes: its configuration (model, tools,
# policies, webhook, trace context) and the client's metadata. Apart from `runs` because
# every update of a run writes its whole row again (WAL), and these are most of it.
run_configs = sa.Table(
    "run_configs",
    metadata,
    sa.Column("run_id", sa.String(40), primary_key=True),
    sa.Column("config", Json, nullable=False),
    sa.Column("metadata", Json, nullable=False),
    # When the run was created (as `runs.created_at`): the order of run lists. Its index
    # is here, written once, not on `runs`, where every update that is not HOT (all of a
    # run's transitions) added an entry to it.
    sa.Column("created_at", Timestamp, nullable=False),
    tenant_column(),  # (as `runs.tenant_id`: the creation index is per tenant)
)
sa.Index(
    "ix_run_configs_created",
    run_configs.c.tenant_id,
    run_configs.c.created_at,
    run_configs.c.run_id,
)
CREATED = (run_configs.c.created_at, run_configs.c.run_id)


RUN_CREATED = (runs.c.created_at, runs.c.id)


def created_beyond(
    created: Any, run_id: Any, *, ascending: bool, on: tuple[Any, Any] = CREATED
) -> sa.ColumnElement[bool]:
    """Keyset pagination on (created_at, id), served by ix_run_configs_created (queries
    that select from `select_runs()`), or with `on=RUN_CREATED` by the status indexes of
    `runs` (ix_runs_waiting, ix_runs_ended): the runs after the cursor's run in the page
    order. A row comparison, which the index reads as one range from the cursor on (an
    OR of the two columns' conditions was read as two, the first from the start)."""
    row, cursor = sa.tuple_(*on), sa.tuple_(created, run_id)
    return row > cursor if ascending else row < cursor


def newest_first(on: tuple[Any, Any] = CREATED) -> tuple[Any, Any]:
    return on[0].desc(), on[1].desc()


def oldest_first(on: tuple[Any, Any] = CREATED) -> tuple[Any, Any]:
    return on[0].asc(), on[1].asc()


def config_of(run_id: Any) -> Any:
    """A run's configuration, as a scalar subquery (one primary-key lookup)."""
    return sa.select(run_configs.c.config).where(run_configs.c.run_id == run_id).scalar_subquery()


def metadata_of(run_id: Any) -> Any:
    return sa.select(run_configs.c.metadata).where(run_configs.c.run_id == run_id).scalar_subquery()


def select_runs() -> sa.Select[Any]:
    """`runs.*, config, metadata`: a run record's row (`app.store.records.RunRecord`)."""
    return sa.select(*runs.c, run_configs.c.config, run_configs.c.metadata).select_from(
        runs.join(run_configs, run_configs.c.run_id == runs.c.id)
    )


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
    sa.Column("result", Json),
    sa.Column("result_hash", sa.String(64)),
    sa.Column("submitted_at", Timestamp),
    # The tool-call queue (app.store.queues): the queue whose executors lease the call
    # (null: served by whoever answers the run); its current lease, fenced by a token
    # that each lease draws anew; and until when: for a call never leased, when it was
    # offered (it is leasable once this has passed); the leases it has had.
    sa.Column("queue", sa.String(64)),
    sa.Column("lease_owner", sa.String(100)),
    sa.Column("lease_token", sa.String(32)),
    sa.Column("lease_expires_at", Timestamp),
    sa.Column("attempts", sa.Integer, nullable=False, server_default="0"),
    tenant_column(),  # (its run's: a queue is per tenant)
    # Approvals (app.store.approvals): a gated call's `approval` (pending, approved,
    # rejected; null: not gated), the arguments executed when a person edited them, when
    # it was gated, its deadline (the run's `approval_timeout`), who decided and when.
    sa.Column("approval", sa.String(16)),
    sa.Column("executed_arguments", Json),
    sa.Column("approval_requested_at", Timestamp),
    sa.Column("approval_due_at", Timestamp),
    sa.Column("decided_by", sa.String(100)),
    sa.Column("decided_at", Timestamp),
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

# The usage ledger: one row per model call attempt, successful or not.
model_calls = sa.Table(
    "model_calls",
    metadata,
    sa.Column("id", sa.BigInteger().with_variant(sa.Integer, "sqlite"), primary_key=True),
    sa.Column(
        "run_id",
        sa.String(40),
        nullable=False,  # (no foreign key: see RUN_ROWS)
    ),
    sa.Column("turn", sa.Integer, nullable=False),
    sa.Column("provider", sa.String(40), nullable=False),
    sa.Column("model", sa.String(200), nullable=False),
    sa.Column("outcome", sa.String(20), nullable=False),  # ok | error | aborted
    sa.Column("input_tokens", sa.BigInteger, nullable=False, server_default="0"),
    sa.Column("output_tokens", sa.BigInteger, nullable=False, server_default="0"),
    sa.Column("cached_input_tokens", sa.BigInteger, nullable=False, server_default="0"),
    sa.Column("reasoning_tokens", sa.BigInteger, nullable=False, server_default="0"),
    sa.Column("total_tokens", sa.BigInteger, nullable=False, server_default="0"),
    sa.Column("cost_usd", sa.Float),
    # Where `cost_usd`'s price came from: `config` (AGENTRUN_PRICES), `genai-prices@<version>`;
    # null: the model has no price (cost_usd null too).
    sa.Column("price_source", sa.String(100)),
    sa.Column("latency_ms", sa.Float),
    sa.Column("error", sa.Text),
    sa.Column("created_at", Timestamp, nullable=False),
    # In `usage_hourly` (app.store.fold): set in the transaction that adds the row there.
    sa.Column("folded", sa.Boolean, nullable=False, server_default=sa.false()),
    tenant_column(),  # (its run's)
)
sa.Index("ix_model_calls_created", model_calls.c.created_at)
sa.Index("ix_model_calls_run", model_calls.c.run_id)
# Calls not yet in the rollups: of runs that have not finished, or not been folded yet
# (a few per run waiting, whatever is kept: what the usage report adds to the rollups).
LEDGER_UNFOLDED = sa.text("NOT folded")
sa.Index(
    "ix_model_calls_unfolded",
    model_calls.c.created_at,
    postgresql_where=LEDGER_UNFOLDED,
    sqlite_where=LEDGER_UNFOLDED,
)

# The rollups the fold (app.store.fold) keeps, so reports read a few rows per hour or
# status whatever is kept. Never deleted by retention.
#
# The usage of folded ledger rows, per UTC hour of the call, provider, model and the status
# of its run when the run was folded (it had finished).
usage_hourly = sa.Table(
    "usage_hourly",
    metadata,
    sa.Column("tenant_id", sa.String(64), nullable=False),
    sa.Column("hour", Timestamp, nullable=False),
    sa.Column("provider", sa.String(40), nullable=False),
    sa.Column("model", sa.String(200), nullable=False),
    sa.Column("run_status", sa.String(20), nullable=False),
    sa.Column("calls", sa.BigInteger, nullable=False),
    sa.Column("failed_calls", sa.BigInteger, nullable=False),
    sa.Column("input_tokens", sa.BigInteger, nullable=False),
    sa.Column("output_tokens", sa.BigInteger, nullable=False),
    sa.Column("cached_input_tokens", sa.BigInteger, nullable=False),
    sa.Column("reasoning_tokens", sa.BigInteger, nullable=False),
    sa.Column("total_tokens", sa.BigInteger, nullable=False),
    sa.Column("cost_usd", sa.Float),
    sa.PrimaryKeyConstraint("tenant_id", "hour", "provider", "model", "run_status"),
)

# Finished runs whose usage and count the fold (app.store.fold) has not taken into the
# rollups yet, one narrow row each: written by the change that ends the run (`counts`: it
# ended at `ended_at`, its count and its calls fold), or by a ledger write on a run that
# had ended (`counts` false: only the calls fold); the fold deletes the row. So a run's
# own row is never rewritten to mark it folded, and the readers add these few rows to the
# counts in the same snapshot.
unfolded_runs = sa.Table(
    "unfolded_runs",
    metadata,
    sa.Column("run_id", sa.String(40), primary_key=True),
    sa.Column("tenant_id", sa.String(64), nullable=False),
    sa.Column("status", sa.String(20), nullable=False),
    sa.Column("ended_at", Timestamp),
    sa.Column("counts", sa.Boolean, nullable=False),
)

# Stored finished runs per status, of the runs folded (the rest are in `unfolded_runs`).
run_counts = sa.Table(
    "run_counts",
    metadata,
    sa.Column("tenant_id", sa.String(64), primary_key=True),
    sa.Column("status", sa.String(20), primary_key=True),
    sa.Column("runs", sa.BigInteger, nullable=False),
)

# Runs that finished, per UTC minute of their end and status (the dashboard's last hour),
# of folded runs; the fold deletes minutes older than a day.
run_endings = sa.Table(
    "run_endings",
    metadata,
    sa.Column("tenant_id", sa.String(64), nullable=False),
    sa.Column("minute", Timestamp, nullable=False),
    sa.Column("status", sa.String(20), nullable=False),
    sa.Column("runs", sa.BigInteger, nullable=False),
    sa.PrimaryKeyConstraint("tenant_id", "minute", "status"),
)

#: Tables whose rows belong to a run (by `run_id`), deleted with it.
RUN_ROWS = (run_configs, run_events, run_messages, tool_calls, model_calls, webhook_outbox)

# Who may call (app.service.access). A tenant owns runs and everything of them; keys and
# dashboard accounts belong to one tenant each. `default` exists from the migration on.
tenants = sa.Table(
    "tenants",
    metadata,
    sa.Column("id", sa.String(64), primary_key=True),
    sa.Column("name", sa.String(200), nullable=False),
    # The tenant's limits (app.service.tenants.TenantLimits): active runs, tokens and cost
    # per day. Kept here for the budget and flow-control work to enforce.
    sa.Column("limits", Json, nullable=False),
    sa.Column("created_at", Timestamp, nullable=False),
    sa.Column("disabled_at", Timestamp),
)

# API keys: a public lookup id and a hash of the secret (never the secret). A rotated key
# keeps working until `expires_at`; a revoked one never again.
api_keys = sa.Table(
    "api_keys",
    metadata,
    sa.Column("id", sa.String(32), primary_key=True),
    sa.Column("tenant_id", sa.String(64), sa.ForeignKey("tenants.id"), nullable=False),
    sa.Column("role", sa.String(20), nullable=False),
    sa.Column("name", sa.String(100), nullable=False),
    sa.Column("secret_hash", sa.String(128), nullable=False),
    sa.Column("created_at", Timestamp, nullable=False),
    sa.Column("created_by", sa.String(100)),
    sa.Column("expires_at", Timestamp),
    sa.Column("revoked_at", Timestamp),
    sa.Column("rotated_from", sa.String(32)),
)
sa.Index("ix_api_keys_tenant_id", api_keys.c.tenant_id)

# The dashboard's people: one account per person, its password hashed with argon2.
operators = sa.Table(
    "operators",
    metadata,
    sa.Column("id", sa.String(32), primary_key=True),
    sa.Column("tenant_id", sa.String(64), sa.ForeignKey("tenants.id"), nullable=False),
    sa.Column("username", sa.String(100), nullable=False, unique=True),
    sa.Column("role", sa.String(20), nullable=False),
    sa.Column("password_hash", sa.Text, nullable=False),
    sa.Column("created_at", Timestamp, nullable=False),
    sa.Column("disabled_at", Timestamp),
)

# A signed-in person's session: the cookie holds its id's secret, the table its hash, so
# a session can be listed, expired and revoked.
operator_sessions = sa.Table(
    "operator_sessions",
    metadata,
    sa.Column("id", sa.String(64), primary_key=True),
    sa.Column(
        "operator_id",
        sa.String(32),
        sa.ForeignKey("operators.id", ondelete="CASCADE"),
        nullable=False,
    ),
    sa.Column("created_at", Timestamp, nullable=False),
    sa.Column("expires_at", Timestamp, nullable=False),
    sa.Column("revoked_at", Timestamp),
)
sa.Index("ix_operator_sessions_operator_id", operator_sessions.c.operator_id)

# Shared limits (app.store.flow): one row per limit key (`profile:<p>`, `model:<p>/<m>`,
# `tenant:<t>`), a GCRA bucket per kind. Times are Unix seconds (plain arithmetic in both
# dialects). `*_tat`: the theoretical arrival time (the bucket is empty at tat, full at
# tat - 60 s); `*_interval`: the configured seconds per request / token; `slow_*`: the
# slower interval a provider's 429 taught, in force (fading) until `slow_until`.
flow_limits = sa.Table(
    "flow_limits",
    metadata,
    sa.Column("key", sa.String(300), primary_key=True),
    sa.Column("requests_tat", sa.Float, nullable=False),
    sa.Column("tokens_tat", sa.Float, nullable=False),
    sa.Column("request_interval", sa.Float, nullable=False),
    sa.Column("token_interval", sa.Float, nullable=False),
    sa.Column("tokens_reserved", sa.Float, nullable=False),
    sa.Column("slow_request_interval", sa.Float, nullable=False),
    sa.Column("slow_token_interval", sa.Float, nullable=False),
    sa.Column("slow_until", sa.Float, nullable=False),
    sa.Column("provider_429s", sa.BigInteger, nullable=False),
    # (`max_concurrent`: the key's calls in flight at once, app.store.slots; null: none)
    sa.Column("max_concurrent", sa.Integer),
    # (`granted`: the calls the last acquire reserved, a worker's batch: app.store.flow)
    sa.Column("granted", sa.Integer, nullable=False, server_default=sa.text("1")),
)

# Concurrency slots (app.store.slots): one row per model call in flight on a key with a
# `max_concurrent`; `expires_at` (Unix seconds) frees the slot of a worker that died. The
# runs a full key sent back to the queue wait in `flow_waiters` (oldest `since` first).
flow_slots = sa.Table(
    "flow_slots",
    metadata,
    sa.Column("key", sa.String(300), primary_key=True),
    sa.Column("holder", sa.String(80), primary_key=True),
    sa.Column("expires_at", sa.Float, nullable=False),
)
flow_waiters = sa.Table(
    "flow_waiters",
    metadata,
    sa.Column("key", sa.String(300), primary_key=True),
    sa.Column("run_id", sa.String(40), primary_key=True),
    sa.Column("since", sa.Float, nullable=False),
)
