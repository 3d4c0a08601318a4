"""run_messages: a run's history appended once instead of rewritten with every transition

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-30 16:40:00

Moves every stored run to the split layout (`app.core.stored`): `runs.state` keeps the
control document, the run's messages and model calls become its log's first batch. The
items are moved as they are (no decoding): a batch keeps the schema version of the
document it came from and is upgraded on load. Downgrade joins them back.
"""

from collections.abc import Sequence

import orjson
import sqlalchemy as sa
from alembic import op

from app.core.stored import DEFAULTS, LOG_KEY, split_document

revision: str = '0006'
down_revision: str | None = '0005'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

BATCH = 500

runs = sa.table('runs', sa.column('id', sa.String), sa.column('state', sa.Text))
run_messages = sa.table(
    'run_messages', sa.column('run_id', sa.String), sa.column('seq', sa.Integer),
    sa.column('body', sa.Text),
)


def upgrade() -> None:
    op.create_table(
        'run_messages',
        sa.Column('run_id', sa.String(length=40), nullable=False),
        sa.Column('seq', sa.Integer(), nullable=False),
        sa.Column('body', sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(
            ['run_id'], ['runs.id'], name=op.f('fk_run_messages_run_id_runs'), ondelete='CASCADE'
        ),
        sa.PrimaryKeyConstraint('run_id', 'seq', name=op.f('pk_run_messages')),
    )
    conn = op.get_bind()
    after = ''
    while True:
        rows = conn.execute(
            sa.select(runs.c.id, runs.c.state).where(runs.c.id > after).order_by(runs.c.id)
            .limit(BATCH)
        ).all()
        if not rows:
            return
        for run_id, state in rows:
            control, batch = split_document(state)
            if batch is not None:
                conn.execute(run_messages.insert().values(run_id=run_id, seq=1, body=batch))
            if control != state:
                conn.execute(runs.update().where(runs.c.id == run_id).values(state=control))
        after = rows[-1][0]


def downgrade() -> None:
    """Whole documents again (each at its control document's schema version: the log's
    batches are joined as they are, so runs written by this release stay loadable by the
    previous one only if no batch needs an upgrade it does not know).

    A batch marked `"r": 1` (a compaction's, written by a later release: `app.core.stored`)
    replaces the given history and the run's messages so far with its own `h` and `m`
    (its `c` still appends), as loading a run reads it: the whole document holds the
    conversation the run has now. The originals such a batch replaced (the batches before
    it, its `a`) have no place in a whole document and are dropped with the log."""
    conn = op.get_bind()
    for run_id, state in conn.execute(sa.select(runs.c.id, runs.c.state)).all():
        doc = orjson.loads(state)
        extent = doc.pop(LOG_KEY, None)
        if extent is None:
            continue
        doc = {**DEFAULTS, **doc}
        lists: dict[str, list] = {'h': [], 'm': [], 'c': []}
        bodies = conn.execute(
            sa.select(run_messages.c.body).where(run_messages.c.run_id == run_id)
            .order_by(run_messages.c.seq)
        ).scalars()
        for body in bodies:
            batch = orjson.loads(body)
            for key in lists:
                if key != 'c' and batch.get('r') == 1:  # (a reset: the lists from here)
                    lists[key] = list(batch.get(key, []))
                else:
                    lists[key].extend(batch.get(key, []))
        doc['chat_history'] = lists['h'] if extent['h'] is not None else None
        doc['new_messages'] = lists['m']
        doc['completion_calls'] = lists['c']
        done = (doc.get('state') or {}).get('Done') if isinstance(doc.get('state'), dict) else None
        if isinstance(done, dict):
            for key, short in (('messages', 'm'), ('completion_calls', 'c')):
                if type(done.get(key)) is int:
                    done[key] = lists[short][: done[key]]
        conn.execute(runs.update().where(runs.c.id == run_id).values(state=orjson.dumps(doc).decode()))
    op.drop_table('run_messages')
