"""Who may call (tenants, keys, the dashboard's people) and the shared limits they run under."""

from __future__ import annotations

import sqlalchemy as sa

from app.store.schema.base import Json, Timestamp, metadata

# Who may call (app.tenancy.access). A tenant owns runs and everything of them; keys and
# dashboard accounts belong to one tenant each. `default` exists from the migration on.
tenants = sa.Table(
    "tenants",
    metadata,
    sa.Column("id", sa.String(64), primary_key=True),
    sa.Column("name", sa.String(200), nullable=False),
    # The tenant's limits (app.tenancy.tenants.TenantLimits): active runs, tokens and cost
    # per day. Kept here for the budget and flow-control work to enforce.
    sa.Column("limits", Json, nullable=False),
    sa.Column("created_at", Timestamp, nullable=False),
    sa.Column("disabled_at", Timestamp),
)

# API keys: a public lookup id and a hash of the secret (never the secret). A rotated key
# keeps working until `expires_at`; a revoked one never again.
api_keys = sa.Table(
    "api_keys",
    metadata,
    sa.Column("id", sa.String(32), primary_key=True),
    sa.Column("tenant_id", sa.String(64), sa.ForeignKey("tenants.id"), nullable=False),
    sa.Column("role", sa.String(20), nullable=False),
    sa.Column("name", sa.String(100), nullable=False),
    sa.Column("secret_hash", sa.String(128), nullable=False),
    sa.Column("created_at", Timestamp, nullable=False),
    sa.Column("created_by", sa.String(100)),
    sa.Column("expires_at", Timestamp),
    sa.Column("revoked_at", Timestamp),
    sa.Column("rotated_from", sa.String(32)),
)
sa.Index("ix_api_keys_tenant_id", api_keys.c.tenant_id)

# The dashboard's people: one account per person, its password hashed with argon2.
operators = sa.Table(
    "operators",
    metadata,
    sa.Column("id", sa.String(32), primary_key=True),
    sa.Column("tenant_id", sa.String(64), sa.ForeignKey("tenants.id"), nullable=False),
    sa.Column("username", sa.String(100), nullable=False, unique=True),
    sa.Column("role", sa.String(20), nullable=False),
    sa.Column("password_hash", sa.Text, nullable=False),
    sa.Column("created_at", Timestamp, nullable=False),
    sa.Column("disabled_at", Timestamp),
)

# A signed-in person's session: the cookie holds its id's secret, the table its hash, so
# a session can be listed, expired and revoked.
operator_sessions = sa.Table(
    "operator_sessions",
    metadata,
    sa.Column("id", sa.String(64), primary_key=True),
    sa.Column(
        "operator_id",
        sa.String(32),
        sa.ForeignKey("operators.id", ondelete="CASCADE"),
        nullable=False,
    ),
    sa.Column("created_at", Timestamp, nullable=False),
    sa.Column("expires_at", Timestamp, nullable=False),
    sa.Column("revoked_at", Timestamp),
)
sa.Index("ix_operator_sessions_operator_id", operator_sessions.c.operator_id)

# Shared limits (app.limits.rates_sql): one row per limit key (`profile:<p>`, `model:<p>/<m>`,
# `tenant:<t>`), a GCRA bucket per kind. Times are Unix seconds (plain arithmetic in both
# dialects). `*_tat`: the theoretical arrival time (the bucket is empty at tat, full at
# tat - 60 s); `*_interval`: the configured seconds per request / token; `slow_*`: the
# slower interval a provider's 429 taught, in force (fading) until `slow_until`.
flow_limits = sa.Table(
    "flow_limits",
    metadata,
    sa.Column("key", sa.String(300), primary_key=True),
    sa.Column("requests_tat", sa.Float, nullable=False),
    sa.Column("tokens_tat", sa.Float, nullable=False),
    sa.Column("request_interval", sa.Float, nullable=False),
    sa.Column("token_interval", sa.Float, nullable=False),
    sa.Column("tokens_reserved", sa.Float, nullable=False),
    sa.Column("slow_request_interval", sa.Float, nullable=False),
    sa.Column("slow_token_interval", sa.Float, nullable=False),
    sa.Column("slow_until", sa.Float, nullable=False),
    sa.Column("provider_429s", sa.BigInteger, nullable=False),
    # (`max_concurrent`: the key's calls in flight at once, app.limits.slots_sql; null: none)
    sa.Column("max_concurrent", sa.Integer),
    # (`granted`: the calls the last acquire reserved, a worker's batch: app.limits.rates_sql)
    sa.Column("granted", sa.Integer, nullable=False, server_default=sa.text("1")),
)

# Concurrency slots (app.limits.slots_sql): one row per model call in flight on a key with a
# `max_concurrent`; `expires_at` (Unix seconds) frees the slot of a worker that died. The
# runs a full key sent back to the queue wait in `flow_waiters` (oldest `since` first).
flow_slots = sa.Table(
    "flow_slots",
    metadata,
    sa.Column("key", sa.String(300), primary_key=True),
    sa.Column("holder", sa.String(80), primary_key=True),
    sa.Column("expires_at", sa.Float, nullable=False),
)
flow_waiters = sa.Table(
    "flow_waiters",
    metadata,
    sa.Column("key", sa.String(300), primary_key=True),
    sa.Column("run_id", sa.String(40), primary_key=True),
    sa.Column("since", sa.Float, nullable=False),
)
