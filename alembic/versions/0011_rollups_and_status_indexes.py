"""rollups kept by a fold, and indexes for every view across runs

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-01 17:30:00

A suspension records its time (`runs.suspended_at`, filled in here for runs suspended
at the upgrade from their latest `run.requires_action` event). Reports read rollups
instead of whole tables: `usage_hourly` (usage of folded ledger rows
per hour, provider, model and run status), `run_counts` (finished runs per status) and
`run_endings` (finished runs per minute), which workers keep by folding finished runs
(`runs.counted_as`, `model_calls.folded`). Lists of one status and the retention sweep
read `ix_runs_waiting` and `ix_runs_ended`; the fold's work is `ix_runs_unfolded`,
`ix_runs_recount` and `ix_model_calls_unfolded`.

`usage_daily` (usage of runs retention deleted, per day) moves into `usage_hourly`: a
day's row becomes a row of its first hour (00:00 UTC). Runs stored at the upgrade are not
folded yet: workers fold them in batches (reports are exact meanwhile).
"""

from collections.abc import Sequence
from datetime import UTC, date, datetime, time

import sqlalchemy as sa

from alembic import op

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

WAITING = sa.text("status IN ('queued', 'requires_action')")
ENDED_SQL = "status IN ('cancelled', 'completed', 'expired', 'failed')"
ENDED = sa.text(ENDED_SQL)
UNFOLDED = sa.text(f"{ENDED_SQL} AND counted_as IS NULL")
RECOUNT = sa.text("counted_as IS NOT NULL AND counted_as <> status")
LEDGER_UNFOLDED = sa.text("NOT folded")
COUNTERS = (
    "calls",
    "failed_calls",
    "input_tokens",
    "output_tokens",
    "cached_input_tokens",
    "reasoning_tokens",
    "total_tokens",
)
TOKENS = COUNTERS[2:]


def _usage_columns() -> list[sa.Column]:  # type: ignore[type-arg]
    return [
        sa.Column("provider", sa.String(length=40), nullable=False),
        sa.Column("model", sa.String(length=200), nullable=False),
        sa.Column("run_status", sa.String(length=20), nullable=False),
        *[sa.Column(c, sa.BigInteger(), nullable=False) for c in COUNTERS],
        sa.Column("cost_usd", sa.Float(), nullable=True),
    ]


