"""A run's own row, its claim order and its configuration (written once)."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from app.core.lifecycle import TERMINAL, RunStatus
from app.store.schema.base import Json, Timestamp, metadata, tenant_column

runs = sa.Table(
    "runs",
    metadata,
    sa.Column("id", sa.String(40), primary_key=True),
    sa.Column("status", sa.String(20), nullable=False),
    # The run's control document (app.core.stored), its last durable state without its
    # log (`run_messages`); rows written before revision 0006 held the whole run.
    sa.Column("state", sa.Text, nullable=False),
    sa.Column("schema_version", sa.Integer, nullable=False),
    # Fencing token and optimistic lock: every transition is a compare-and-set on it.
    sa.Column("version", sa.Integer, nullable=False, server_default="1"),
    sa.Column("lease_owner", sa.String(100)),
    sa.Column("lease_expires_at", Timestamp),
    sa.Column("attempts", sa.Integer, nullable=False, server_default="0"),
    sa.Column("model_attempts", sa.Integer, nullable=False, server_default="0"),
    sa.Column("model_retry_since", Timestamp),  # first failure of the model call retried
    sa.Column("available_at", Timestamp, nullable=False),
    sa.Column("expires_at", Timestamp),
    sa.Column("idempotency_key", sa.String(255)),
    sa.Column("request_hash", sa.String(64)),
    sa.Column("callback_token_hash", sa.String(64)),
    sa.Column("waiting_reason", Json),
    sa.Column("turn", sa.Integer, nullable=False, server_default="0"),
    sa.Column("max_turns", sa.Integer, nullable=False),
    sa.Column("output", sa.Text),
    sa.Column("error", Json),
    sa.Column("usage", Json),
    sa.Column("last_event_seq", sa.Integer, nullable=False, server_default="0"),
    sa.Column("created_at", Timestamp, nullable=False),
    sa.Column("updated_at", Timestamp, nullable=False),
    # When it last suspended (its latest `run.requires_action` event's time): the
    # dashboard's and /metrics' suspended ages read it beside the status index.
    sa.Column("suspended_at", Timestamp),
    # Whose run it is: every read by id, list, queue and rollup is scoped to it.
    tenant_column(),
    # The run's budget (`max_total_tokens`, `max_cost_usd`, `max_model_calls`,
    # `max_duration_seconds`: app.limits.rules); null: none. Raised by
    # `POST /v1/runs/{id}/limits`, so not part of the configuration written once.
    sa.Column("limits", Json),
    # The run waiting for this one to end (`if_busy: enqueue`, app.conversations);
    # the ending write returns it, so a run nobody waits for costs no look.
    sa.Column("awaited_by", sa.String(40)),
    # A shared-limit reservation the run holds (app.limits.rates_sql): set by a throttle (the
    # time its reserved call may go), honoured by its next model call, cleared after.
    sa.Column("flow_reserved_at", Timestamp),
    # Claim order (revision 0017): higher `priority` first (-100..100); within one, the
    # lower `fair_rank` (start-time fair queuing: set at enqueue from the run's
    # `fair_key`, app.store.sql.runs.fair_rank), so fair keys take turns.
    sa.Column("priority", sa.Integer, nullable=False, server_default="0"),
    sa.Column("fair_key", sa.String(300), nullable=False, server_default=""),
    sa.Column("fair_rank", sa.BigInteger, nullable=False, server_default="0"),
)
# The claim's index holds queued runs only, in claim order: a generic plan picks it even
# on an empty table (no sticky seq-scan plan), and other transitions do not write to it.
# `available_at` is in the key so the claim's "due" test is checked on the index entry
# (a run not yet due is stepped over without reading its row).
QUEUED = sa.text(f"status = '{RunStatus.QUEUED.value}'")
sa.Index(
    "ix_runs_claim",
    runs.c.priority.desc(),
    runs.c.fair_rank,
    runs.c.available_at,
    runs.c.id,
    postgresql_where=QUEUED,
    sqlite_where=QUEUED,
)

# A fair key's last rank at a priority (start-time fair queuing, revision 0017), moved on
# by the INSERT of each of its runs, in the same statement: its row lock gives the
# concurrent creates of one key ranks of their own. One row per key and priority used.
fair_ranks = sa.Table(
    "fair_ranks",
    metadata,
    sa.Column("fair_key", sa.String(300), primary_key=True),
    sa.Column("priority", sa.Integer, primary_key=True),
    sa.Column("rank", sa.BigInteger, nullable=False),
)


# The indexes below hold only the rows that need them (partial), so a transition of a
# run writes entries in few of them: every update that is not HOT adds an entry to each
# index whose predicate the new row version matches.
RUNNING = sa.text(f"status = '{RunStatus.RUNNING.value}'")
SUSPENDED = sa.text(f"status = '{RunStatus.REQUIRES_ACTION.value}'")
sa.Index("ix_runs_lease", runs.c.lease_expires_at, postgresql_where=RUNNING, sqlite_where=RUNNING)
sa.Index("ix_runs_expiry", runs.c.expires_at, postgresql_where=SUSPENDED, sqlite_where=SUSPENDED)

# Runs by status in creation order, for lists of one status (either order, keyset; the
# status a literal, so the planner sees the predicate holds) and the retention sweep:
# waiting runs (a transition into queued or suspended adds an entry) and finished runs
# (the finishing transition and the fold add one each). Running runs, which a worker's
# lease bounds, are listed from ix_runs_lease.
WAITING_SQL = f"status IN ('{RunStatus.QUEUED.value}', '{RunStatus.REQUIRES_ACTION.value}')"
#: The finished statuses' values, in order (the literals of ENDED_SQL).
ENDED_VALUES = tuple(sorted(s.value for s in TERMINAL))
ENDED_SQL = "status IN ({})".format(", ".join(f"'{v}'" for v in ENDED_VALUES))
IS_WAITING, IS_ENDED = sa.text(WAITING_SQL), sa.text(ENDED_SQL)
sa.Index(
    "ix_runs_waiting",
    runs.c.tenant_id,
    runs.c.status,
    runs.c.created_at,
    runs.c.id,
    postgresql_where=IS_WAITING,
    sqlite_where=IS_WAITING,
)
sa.Index(
    "ix_runs_ended",
    runs.c.tenant_id,
    runs.c.status,
    runs.c.created_at,
    runs.c.id,
    postgresql_where=IS_ENDED,
    sqlite_where=IS_ENDED,
)
HAS_KEY = runs.c.idempotency_key.is_not(None)
HAS_TOKEN = runs.c.callback_token_hash.is_not(None)
sa.Index(
    "uq_runs_idempotency_key",
    runs.c.tenant_id,
    runs.c.idempotency_key,
    unique=True,
    postgresql_where=HAS_KEY,
    sqlite_where=HAS_KEY,
)
sa.Index(
    "uq_runs_callback_token_hash",
    runs.c.callback_token_hash,
    unique=True,
    postgresql_where=HAS_TOKEN,
    sqlite_where=HAS_TOKEN,
)

# `run_configs`, like the tables of `run_rows`, holds rows of a run written with it and
# carries no foreign key (see `app.store.schema.run_rows`).

# What a run was created with and never changes: its configuration (model, tools,
# policies, webhook, trace context) and the client's metadata. Apart from `runs` because
# every update of a run writes its whole row again (WAL), and these are most of it.
run_configs = sa.Table(
    "run_configs",
    metadata,
    sa.Column("run_id", sa.String(40), primary_key=True),
    sa.Column("config", Json, nullable=False),
    sa.Column("metadata", Json, nullable=False),
    # When the run was created (as `runs.created_at`): the order of run lists. Its index
    # is here, written once, not on `runs`, where every update that is not HOT (all of a
    # run's transitions) added an entry to it.
    sa.Column("created_at", Timestamp, nullable=False),
    tenant_column(),  # (as `runs.tenant_id`: the creation index is per tenant)
    # A child run's place in its tree (an agent tool's call made it, app.agents): the run
    # whose call it answers and the tree's root (revision 0023); null for a root. The
    # configuration's `tree` says the same for the API; these columns are for the reads
    # by tree (children, descendants, a tree's spend, a tree's cancel).
    sa.Column("parent_run_id", sa.String(40)),
    sa.Column("root_run_id", sa.String(40)),
    # The run a fork was made from (app.forks; revision 0026), null for any other run: the
    # configuration's `forked_from` says the same for the API; this is for a run's forks.
    sa.Column("forked_from_run_id", sa.String(40)),
)
sa.Index(
    "ix_run_configs_created",
    run_configs.c.tenant_id,
    run_configs.c.created_at,
    run_configs.c.run_id,
)
IN_TREE = run_configs.c.parent_run_id.is_not(None)
sa.Index(
    "ix_run_configs_parent",
    run_configs.c.parent_run_id,
    run_configs.c.created_at,
    postgresql_where=IN_TREE,
    sqlite_where=IN_TREE,
)
sa.Index(
    "ix_run_configs_root",
    run_configs.c.root_run_id,
    run_configs.c.created_at,
    postgresql_where=IN_TREE,
    sqlite_where=IN_TREE,
)
FORKED = run_configs.c.forked_from_run_id.is_not(None)
sa.Index(
    "ix_run_configs_forked",
    run_configs.c.forked_from_run_id,
    run_configs.c.created_at,
    postgresql_where=FORKED,
    sqlite_where=FORKED,
)
CREATED = (run_configs.c.created_at, run_configs.c.run_id)


RUN_CREATED = (runs.c.created_at, runs.c.id)


def created_beyond(
    created: Any, run_id: Any, *, ascending: bool, on: tuple[Any, Any] = CREATED
) -> sa.ColumnElement[bool]:
    """Keyset pagination on (created_at, id), served by ix_run_configs_created (queries
    that select from `select_runs()`), or with `on=RUN_CREATED` by the status indexes of
    `runs` (ix_runs_waiting, ix_runs_ended): the runs after the cursor's run in the page
    order. A row comparison, which the index reads as one range from the cursor on (an
    OR of the two columns' conditions was read as two, the first from the start)."""
    row, cursor = sa.tuple_(*on), sa.tuple_(created, run_id)
    return row > cursor if ascending else row < cursor


def newest_first(on: tuple[Any, Any] = CREATED) -> tuple[Any, Any]:
    return on[0].desc(), on[1].desc()


def oldest_first(on: tuple[Any, Any] = CREATED) -> tuple[Any, Any]:
    return on[0].asc(), on[1].asc()


def config_of(run_id: Any) -> Any:
    """A run's configuration, as a scalar subquery (one primary-key lookup)."""
    return sa.select(run_configs.c.config).where(run_configs.c.run_id == run_id).scalar_subquery()


def metadata_of(run_id: Any) -> Any:
    return sa.select(run_configs.c.metadata).where(run_configs.c.run_id == run_id).scalar_subquery()


def select_runs() -> sa.Select[Any]:
    """`runs.*, config, metadata`: a run record's row (`app.store.run_records.RunRecord`)."""
    return sa.select(*runs.c, run_configs.c.config, run_configs.c.metadata).select_from(
        runs.join(run_configs, run_configs.c.run_id == runs.c.id)
    )
