"""the overview's rollups: spend by agent, latency, 429s, what waited over time

Revision ID: 0025
Revises: 0024
Create Date: 2026-12-05 11:40:00

`model_calls.http_status`: a failed call's HTTP status (429: throttled). `usage_hourly`
gains the run's agent (in its key; '' for rows folded before, whose agent it did not
record) and `throttled_calls`. `latency_hourly`: answered calls per latency bucket, per
hour, provider and model (folded from now on: calls folded before have no latency there).
`gauge_samples`: queued, running and suspended runs per tenant and minute, sampled by the
workers, kept a week.
"""

import warnings
from collections.abc import Sequence

import sqlalchemy as sa

from alembic import op

revision: str = "0025"
down_revision: str | None = "0024"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

Timestamp = sa.DateTime(timezone=True)
KEY = ["tenant_id", "hour", "provider", "model", "run_status"]


def _primary_key(columns: list[str]) -> None:
    """Replace `usage_hourly`'s primary key (SQLite: by recreating the table)."""
    postgres = op.get_bind().dialect.name == "postgresql"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sa.exc.SAWarning)
        with op.batch_alter_table(
            "usage_hourly", recreate="never" if postgres else "always"
        ) as batch:
            if postgres:
                batch.drop_constraint("pk_usage_hourly", type_="primary")
            batch.create_primary_key("pk_usage_hourly", columns)


def upgrade() -> None:
    op.add_column("model_calls", sa.Column("http_status", sa.SmallInteger(), nullable=True))
    op.add_column(
        "usage_hourly",
        sa.Column("agent", sa.String(length=100), nullable=False, server_default=""),
    )
    op.add_column(
        "usage_hourly",
        sa.Column("throttled_calls", sa.BigInteger(), nullable=False, server_default="0"),
    )
    _primary_key([*KEY, "agent"])
    op.create_table(
        "latency_hourly",
        sa.Column("tenant_id", sa.String(length=64), nullable=False),
        sa.Column("hour", Timestamp, nullable=False),
        sa.Column("provider", sa.String(length=40), nullable=False),
        sa.Column("model", sa.String(length=200), nullable=False),
        sa.Column("bucket", sa.SmallInteger(), nullable=False),
        sa.Column("calls", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint(
            "tenant_id", "hour", "provider", "model", "bucket", name=op.f("pk_latency_hourly")
        ),
    )
    op.create_table(
        "gauge_samples",
        sa.Column("tenant_id", sa.String(length=64), nullable=False),
        sa.Column("minute", Timestamp, nullable=False),
        sa.Column("queued_runs", sa.Integer(), nullable=False),
        sa.Column("running_runs", sa.Integer(), nullable=False),
        sa.Column("suspended_runs", sa.Integer(), nullable=False),
        sa.Column("oldest_suspended_s", sa.Float(), nullable=True),
        sa.Column("suspended_wait_s", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("tenant_id", "minute", name=op.f("pk_gauge_samples")),
    )
    op.create_index("ix_gauge_samples_minute", "gauge_samples", ["minute"], unique=False)


def downgrade() -> None:
    """Rows of one key but for the agent are summed into one (their 429s are dropped)."""
    op.drop_index("ix_gauge_samples_minute", table_name="gauge_samples")
    op.drop_table("gauge_samples")
    op.drop_table("latency_hourly")
    bind = op.get_bind()
    counters = [
        "calls",
        "failed_calls",
        "input_tokens",
        "output_tokens",
        "cached_input_tokens",
        "reasoning_tokens",
        "total_tokens",
    ]
    cols = ", ".join(KEY)
    sums = ", ".join(f"sum({c}) AS {c}" for c in counters)
    rows = bind.execute(
        sa.text(
            f"SELECT {cols}, {sums}, CASE WHEN count(cost_usd) = 0 THEN NULL"
            f" ELSE sum(cost_usd) END AS cost_usd FROM usage_hourly GROUP BY {cols}"
        )
    ).all()
    bind.execute(sa.text("DELETE FROM usage_hourly"))
    _primary_key(KEY)
    with op.batch_alter_table("usage_hourly") as batch:
        batch.drop_column("throttled_calls")
        batch.drop_column("agent")
    if rows:
        names = [*KEY, *counters, "cost_usd"]
        table = sa.table("usage_hourly", *[sa.column(n) for n in names])
        bind.execute(table.insert(), [dict(row._mapping) for row in rows])
    op.drop_column("model_calls", "http_status")