def upgrade() -> None:
    op.add_column("runs", sa.Column("counted_as", sa.String(length=20), nullable=True))
    op.add_column("runs", sa.Column("suspended_at", sa.DateTime(timezone=True), nullable=True))
    op.execute(
        "UPDATE runs SET suspended_at = (SELECT max(created_at) FROM run_events"
        " WHERE run_events.run_id = runs.id AND run_events.type = 'run.requires_action')"
        " WHERE status = 'requires_action'"
    )
    op.add_column(
        "model_calls",
        sa.Column("folded", sa.Boolean(), server_default=sa.false(), nullable=False),
    )
    for name, where in (("ix_runs_waiting", WAITING), ("ix_runs_ended", ENDED)):
        op.create_index(
            name,
            "runs",
            ["status", "created_at", "id"],
            postgresql_where=where,
            sqlite_where=where,
        )
    op.create_index(
        "ix_runs_unfolded",
        "runs",
        ["status", "updated_at"],
        postgresql_where=UNFOLDED,
        sqlite_where=UNFOLDED,
    )
    op.create_index(
        "ix_runs_recount",
        "runs",
        ["counted_as"],
        postgresql_where=RECOUNT,
        sqlite_where=RECOUNT,
    )
    op.create_index(
        "ix_model_calls_unfolded",
        "model_calls",
        ["created_at"],
        postgresql_where=LEDGER_UNFOLDED,
        sqlite_where=LEDGER_UNFOLDED,
    )
    hourly = op.create_table(
        "usage_hourly",
        sa.Column("hour", sa.DateTime(timezone=True), nullable=False),
        *_usage_columns(),
        sa.PrimaryKeyConstraint(
            "hour", "provider", "model", "run_status", name=op.f("pk_usage_hourly")
        ),
    )
    op.create_table(
        "run_counts",
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("runs", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("status", name=op.f("pk_run_counts")),
    )
    op.create_table(
        "run_endings",
        sa.Column("minute", sa.DateTime(timezone=True), nullable=False),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("runs", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("minute", "status", name=op.f("pk_run_endings")),
    )
    daily = sa.table(
        "usage_daily",
        sa.column("day", sa.Date()),
        *[sa.column(c.name, c.type) for c in _usage_columns()],
    )
    conn = op.get_bind()
    rows = [dict(r._mapping) for r in conn.execute(sa.select(daily))]
    for row in rows:
        row["hour"] = datetime.combine(_as_date(row.pop("day")), time(), UTC)
    if rows:
        conn.execute(hourly.insert(), rows)
    op.drop_table("usage_daily")


def downgrade() -> None:
    """`usage_daily` again, holding what the rollups hold of runs no longer stored: the
    rollups by day, less the folded ledger rows still stored (the previous release reads
    those from the ledger)."""
    daily = op.create_table(
        "usage_daily",
        sa.Column("day", sa.Date(), nullable=False),
        *_usage_columns(),
        sa.PrimaryKeyConstraint(
            "day", "provider", "model", "run_status", name=op.f("pk_usage_daily")
        ),
    )
    conn = op.get_bind()
    hourly = sa.table(
        "usage_hourly",
        sa.column("hour", sa.DateTime(timezone=True)),
        *[sa.column(c.name, c.type) for c in _usage_columns()],
    )
    calls = sa.table(
        "model_calls",
        sa.column("run_id", sa.String()),
        sa.column("created_at", sa.DateTime(timezone=True)),
        sa.column("provider", sa.String()),
        sa.column("model", sa.String()),
        sa.column("outcome", sa.String()),
        sa.column("folded", sa.Boolean()),
        sa.column("cost_usd", sa.Float()),
        *[sa.column(c, sa.BigInteger()) for c in TOKENS],
    )
    runs = sa.table("runs", sa.column("id", sa.String()), sa.column("counted_as", sa.String()))
    totals: dict[tuple[date, str, str, str], dict[str, object]] = {}

    def add(key: tuple[date, str, str, str], values: dict[str, object], sign: int) -> None:
        entry = totals.setdefault(key, {c: 0 for c in COUNTERS} | {"cost_usd": None})
        for c in COUNTERS:
            entry[c] = int(entry[c]) + sign * int(values[c] or 0)  # type: ignore[call-overload]
        if values["cost_usd"] is not None:
            entry["cost_usd"] = float(entry["cost_usd"] or 0.0) + sign * float(values["cost_usd"])  # type: ignore[arg-type]

    for row in conn.execute(sa.select(hourly)):
        m = dict(row._mapping)
        add((_as_datetime(m["hour"]).date(), m["provider"], m["model"], m["run_status"]), m, 1)
    folded = (
        sa.select(calls, runs.c.counted_as)
        .select_from(calls.join(runs, runs.c.id == calls.c.run_id))
        .where(calls.c.folded.is_(True))
    )
    for row in conn.execute(folded):
        m = dict(row._mapping)
        m["calls"], m["failed_calls"] = 1, int(m["outcome"] == "error")
        status = m["counted_as"] or "completed"
        add((_as_datetime(m["created_at"]).date(), m["provider"], m["model"], status), m, -1)
    kept = [
        {"day": k[0], "provider": k[1], "model": k[2], "run_status": k[3], **v}
        for k, v in totals.items()
        if int(v["calls"]) > 0  # type: ignore[call-overload]
    ]
    if kept:
        conn.execute(daily.insert(), kept)
    op.drop_table("run_endings")
    op.drop_table("run_counts")
    op.drop_table("usage_hourly")
    op.drop_index("ix_model_calls_unfolded", table_name="model_calls")
    for name in ("ix_runs_recount", "ix_runs_unfolded", "ix_runs_ended", "ix_runs_waiting"):
        op.drop_index(name, table_name="runs")
    with op.batch_alter_table("model_calls") as batch:
        batch.drop_column("folded")
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("suspended_at")
        batch.drop_column("counted_as")


def _as_date(value: object) -> date:
    return value if isinstance(value, date) else date.fromisoformat(str(value))


def _as_datetime(value: object) -> datetime:
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    assert isinstance(value, datetime)
    return value.astimezone(UTC) if value.tzinfo is not None else value
