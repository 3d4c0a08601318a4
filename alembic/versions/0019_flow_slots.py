"""concurrency slots of the shared limits

Revision ID: 0019
Revises: 0018
Create Date: 2027-01-21 10:00:00

`flow_slots`: one row per model call in flight on a limit key with a `max_concurrent`
(app.limits.slots_sql), freed when the call ends or, for a worker that died, at `expires_at`.
`flow_waiters`: the runs a full key sent back to the queue; a released slot makes the
oldest of them due. `flow_limits.max_concurrent`: the key's limit, set as a call takes a
slot, so one statement checks every key and takes its slots.
"""

from collections.abc import Sequence

import sqlalchemy as sa

from alembic import op

revision: str = "0019"
down_revision: str | None = "0018"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("flow_limits", sa.Column("max_concurrent", sa.Integer(), nullable=True))
    op.create_table(
        "flow_slots",
        sa.Column("key", sa.String(length=300), nullable=False),
        sa.Column("holder", sa.String(length=80), nullable=False),
        sa.Column("expires_at", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("key", "holder", name=op.f("pk_flow_slots")),
    )
    op.create_table(
        "flow_waiters",
        sa.Column("key", sa.String(length=300), nullable=False),
        sa.Column("run_id", sa.String(length=40), nullable=False),
        sa.Column("since", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("key", "run_id", name=op.f("pk_flow_waiters")),
    )


def downgrade() -> None:
    op.drop_table("flow_waiters")
    op.drop_table("flow_slots")
    with op.batch_alter_table("flow_limits") as batch:
        batch.drop_column("max_concurrent")
