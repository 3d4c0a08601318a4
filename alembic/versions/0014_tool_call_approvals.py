"""tool-call approvals: a gated call's approval, its edited arguments, deadline, decider

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-10 10:00:00

A tool (or a run, for its tools) may gate calls behind a person's decision
(app/service/gates.py). A gated call's row records its approval (`pending`, `approved`,
`rejected`; null for every call that is not gated, as all existing rows), the arguments
executed when a person edited them, when it was gated and until when it may wait (the
run's `approval_timeout`), who decided and when. Two partial indexes hold pending
approvals only: a tenant's inbox (newest first) and the timeout sweep's deadlines.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

from alembic import op

revision: str = "0014"
down_revision: str | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

AWAITING = sa.text("approval = 'pending'")
Json = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


def upgrade() -> None:
    with op.batch_alter_table("tool_calls") as batch:
        batch.add_column(sa.Column("approval", sa.String(length=16), nullable=True))
        batch.add_column(sa.Column("executed_arguments", Json, nullable=True))
        batch.add_column(
            sa.Column("approval_requested_at", sa.DateTime(timezone=True), nullable=True)
        )
        batch.add_column(sa.Column("approval_due_at", sa.DateTime(timezone=True), nullable=True))
        batch.add_column(sa.Column("decided_by", sa.String(length=100), nullable=True))
        batch.add_column(sa.Column("decided_at", sa.DateTime(timezone=True), nullable=True))
    op.create_index(
        "ix_tool_calls_awaiting",
        "tool_calls",
        ["tenant_id", "approval_requested_at"],
        postgresql_where=AWAITING,
        sqlite_where=AWAITING,
    )
    op.create_index(
        "ix_tool_calls_approval_due",
        "tool_calls",
        ["approval_due_at"],
        postgresql_where=AWAITING,
        sqlite_where=AWAITING,
    )


def downgrade() -> None:
    op.drop_index("ix_tool_calls_approval_due", table_name="tool_calls")
    op.drop_index("ix_tool_calls_awaiting", table_name="tool_calls")
    with op.batch_alter_table("tool_calls") as batch:
        for column in (
            "decided_at",
            "decided_by",
            "approval_due_at",
            "approval_requested_at",
            "executed_arguments",
            "approval",
        ):
            batch.drop_column(column)
