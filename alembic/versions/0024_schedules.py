"""schedules: runs started by the clock

Revision ID: 0024
Revises: 0023
Create Date: 2026-12-04 23:40:00

`schedules`: a tenant's schedules (app.schedules), due ones indexed by when a worker fires
them; `schedule_ticks`: what each tick became, keyed by (schedule, scheduled time), the
key that makes a tick's run exactly one. Nothing existing changes.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0024"
down_revision: str | None = "0023"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

Json = sa.JSON().with_variant(sa.dialects.postgresql.JSONB(), "postgresql")
Timestamp = sa.DateTime(timezone=True)
DUE = sa.text("due_at IS NOT NULL")
BUFFERED = sa.text("buffered_time IS NOT NULL")


def upgrade() -> None:
    op.create_table(
        "schedules",
        sa.Column("id", sa.String(40), nullable=False),
        sa.Column("tenant_id", sa.String(64), nullable=False, server_default="default"),
        sa.Column("key", sa.String(64), nullable=False),
        sa.Column("spec", Json, nullable=False),
        sa.Column("paused", sa.Boolean, nullable=False),
        sa.Column("note", sa.Text),
        sa.Column("next_fire_at", Timestamp),
        sa.Column("due_at", Timestamp),
        sa.Column("buffered_time", Timestamp),
        sa.Column("last_run_id", sa.String(40)),
        sa.Column("version", sa.Integer, nullable=False),
        sa.Column("created_at", Timestamp, nullable=False),
        sa.Column("created_by", sa.String(200)),
        sa.Column("updated_at", Timestamp, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_schedules"),
        sa.UniqueConstraint("tenant_id", "key", name="uq_schedules_key"),
    )
    op.create_index(
        "ix_schedules_due", "schedules", ["due_at"], postgresql_where=DUE, sqlite_where=DUE
    )
    op.create_index(
        "ix_schedules_buffered",
        "schedules",
        ["id"],
        postgresql_where=BUFFERED,
        sqlite_where=BUFFERED,
    )
    op.create_table(
        "schedule_ticks",
        sa.Column("schedule_id", sa.String(40), nullable=False),
        sa.Column("scheduled_time", Timestamp, nullable=False),
        sa.Column("tenant_id", sa.String(64), nullable=False, server_default="default"),
        sa.Column("source", sa.String(16), nullable=False),
        sa.Column("outcome", sa.String(16), nullable=False),
        sa.Column("reason", sa.Text),
        sa.Column("run_id", sa.String(40)),
        sa.Column("count", sa.Integer, nullable=False, server_default="1"),
        sa.Column("last_time", Timestamp),
        sa.Column("recorded_at", Timestamp, nullable=False),
        sa.PrimaryKeyConstraint("schedule_id", "scheduled_time", name="pk_schedule_ticks"),
    )


def downgrade() -> None:
    op.drop_table("schedule_ticks")
    op.drop_index("ix_schedules_buffered", "schedules")
    op.drop_index("ix_schedules_due", "schedules")
    op.drop_table("schedules")
