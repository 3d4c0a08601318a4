"""tenants, API keys in the database, dashboard accounts and their sessions

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-01 23:00:00

The `default` tenant is made here: the keys of AGENTRUN_API_KEYS are its admins, and
everything stored before tenants existed is its.
"""

from collections.abc import Sequence
from datetime import UTC, datetime

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

from alembic import op

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

Json = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")
Timestamp = sa.DateTime(timezone=True)


def upgrade() -> None:
    tenants = op.create_table(
        "tenants",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("limits", Json, nullable=False),
        sa.Column("created_at", Timestamp, nullable=False),
        sa.Column("disabled_at", Timestamp, nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_tenants")),
    )
    op.bulk_insert(
        tenants,
        [{"id": "default", "name": "default", "limits": {}, "created_at": datetime.now(UTC)}],
    )
    op.create_table(
        "api_keys",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("tenant_id", sa.String(length=64), nullable=False),
        sa.Column("role", sa.String(length=20), nullable=False),
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.Column("secret_hash", sa.String(length=128), nullable=False),
        sa.Column("created_at", Timestamp, nullable=False),
        sa.Column("created_by", sa.String(length=100), nullable=True),
        sa.Column("expires_at", Timestamp, nullable=True),
        sa.Column("revoked_at", Timestamp, nullable=True),
        sa.Column("rotated_from", sa.String(length=32), nullable=True),
        sa.ForeignKeyConstraint(
            ["tenant_id"], ["tenants.id"], name=op.f("fk_api_keys_tenant_id_tenants")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_api_keys")),
    )
    op.create_index("ix_api_keys_tenant_id", "api_keys", ["tenant_id"])
    op.create_table(
        "operators",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("tenant_id", sa.String(length=64), nullable=False),
        sa.Column("username", sa.String(length=100), nullable=False),
        sa.Column("role", sa.String(length=20), nullable=False),
        sa.Column("password_hash", sa.Text(), nullable=False),
        sa.Column("created_at", Timestamp, nullable=False),
        sa.Column("disabled_at", Timestamp, nullable=True),
        sa.ForeignKeyConstraint(
            ["tenant_id"], ["tenants.id"], name=op.f("fk_operators_tenant_id_tenants")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_operators")),
        sa.UniqueConstraint("username", name=op.f("uq_operators_username")),
    )
    op.create_table(
        "operator_sessions",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("operator_id", sa.String(length=32), nullable=False),
        sa.Column("created_at", Timestamp, nullable=False),
        sa.Column("expires_at", Timestamp, nullable=False),
        sa.Column("revoked_at", Timestamp, nullable=True),
        sa.ForeignKeyConstraint(
            ["operator_id"],
            ["operators.id"],
            name=op.f("fk_operator_sessions_operator_id_operators"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_operator_sessions")),
    )
    op.create_index("ix_operator_sessions_operator_id", "operator_sessions", ["operator_id"])


def downgrade() -> None:
    op.drop_index("ix_operator_sessions_operator_id", table_name="operator_sessions")
    op.drop_table("operator_sessions")
    op.drop_table("operators")
    op.drop_index("ix_api_keys_tenant_id", table_name="api_keys")
    op.drop_table("api_keys")
    op.drop_table("tenants")
