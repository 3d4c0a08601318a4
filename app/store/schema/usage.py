"""The usage ledger and the rollups the fold keeps (`app.store.fold`)."""

from __future__ import annotations

import sqlalchemy as sa

from app.store.schema.base import Timestamp, metadata, tenant_column

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
    # A failed call's HTTP status, when the provider answered one (429: throttled).
    sa.Column("http_status", sa.SmallInteger),
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
# The usage of folded ledger rows, per UTC hour of the call, provider, model, the status
# of its run when the run was folded (it had finished) and the name of the agent it
# started from ('' for none, and for rows folded before revision 0025).
usage_hourly = sa.Table(
    "usage_hourly",
    metadata,
    sa.Column("tenant_id", sa.String(64), nullable=False),
    sa.Column("hour", Timestamp, nullable=False),
    sa.Column("provider", sa.String(40), nullable=False),
    sa.Column("model", sa.String(200), nullable=False),
    sa.Column("run_status", sa.String(20), nullable=False),
    sa.Column("agent", sa.String(100), nullable=False, server_default=""),
    sa.Column("calls", sa.BigInteger, nullable=False),
    sa.Column("failed_calls", sa.BigInteger, nullable=False),
    # Of the failed calls, those the provider refused with a 429 (since revision 0025).
    sa.Column("throttled_calls", sa.BigInteger, nullable=False, server_default="0"),
    sa.Column("input_tokens", sa.BigInteger, nullable=False),
    sa.Column("output_tokens", sa.BigInteger, nullable=False),
    sa.Column("cached_input_tokens", sa.BigInteger, nullable=False),
    sa.Column("reasoning_tokens", sa.BigInteger, nullable=False),
    sa.Column("total_tokens", sa.BigInteger, nullable=False),
    sa.Column("cost_usd", sa.Float),
    sa.PrimaryKeyConstraint("tenant_id", "hour", "provider", "model", "run_status", "agent"),
)

# The latency of folded answered calls (outcome ok), per UTC hour, provider and model, as
# a histogram: `calls` answered within the latency bucket `bucket`
# (app.store.latency: eight buckets per doubling), so percentiles over any window are a
# few rows per hour whatever is kept. Since revision 0025.
latency_hourly = sa.Table(
    "latency_hourly",
    metadata,
    sa.Column("tenant_id", sa.String(64), nullable=False),
    sa.Column("hour", Timestamp, nullable=False),
    sa.Column("provider", sa.String(40), nullable=False),
    sa.Column("model", sa.String(200), nullable=False),
    sa.Column("bucket", sa.SmallInteger, nullable=False),
    sa.Column("calls", sa.BigInteger, nullable=False),
    sa.PrimaryKeyConstraint("tenant_id", "hour", "provider", "model", "bucket"),
)

# What was waiting, per tenant and UTC minute, sampled by the workers (the first to sample
# a minute writes it): the overview's queue depth and suspended ages over time. Kept a
# week (app.store.samples); a tenant with nothing waiting has no row that minute.
gauge_samples = sa.Table(
    "gauge_samples",
    metadata,
    sa.Column("tenant_id", sa.String(64), nullable=False),
    sa.Column("minute", Timestamp, nullable=False),
    sa.Column("queued_runs", sa.Integer, nullable=False),
    sa.Column("running_runs", sa.Integer, nullable=False),
    sa.Column("suspended_runs", sa.Integer, nullable=False),
    # The longest a suspended run had waited, and the sum of their waits (seconds).
    sa.Column("oldest_suspended_s", sa.Float),
    sa.Column("suspended_wait_s", sa.Float, nullable=False),
    sa.PrimaryKeyConstraint("tenant_id", "minute"),
)
sa.Index("ix_gauge_samples_minute", gauge_samples.c.minute)

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
