"""Schedules (app.schedules): runs the clock starts, and what each tick became."""

from __future__ import annotations

import sqlalchemy as sa

from app.store.schema.base import Json, Timestamp, metadata, tenant_column

# One row per schedule; `version` moves on with every write (a worker that planned a
# fire from an older row leaves it). `due_at` is when a worker fires `next_fire_at`'s
# tick (it plus the tick's jitter); both are null once the schedule has no more ticks
# (its `end_at` passed) and while it is paused (resuming plans them from then).
schedules = sa.Table(
    "schedules",
    metadata,
    sa.Column("id", sa.String(40), primary_key=True),
    tenant_column(),
    sa.Column("key", sa.String(64), nullable=False),
    sa.Column("spec", Json, nullable=False),  # the schedule's fields as given (its `run` too)
    sa.Column("paused", sa.Boolean, nullable=False),
    sa.Column("note", sa.Text),  # why it was paused
    sa.Column("next_fire_at", Timestamp),  # the next tick's scheduled time (UTC)
    sa.Column("due_at", Timestamp),
    sa.Column("buffered_time", Timestamp),  # buffer_one: the tick waiting for the last run
    sa.Column("last_run_id", sa.String(40)),  # the last run it started (overlap's)
    sa.Column("version", sa.Integer, nullable=False),
    sa.Column("created_at", Timestamp, nullable=False),
    sa.Column("created_by", sa.String(200)),
    sa.Column("updated_at", Timestamp, nullable=False),
    sa.UniqueConstraint("tenant_id", "key", name="uq_schedules_key"),
)
DUE = schedules.c.due_at.is_not(None)
BUFFERED = schedules.c.buffered_time.is_not(None)
sa.Index("ix_schedules_due", schedules.c.due_at, postgresql_where=DUE, sqlite_where=DUE)
sa.Index("ix_schedules_buffered", schedules.c.id, postgresql_where=BUFFERED, sqlite_where=BUFFERED)

# One row per tick a schedule handled, keyed by its scheduled time: the key that makes a
# tick's run exactly one (the run is inserted in the transaction that inserts this row).
# `outcome`: started | skipped | buffered | missed | failed; a range of missed ticks is
# one row (`count`, `last_time`).
schedule_ticks = sa.Table(
    "schedule_ticks",
    metadata,
    sa.Column("schedule_id", sa.String(40), nullable=False),
    sa.Column("scheduled_time", Timestamp, nullable=False),
    tenant_column(),
    sa.Column("source", sa.String(16), nullable=False),  # cron | trigger | backfill
    sa.Column("outcome", sa.String(16), nullable=False),
    sa.Column("reason", sa.Text),
    sa.Column("run_id", sa.String(40)),  # the run started (or the one that was running)
    sa.Column("count", sa.Integer, nullable=False, server_default="1"),
    sa.Column("last_time", Timestamp),
    sa.Column("recorded_at", Timestamp, nullable=False),
    sa.PrimaryKeyConstraint("schedule_id", "scheduled_time", name="pk_schedule_ticks"),
)
