"""shared limits: the flow-control buckets and a run's reservation

Revision ID: 0016
Revises: 0015
Create Date: 2027-01-20 10:00:00

`flow_limits`: one row per limit key (app.limits.rates_sql), GCRA buckets of requests and tokens
per minute and what a provider's 429 taught. `runs.flow_reserved_at`: when the model call a
throttled run reserved may go (honoured by its next call, so it does not reserve twice).
"""

from collections.abc import Sequence

import sqlalchemy as sa

from alembic import op

revision: str = "0016"
down_revision: str | None = "0015"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("runs", sa.Column("flow_reserved_at", sa.DateTime(timezone=True), nullable=True))
    op.create_table(
        "flow_limits",
        sa.Column("key", sa.String(length=300), nullable=False),
        sa.Column("requests_tat", sa.Float(), nullable=False),
        sa.Column("tokens_tat", sa.Float(), nullable=False),
        sa.Column("request_interval", sa.Float(), nullable=False),
        sa.Column("token_interval", sa.Float(), nullable=False),
        sa.Column("tokens_reserved", sa.Float(), nullable=False),
        sa.Column("slow_request_interval", sa.Float(), nullable=False),
        sa.Column("slow_token_interval", sa.Float(), nullable=False),
        sa.Column("slow_until", sa.Float(), nullable=False),
        sa.Column("provider_429s", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("key", name=op.f("pk_flow_limits")),
    )


def downgrade() -> None:
    op.drop_table("flow_limits")
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("flow_reserved_at")
