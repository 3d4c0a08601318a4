"""the claim index holds queued runs only, in claim order

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-30 08:40:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0003'
down_revision: str | None = '0002'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

QUEUED = sa.text("status = 'queued'")


def upgrade() -> None:
    op.drop_index('ix_runs_claim', table_name='runs')
    op.create_index(
        'ix_runs_claim',
        'runs',
        ['available_at', 'id'],
        unique=False,
        postgresql_where=QUEUED,
        sqlite_where=QUEUED,
    )


def downgrade() -> None:
    op.drop_index('ix_runs_claim', table_name='runs')
    op.create_index('ix_runs_claim', 'runs', ['status', 'available_at'], unique=False)
