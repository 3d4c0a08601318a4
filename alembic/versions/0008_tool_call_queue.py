"""tool-call queue: leases on tool_calls, and the partial index of leasable calls

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-02 10:00:00

A run (or one of its tools) may name a queue; its pending calls are then leased by that
queue's executors (app/store/queues.py). Each call row gains its queue, its current lease
(owner, fencing token, expiry) and the number of leases it has had. Only unanswered calls
of a queue are in the index the lease statement reads. Existing rows have no queue.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0008'
down_revision: str | None = '0007'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

LEASABLE = sa.text('queue IS NOT NULL AND result_hash IS NULL')


def upgrade() -> None:
    with op.batch_alter_table('tool_calls') as batch:
        batch.add_column(sa.Column('queue', sa.String(length=64), nullable=True))
        batch.add_column(sa.Column('lease_owner', sa.String(length=100), nullable=True))
        batch.add_column(sa.Column('lease_token', sa.String(length=32), nullable=True))
        batch.add_column(sa.Column('lease_expires_at', sa.DateTime(timezone=True), nullable=True))
        batch.add_column(
            sa.Column('attempts', sa.Integer(), server_default='0', nullable=False)
        )
    op.create_index(
        'ix_tool_calls_leasable',
        'tool_calls',
        ['queue', 'lease_expires_at'],
        postgresql_where=LEASABLE,
        sqlite_where=LEASABLE,
    )


def downgrade() -> None:
    op.drop_index('ix_tool_calls_leasable', table_name='tool_calls')
    with op.batch_alter_table('tool_calls') as batch:
        batch.drop_column('attempts')
        batch.drop_column('lease_expires_at')
        batch.drop_column('lease_token')
        batch.drop_column('lease_owner')
        batch.drop_column('queue')
