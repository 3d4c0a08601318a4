"""Tables. Every change here needs an Alembic revision (a test checks there is no drift).

One metadata (`base`), the tables by what they hold: a run's own row and configuration
(`runs`), the rows it gains (`run_rows`), the ledger and its rollups (`usage`), who may
call and the shared limits (`access`). Import them from here.
"""

from __future__ import annotations

from app.store.schema.access import (
    api_keys,
    flow_limits,
    flow_slots,
    flow_waiters,
    operator_sessions,
    operators,
    tenants,
)
from app.store.schema.agents import agents
from app.store.schema.base import (
    DEFAULT_TENANT,
    Json,
    Timestamp,
    metadata,
    tenant_column,
)
from app.store.schema.run_rows import (
    AWAITING,
    LEASABLE,
    run_events,
    run_messages,
    run_watchers,
    service_secrets,
    tool_calls,
    webhook_attempts,
    webhook_outbox,
)
from app.store.schema.runs import (
    CREATED,
    ENDED_SQL,
    ENDED_VALUES,
    HAS_KEY,
    HAS_TOKEN,
    IN_TREE,
    IS_ENDED,
    IS_WAITING,
    QUEUED,
    RUN_CREATED,
    RUNNING,
    SUSPENDED,
    WAITING_SQL,
    config_of,
    created_beyond,
    fair_ranks,
    metadata_of,
    newest_first,
    oldest_first,
    run_configs,
    runs,
    select_runs,
)
from app.store.schema.schedules import schedule_ticks, schedules
from app.store.schema.usage import (
    LEDGER_UNFOLDED,
    gauge_samples,
    latency_hourly,
    model_calls,
    run_counts,
    run_endings,
    unfolded_runs,
    usage_hourly,
)

#: Tables whose rows belong to a run (by `run_id`), deleted with it.
RUN_ROWS = (run_configs, run_events, run_messages, tool_calls, model_calls, webhook_outbox)

__all__ = [
    "AWAITING",
    "CREATED",
    "DEFAULT_TENANT",
    "ENDED_SQL",
    "ENDED_VALUES",
    "HAS_KEY",
    "HAS_TOKEN",
    "IN_TREE",
    "IS_ENDED",
    "IS_WAITING",
    "LEASABLE",
    "LEDGER_UNFOLDED",
    "QUEUED",
    "RUNNING",
    "RUN_CREATED",
    "RUN_ROWS",
    "SUSPENDED",
    "WAITING_SQL",
    "Json",
    "Timestamp",
    "agents",
    "api_keys",
    "config_of",
    "created_beyond",
    "fair_ranks",
    "flow_limits",
    "flow_slots",
    "flow_waiters",
    "gauge_samples",
    "latency_hourly",
    "metadata",
    "metadata_of",
    "model_calls",
    "newest_first",
    "oldest_first",
    "operator_sessions",
    "operators",
    "run_configs",
    "run_counts",
    "run_endings",
    "run_events",
    "run_messages",
    "run_watchers",
    "runs",
    "schedule_ticks",
    "schedules",
    "select_runs",
    "service_secrets",
    "tenant_column",
    "tenants",
    "tool_calls",
    "unfolded_runs",
    "usage_hourly",
    "webhook_attempts",
    "webhook_outbox",
]
