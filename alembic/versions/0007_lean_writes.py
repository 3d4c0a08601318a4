"""lean writes: partial indexes on runs, run_events keyed by (run_id, seq), run_configs

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-30 17:10:00

A transition that is not a HOT update adds an entry to every index of `runs` whose
predicate its new row version matches. The lease and expiry indexes now hold only running
and suspended runs, and the two unique keys only rows that have one (NULLs were indexed
too). `run_events` loses its surrogate id: (run_id, seq) was unique already and is how
every reader finds events, so each event costs one index entry instead of two. A run's
configuration and metadata, written once, move to `run_configs` (every update of a run
writes its whole row to the WAL again; they were most of it). The tables of a run's rows
lose their foreign key to `runs` (app/store/schema.py says why).
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = '0007'
down_revision: str | None = '0006'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON = sa.JSON().with_variant(postgresql.JSONB(), 'postgresql')
RUNNING = sa.text("status = 'running'")
SUSPENDED = sa.text("status = 'requires_action'")


def _partial(name: str, column: str, where: sa.TextClause, unique: bool = False) -> None:
    op.create_index(
        name, 'runs', [column], unique=unique, postgresql_where=where, sqlite_where=where
    )


#: (table, foreign key to runs) dropped: see app/store/schema.py.
CHILDREN = (
    ('run_events', 'fk_run_events_run_id_runs'),
    ('run_messages', 'fk_run_messages_run_id_runs'),
    ('tool_calls', 'fk_tool_calls_run_id_runs'),
    ('model_calls', 'fk_model_calls_run_id_runs'),
    ('webhook_outbox', 'fk_webhook_outbox_run_id_runs'),
)


def upgrade() -> None:
    for table, fk in CHILDREN:
        with op.batch_alter_table(table) as batch:
            batch.drop_constraint(fk, type_='foreignkey')
    op.drop_index('ix_runs_lease', table_name='runs')
    op.drop_index('ix_runs_expiry', table_name='runs')
    _partial('ix_runs_lease', 'lease_expires_at', RUNNING)
    _partial('ix_runs_expiry', 'expires_at', SUSPENDED)
    with op.batch_alter_table('runs') as batch:
        batch.drop_constraint('uq_runs_idempotency_key', type_='unique')
        batch.drop_constraint('uq_runs_callback_token_hash', type_='unique')
    _partial(
        'uq_runs_idempotency_key', 'idempotency_key', sa.text('idempotency_key IS NOT NULL'), True
    )
    _partial(
        'uq_runs_callback_token_hash',
        'callback_token_hash',
        sa.text('callback_token_hash IS NOT NULL'),
        True,
    )
    op.create_table(
        'run_configs',
        sa.Column('run_id', sa.String(length=40), nullable=False),
        sa.Column('config', JSON, nullable=False),
        sa.Column('metadata', JSON, nullable=False),
        sa.PrimaryKeyConstraint('run_id', name=op.f('pk_run_configs')),
    )
    op.execute(
        "INSERT INTO run_configs (run_id, config, metadata) SELECT id, config, metadata FROM runs"
    )
    with op.batch_alter_table('runs') as batch:
        batch.drop_column('config')
        batch.drop_column('metadata')
    with op.batch_alter_table('run_events') as batch:
        batch.drop_constraint('uq_run_events_run_id_seq', type_='unique')
        batch.drop_constraint('pk_run_events', type_='primary')
        batch.drop_column('id')
        batch.create_primary_key('pk_run_events', ['run_id', 'seq'])


def downgrade() -> None:
    postgres = op.get_bind().dialect.name == 'postgresql'
    with op.batch_alter_table('runs') as batch:
        batch.add_column(sa.Column('config', JSON, nullable=True))
        batch.add_column(sa.Column('metadata', JSON, nullable=True))
    op.execute(
        "UPDATE runs SET config = (SELECT config FROM run_configs WHERE run_id = runs.id), "
        "metadata = (SELECT metadata FROM run_configs WHERE run_id = runs.id)"
    )
    with op.batch_alter_table('runs') as batch:
        batch.alter_column('config', nullable=False, existing_type=JSON)
        batch.alter_column('metadata', nullable=False, existing_type=JSON)
    op.drop_table('run_configs')
    if postgres:
        op.execute("ALTER TABLE run_events DROP CONSTRAINT pk_run_events")
        op.execute("ALTER TABLE run_events ADD COLUMN id BIGSERIAL")
        op.execute("ALTER TABLE run_events ADD CONSTRAINT pk_run_events PRIMARY KEY (id)")
        op.execute(
            "ALTER TABLE run_events ADD CONSTRAINT uq_run_events_run_id_seq UNIQUE (run_id, seq)"
        )
    else:  # SQLite: the table as 0001 made it, rows copied in order
        op.execute(
            "CREATE TABLE run_events_0006 (id INTEGER NOT NULL, run_id VARCHAR(40) NOT NULL, "
            "seq INTEGER NOT NULL, type VARCHAR(60) NOT NULL, data JSON NOT NULL, "
            "actor VARCHAR(100), created_at DATETIME NOT NULL, "
            "CONSTRAINT pk_run_events PRIMARY KEY (id), "
            "CONSTRAINT uq_run_events_run_id_seq UNIQUE (run_id, seq))"
        )
        op.execute(
            "INSERT INTO run_events_0006 (run_id, seq, type, data, actor, created_at) "
            "SELECT run_id, seq, type, data, actor, created_at FROM run_events "
            "ORDER BY run_id, seq"
        )
        op.execute("DROP TABLE run_events")
        op.execute("ALTER TABLE run_events_0006 RENAME TO run_events")
    op.drop_index('uq_runs_callback_token_hash', table_name='runs')
    op.drop_index('uq_runs_idempotency_key', table_name='runs')
    with op.batch_alter_table('runs') as batch:
        batch.create_unique_constraint('uq_runs_idempotency_key', ['idempotency_key'])
        batch.create_unique_constraint('uq_runs_callback_token_hash', ['callback_token_hash'])
    op.drop_index('ix_runs_expiry', table_name='runs')
    op.drop_index('ix_runs_lease', table_name='runs')
    op.create_index('ix_runs_lease', 'runs', ['status', 'lease_expires_at'])
    op.create_index('ix_runs_expiry', 'runs', ['status', 'expires_at'])
    for table, fk in CHILDREN:
        with op.batch_alter_table(table) as batch:
            batch.create_foreign_key(fk, 'runs', ['run_id'], ['id'], ondelete='CASCADE')
