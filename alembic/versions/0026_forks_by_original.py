"""a run's forks, found by the run they were forked from

Revision ID: 0026
Revises: 0025
Create Date: 2026-12-05 19:50:00

`run_configs.forked_from_run_id`: the run a fork was made from (its configuration's
`forked_from.run_id` says the same for the API), indexed only where set, for
`GET /v1/runs/{id}/forks`. The forks made before this revision get it from their
configuration; every other run's is null.
"""

from collections.abc import Sequence

import sqlalchemy as sa

from alembic import op

revision: str = "0026"
down_revision: str | None = "0025"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

FORKED = sa.text("forked_from_run_id IS NOT NULL")


def upgrade() -> None:
    with op.batch_alter_table("run_configs") as batch:
        batch.add_column(sa.Column("forked_from_run_id", sa.String(40)))
    if op.get_bind().dialect.name == "postgresql":
        op.execute(
            "UPDATE run_configs SET forked_from_run_id = config->'forked_from'->>'run_id' "
            "WHERE config ? 'forked_from'"
        )
    else:
        op.execute(
            "UPDATE run_configs SET forked_from_run_id = "
            "json_extract(config, '$.forked_from.run_id') "
            "WHERE json_extract(config, '$.forked_from.run_id') IS NOT NULL"
        )
    op.create_index(
        "ix_run_configs_forked",
        "run_configs",
        ["forked_from_run_id", "created_at"],
        postgresql_where=FORKED,
        sqlite_where=FORKED,
    )


def downgrade() -> None:
    op.drop_index("ix_run_configs_forked", "run_configs")
    with op.batch_alter_table("run_configs") as batch:
        batch.drop_column("forked_from_run_id")
