"""the creation index moves from runs to run_configs (written once)

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-30 21:00:00

Run lists are ordered by creation, newest or oldest first. Their index was on `runs`,
where every transition of a run (an update that cannot be HOT: it changes an indexed
status or lease column) added an entry to it: six per lifecycle. `run_configs`, written
once per run, now holds the run's creation time too, and the index. `runs.created_at`
stays (a run's record reads it from there).
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("run_configs") as batch:
        batch.add_column(sa.Column("created_at", sa.DateTime(timezone=True), nullable=True))
    # (A configuration whose run is gone, which retention never leaves, takes the time of
    # the migration rather than failing it.)
    op.execute(
        "UPDATE run_configs SET created_at = COALESCE("
        "(SELECT runs.created_at FROM runs WHERE runs.id = run_configs.run_id),"
        " CURRENT_TIMESTAMP)"
    )
    with op.batch_alter_table("run_configs") as batch:
        batch.alter_column("created_at", existing_type=sa.DateTime(timezone=True), nullable=False)
    op.create_index(
        "ix_run_configs_created", "run_configs", ["created_at", "run_id"], unique=False
    )
    op.drop_index("ix_runs_created", table_name="runs")


def downgrade() -> None:
    op.create_index("ix_runs_created", "runs", ["created_at", "id"], unique=False)
    op.drop_index("ix_run_configs_created", table_name="run_configs")
    with op.batch_alter_table("run_configs") as batch:
        batch.drop_column("created_at")
