"""Named, versioned agents (app.agents): what a run, an agent tool or a schedule starts."""

from __future__ import annotations

import sqlalchemy as sa

from app.store.schema.base import Json, Timestamp, metadata, tenant_column

# One row per version of a tenant's agent; a version is never changed (`PUT` adds the
# next). Deleting an agent marks its versions `deleted_at`: no new run starts from them,
# and the runs in flight carry their configuration already (copied at create).
agents = sa.Table(
    "agents",
    metadata,
    tenant_column(),
    sa.Column("name", sa.String(64), nullable=False),
    sa.Column("version", sa.Integer, nullable=False),
    sa.Column("description", sa.Text, nullable=False),
    # The run fields the agent gives its runs (model, preamble, tools, limits, ...).
    sa.Column("spec", Json, nullable=False),
    sa.Column("created_at", Timestamp, nullable=False),
    sa.Column("created_by", sa.String(200)),
    sa.Column("deleted_at", Timestamp),
    sa.PrimaryKeyConstraint("tenant_id", "name", "version"),
)
