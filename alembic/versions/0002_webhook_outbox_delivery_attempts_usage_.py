"""webhook outbox, delivery attempts, usage ledger, retry start

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-30 06:46:48.256782
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = '0002'
down_revision: str | None = '0001'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table('model_calls',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('run_id', sa.String(length=40), nullable=False),
    sa.Column('turn', sa.Integer(), nullable=False),
    sa.Column('provider', sa.String(length=40), nullable=False),
    sa.Column('model', sa.String(length=200), nullable=False),
    sa.Column('outcome', sa.String(length=20), nullable=False),
    sa.Column('input_tokens', sa.BigInteger(), server_default='0', nullable=False),
    sa.Column('output_tokens', sa.BigInteger(), server_default='0', nullable=False),
    sa.Column('cached_input_tokens', sa.BigInteger(), server_default='0', nullable=False),
    sa.Column('reasoning_tokens', sa.BigInteger(), server_default='0', nullable=False),
    sa.Column('total_tokens', sa.BigInteger(), server_default='0', nullable=False),
    sa.Column('cost_usd', sa.Float(), nullable=True),
    sa.Column('latency_ms', sa.Float(), nullable=True),
    sa.Column('error', sa.Text(), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['run_id'], ['runs.id'], name=op.f('fk_model_calls_run_id_runs'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_model_calls'))
    )
    with op.batch_alter_table('model_calls', schema=None) as batch_op:
        batch_op.create_index('ix_model_calls_created', ['created_at'], unique=False)
        batch_op.create_index('ix_model_calls_run', ['run_id'], unique=False)

    op.create_table('webhook_outbox',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('run_id', sa.String(length=40), nullable=False),
    sa.Column('event_seq', sa.Integer(), nullable=False),
    sa.Column('event_type', sa.String(length=60), nullable=False),
    sa.Column('webhook_id', sa.String(length=100), nullable=False),
    sa.Column('url', sa.Text(), nullable=False),
    sa.Column('payload', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.Column('status', sa.String(length=20), nullable=False),
    sa.Column('attempts', sa.Integer(), server_default='0', nullable=False),
    sa.Column('next_attempt_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('last_status', sa.Integer(), nullable=True),
    sa.Column('last_error', sa.Text(), nullable=True),
    sa.Column('last_latency_ms', sa.Float(), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('delivered_at', sa.DateTime(timezone=True), nullable=True),
    sa.ForeignKeyConstraint(['run_id'], ['runs.id'], name=op.f('fk_webhook_outbox_run_id_runs'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_webhook_outbox')),
    sa.UniqueConstraint('webhook_id', name=op.f('uq_webhook_outbox_webhook_id'))
    )
    with op.batch_alter_table('webhook_outbox', schema=None) as batch_op:
        batch_op.create_index('ix_webhook_outbox_due', ['status', 'next_attempt_at'], unique=False)
        batch_op.create_index('ix_webhook_outbox_run', ['run_id'], unique=False)

    op.create_table('webhook_attempts',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('outbox_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('attempt', sa.Integer(), nullable=False),
    sa.Column('status_code', sa.Integer(), nullable=True),
    sa.Column('error', sa.Text(), nullable=True),
    sa.Column('latency_ms', sa.Float(), nullable=False),
    sa.Column('worker', sa.String(length=100), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['outbox_id'], ['webhook_outbox.id'], name=op.f('fk_webhook_attempts_outbox_id_webhook_outbox'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_webhook_attempts'))
    )
    with op.batch_alter_table('webhook_attempts', schema=None) as batch_op:
        batch_op.create_index('ix_webhook_attempts_outbox', ['outbox_id'], unique=False)

    with op.batch_alter_table('runs', schema=None) as batch_op:
        batch_op.add_column(sa.Column('model_retry_since', sa.DateTime(timezone=True), nullable=True))



def downgrade() -> None:
    with op.batch_alter_table('runs', schema=None) as batch_op:
        batch_op.drop_column('model_retry_since')

    with op.batch_alter_table('webhook_attempts', schema=None) as batch_op:
        batch_op.drop_index('ix_webhook_attempts_outbox')

    op.drop_table('webhook_attempts')
    with op.batch_alter_table('webhook_outbox', schema=None) as batch_op:
        batch_op.drop_index('ix_webhook_outbox_run')
        batch_op.drop_index('ix_webhook_outbox_due')

    op.drop_table('webhook_outbox')
    with op.batch_alter_table('model_calls', schema=None) as batch_op:
        batch_op.drop_index('ix_model_calls_run')
        batch_op.drop_index('ix_model_calls_created')

    op.drop_table('model_calls')
