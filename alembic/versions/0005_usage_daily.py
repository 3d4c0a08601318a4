"""usage_daily: usage totals that outlive the runs retention deletes

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-30 13:40:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0005'
down_revision: str | None = '0004'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        'usage_daily',
        sa.Column('day', sa.Date(), nullable=False),
        sa.Column('provider', sa.String(length=40), nullable=False),
        sa.Column('model', sa.String(length=200), nullable=False),
        sa.Column('run_status', sa.String(length=20), nullable=False),
        sa.Column('calls', sa.BigInteger(), nullable=False),
        sa.Column('failed_calls', sa.BigInteger(), nullable=False),
        sa.Column('input_tokens', sa.BigInteger(), nullable=False),
        sa.Column('output_tokens', sa.BigInteger(), nullable=False),
        sa.Column('cached_input_tokens', sa.BigInteger(), nullable=False),
        sa.Column('reasoning_tokens', sa.BigInteger(), nullable=False),
        sa.Column('total_tokens', sa.BigInteger(), nullable=False),
        sa.Column('cost_usd', sa.Float(), nullable=True),
        sa.PrimaryKeyConstraint('day', 'provider', 'model', 'run_status', name=op.f('pk_usage_daily')),
    )


def downgrade() -> None:
    op.drop_table('usage_daily')
