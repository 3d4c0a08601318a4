"""a worker's batch of permits on a shared limit

Revision ID: 0020
Revises: 0019
Create Date: 2027-01-28 10:00:00

`flow_limits.granted`: how many calls the last acquire of the key reserved (app.limits.rates_sql):
a worker asks for as many as it drew on the key in the last second, and gets them only
while the bucket stays at most half used after them, else one.
"""

from collections.abc import Sequence

import sqlalchemy as sa

from alembic import op

revision: str = "0020"
down_revision: str | None = "0019"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column(
        "flow_limits",
        sa.Column("granted", sa.Integer(), server_default=sa.text("1"), nullable=False),
    )


def downgrade() -> None:
    with op.batch_alter_table("flow_limits") as batch:
        batch.drop_column("granted")
