"""run_watchers: runs whose live event stream is being served

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-30 10:40:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0004'
down_revision: str | None = '0003'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        'run_watchers',
        sa.Column('run_id', sa.String(length=40), nullable=False),
        sa.Column('watcher', sa.String(length=100), nullable=False),
        sa.Column('expires_at', sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint('run_id', 'watcher', name=op.f('pk_run_watchers')),
    )


def downgrade() -> None:
    op.drop_table('run_watchers')
