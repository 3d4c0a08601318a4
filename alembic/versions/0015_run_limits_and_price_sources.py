"""run budgets and the price source of each ledger row

Revision ID: 0015
Revises: 0014
Create Date: 2027-01-10 10:00:00

`runs.limits`: a run's budget (`max_total_tokens`, `max_cost_usd`, `max_model_calls`,
`max_duration_seconds`), null for the runs stored before (they have none), raised by
`POST /v1/runs/{id}/limits`. `model_calls.price_source`: where a ledger row's `cost_usd`
came from (`config`, `genai-prices@<version>`), null for earlier rows and unpriced calls.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

from alembic import op

revision: str = "0015"
down_revision: str | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


def upgrade() -> None:
    # (Nullable columns: added in place on both databases, no table rebuilt.)
    op.add_column("runs", sa.Column("limits", JSON, nullable=True))
    op.add_column("model_calls", sa.Column("price_source", sa.String(length=100), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("model_calls") as batch:
        batch.drop_column("price_source")
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("limits")
