"""named, versioned agents and trees of runs

Revision ID: 0023
Revises: 0022
Create Date: 2026-12-04 21:00:00

`agents`: a tenant's agents, one row per version (app.agents). `run_configs` gains a
child run's `parent_run_id` and `root_run_id` (null for every run before: each is a root),
indexed only where set; `tool_calls` gains `child_run_id`, the child run that answers an
agent tool's call (its open ones indexed for the sweep that answers a parent whose child
ended). Nothing is rewritten: the new columns are null.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0023"
down_revision: str | None = "0022"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

Json = sa.JSON().with_variant(sa.dialects.postgresql.JSONB(), "postgresql")
Timestamp = sa.DateTime(timezone=True)
IN_TREE = sa.text("parent_run_id IS NOT NULL")
CHILD_OPEN = sa.text("child_run_id IS NOT NULL AND result_hash IS NULL")


def upgrade() -> None:
    op.create_table(
        "agents",
        sa.Column("tenant_id", sa.String(64), nullable=False, server_default="default"),
        sa.Column("name", sa.String(64), nullable=False),
        sa.Column("version", sa.Integer, nullable=False),
        sa.Column("description", sa.Text, nullable=False),
        sa.Column("spec", Json, nullable=False),
        sa.Column("created_at", Timestamp, nullable=False),
        sa.Column("created_by", sa.String(200)),
        sa.Column("deleted_at", Timestamp),
        sa.PrimaryKeyConstraint("tenant_id", "name", "version", name="pk_agents"),
    )
    with op.batch_alter_table("run_configs") as batch:
        batch.add_column(sa.Column("parent_run_id", sa.String(40)))
        batch.add_column(sa.Column("root_run_id", sa.String(40)))
    op.create_index(
        "ix_run_configs_parent",
        "run_configs",
        ["parent_run_id", "created_at"],
        postgresql_where=IN_TREE,
        sqlite_where=IN_TREE,
    )
    op.create_index(
        "ix_run_configs_root",
        "run_configs",
        ["root_run_id", "created_at"],
        postgresql_where=IN_TREE,
        sqlite_where=IN_TREE,
    )
    with op.batch_alter_table("tool_calls") as batch:
        batch.add_column(sa.Column("child_run_id", sa.String(40)))
    op.create_index(
        "ix_tool_calls_child_open",
        "tool_calls",
        ["child_run_id"],
        postgresql_where=CHILD_OPEN,
        sqlite_where=CHILD_OPEN,
    )


def downgrade() -> None:
    op.drop_index("ix_tool_calls_child_open", "tool_calls")
    with op.batch_alter_table("tool_calls") as batch:
        batch.drop_column("child_run_id")
    op.drop_index("ix_run_configs_root", "run_configs")
    op.drop_index("ix_run_configs_parent", "run_configs")
    with op.batch_alter_table("run_configs") as batch:
        batch.drop_column("root_run_id")
        batch.drop_column("parent_run_id")
    op.drop_table("agents")
