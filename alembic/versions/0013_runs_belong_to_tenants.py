"""every run and everything of a run belongs to a tenant

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-01 23:30:00

`tenant_id` on runs, their configurations (the creation index of lists is per tenant),
their tool calls (a queue is per tenant) and their usage-ledger rows; in the keys of the
rollups (`usage_hourly`, `run_counts`, `run_endings`) and of the idempotency index (a key
is unique per tenant); first in the indexes that serve a tenant's lists and its queue.
Everything stored before lands in the `default` tenant (the columns' server default), so
runs queued, suspended or partly answered at the upgrade carry on as they were.
"""

import warnings
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa

from alembic import op

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

DEFAULT = "default"
WAITING = sa.text("status IN ('queued', 'requires_action')")
ENDED = sa.text("status IN ('cancelled', 'completed', 'expired', 'failed')")
HAS_KEY = sa.text("idempotency_key IS NOT NULL")
LEASABLE = sa.text("queue IS NOT NULL AND result_hash IS NULL")

#: The rows of a run, with the run: the tenant column and its server default.
OWNED = ("runs", "run_configs", "tool_calls", "model_calls")
#: Rollup table -> its primary key's columns after the tenant, and its counters.
ROLLUPS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "usage_hourly": (
        ("hour", "provider", "model", "run_status"),
        (
            "calls",
            "failed_calls",
            "input_tokens",
            "output_tokens",
            "cached_input_tokens",
            "reasoning_tokens",
            "total_tokens",
            "cost_usd",
        ),
    ),
    "run_counts": (("status",), ("runs",)),
    "run_endings": (("minute", "status"), ("runs",)),
}


def _tenant(default: bool) -> sa.Column[Any]:
    return sa.Column(
        "tenant_id",
        sa.String(length=64),
        nullable=False,
        server_default=DEFAULT if default else None,
    )


def _indexes(tenant: bool) -> None:
    """The indexes that serve lists, the idempotency lookup and the queue: with the
    tenant in front (`tenant`), or as before 0013."""
    lead = ["tenant_id"] if tenant else []
    for name, where in (("ix_runs_waiting", WAITING), ("ix_runs_ended", ENDED)):
        op.create_index(
            name,
            "runs",
            [*lead, "status", "created_at", "id"],
            postgresql_where=where,
            sqlite_where=where,
        )
    op.create_index(
        "uq_runs_idempotency_key",
        "runs",
        [*lead, "idempotency_key"],
        unique=True,
        postgresql_where=HAS_KEY,
        sqlite_where=HAS_KEY,
    )
    op.create_index("ix_run_configs_created", "run_configs", [*lead, "created_at", "run_id"])
    op.create_index(
        "ix_tool_calls_leasable",
        "tool_calls",
        [*lead, "queue", "lease_expires_at"],
        postgresql_where=LEASABLE,
        sqlite_where=LEASABLE,
    )


def _drop_indexes() -> None:
    op.drop_index("ix_runs_waiting", table_name="runs")
    op.drop_index("ix_runs_ended", table_name="runs")
    op.drop_index("uq_runs_idempotency_key", table_name="runs")
    op.drop_index("ix_run_configs_created", table_name="run_configs")
    op.drop_index("ix_tool_calls_leasable", table_name="tool_calls")


def _primary_key(table: str, columns: list[str]) -> None:
    """Replace `table`'s primary key (SQLite: by recreating the table)."""
    postgres = op.get_bind().dialect.name == "postgresql"
    with warnings.catch_warnings():
        # (SQLite: the copy is reflected with the old key, then given the new one.)
        warnings.simplefilter("ignore", sa.exc.SAWarning)
        with op.batch_alter_table(table, recreate="never" if postgres else "always") as batch:
            if postgres:
                batch.drop_constraint(f"pk_{table}", type_="primary")
            batch.create_primary_key(f"pk_{table}", columns)


def upgrade() -> None:
    _drop_indexes()
    for table in OWNED:
        op.add_column(table, _tenant(default=True))
    _indexes(tenant=True)
    for table, (key, _) in ROLLUPS.items():
        op.add_column(table, _tenant(default=True))  # (the rows so far: the default's)
        with op.batch_alter_table(table) as batch:
            batch.alter_column("tenant_id", server_default=None)
        _primary_key(table, ["tenant_id", *key])


def downgrade() -> None:
    """Every tenant's rows become the deployment's again: the rollups' rows of one key
    are summed across tenants; an idempotency key two tenants used keeps the oldest run's."""
    bind = op.get_bind()
    for table, (key, counters) in ROLLUPS.items():
        cols = ", ".join(key)
        sums = ", ".join(f"sum({c})" for c in counters)
        rows = bind.execute(sa.text(f"SELECT {cols}, {sums} FROM {table} GROUP BY {cols}")).all()
        bind.execute(sa.text(f"DELETE FROM {table}"))
        _primary_key(table, list(key))
        op.drop_column(table, "tenant_id")
        if rows:
            names = [*key, *counters]
            params = ", ".join(f":{n}" for n in names)
            bind.execute(
                sa.text(f"INSERT INTO {table} ({', '.join(names)}) VALUES ({params})"),
                [dict(zip(names, row, strict=True)) for row in rows],
            )
    _drop_indexes()
    bind.execute(
        sa.text(
            "UPDATE runs SET idempotency_key = NULL WHERE idempotency_key IS NOT NULL AND"
            " EXISTS (SELECT 1 FROM runs older WHERE older.idempotency_key = runs.idempotency_key"
            " AND (older.created_at, older.id) < (runs.created_at, runs.id))"
        )
    )
    for table in OWNED:
        with op.batch_alter_table(table) as batch:
            batch.drop_column("tenant_id")
    _indexes(tenant=False)
