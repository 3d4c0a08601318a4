"""run priority and fair share: the claim takes the higher priority first, fair keys in turn

Revision ID: 0017
Revises: 0016
Create Date: 2027-01-12 10:00:00

`runs.priority` (-100..100, 0 for the runs stored before), `runs.fair_key` (whose turn a
run takes: the tenant, or the tenant and the key `AGENTRUN_FAIR_SHARE_KEY` names) and
`runs.fair_rank` (its start-time fair queuing rank, set at enqueue; 0 for the runs
stored before, so they go first). The claim index is rebuilt in the new claim order.
`fair_ranks`: each fair key's last rank at a priority, moved on by each create.
"""

from collections.abc import Sequence

import sqlalchemy as sa

from alembic import op

revision: str = "0017"
down_revision: str | None = "0016"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

QUEUED = sa.text("status = 'queued'")


def upgrade() -> None:
    # (NOT NULL with a constant default: added in place on both databases.)
    op.add_column("runs", sa.Column("priority", sa.Integer, nullable=False, server_default="0"))
    op.add_column(
        "runs", sa.Column("fair_key", sa.String(length=300), nullable=False, server_default="")
    )
    op.add_column(
        "runs", sa.Column("fair_rank", sa.BigInteger, nullable=False, server_default="0")
    )
    op.drop_index("ix_runs_claim", table_name="runs")
    op.create_index(
        "ix_runs_claim",
        "runs",
        [sa.text("priority DESC"), "fair_rank", "available_at", "id"],
        unique=False,
        postgresql_where=QUEUED,
        sqlite_where=QUEUED,
    )
    op.create_table(
        "fair_ranks",
        sa.Column("fair_key", sa.String(length=300), nullable=False),
        sa.Column("priority", sa.Integer(), nullable=False),
        sa.Column("rank", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("fair_key", "priority", name=op.f("pk_fair_ranks")),
    )


def downgrade() -> None:
    op.drop_table("fair_ranks")
    op.drop_index("ix_runs_claim", table_name="runs")
    op.create_index(
        "ix_runs_claim",
        "runs",
        ["available_at", "id"],
        unique=False,
        postgresql_where=QUEUED,
        sqlite_where=QUEUED,
    )
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("fair_rank")
        batch.drop_column("fair_key")
        batch.drop_column("priority")
