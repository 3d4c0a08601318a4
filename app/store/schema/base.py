"""What every table module shares: the metadata (its naming convention) and the column types."""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

metadata = sa.MetaData(
    naming_convention={
        "ix": "ix_%(table_name)s_%(column_0_N_name)s",
        "uq": "uq_%(table_name)s_%(column_0_N_name)s",
        "ck": "ck_%(table_name)s_%(constraint_name)s",
        "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
        "pk": "pk_%(table_name)s",
    }
)

# JSON documents: JSONB on PostgreSQL, JSON text on SQLite.
Json = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")
#: JSON kept as text on PostgreSQL too (`json`, not `jsonb`): an object's keys stay in the
#: order they were given (a tool's output, which the model is shown as stored).
GivenJson = sa.JSON()
Timestamp = sa.DateTime(timezone=True)

#: The tenant of every row stored before tenants existed (revision 0013), as
#: `app.tenancy.access.DEFAULT_TENANT` names it.
DEFAULT_TENANT = "default"


def tenant_column() -> sa.Column[str]:
    """The tenant a run's row belongs to (`tenants.id`; no foreign key, as `run_id`)."""
    return sa.Column("tenant_id", sa.String(64), nullable=False, server_default=DEFAULT_TENANT)
