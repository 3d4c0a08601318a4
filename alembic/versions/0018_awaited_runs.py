"""the run that waits for a run of its conversation

Revision ID: 0018
Revises: 0017
Create Date: 2027-01-20 10:00:00

`runs.awaited_by`: the id of the run created with `if_busy: enqueue` that waits for this
one to end (app.service.conversations), set with its `run.continued` event; null for
every other run (and the runs stored before). The write that ends a run returns it, so
only a run that is waited for costs a look for its waiting run.
"""

from collections.abc import Sequence

import sqlalchemy as sa

from alembic import op

revision: str = "0018"
down_revision: str | None = "0017"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # (A nullable column: added in place on both databases, no table rebuilt.)
    op.add_column("runs", sa.Column("awaited_by", sa.String(length=40), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("awaited_by")
