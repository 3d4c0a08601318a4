"""The UPDATE of a run and the claim's statements, built once for both dialects: each
backend writes a change with `update_run` (PostgreSQL as a CTE of one statement, SQLite
as an UPDATE and follow-up inserts), picks a claim's runs with `due_runs` and ranks a
new run with `fair_rank`. Below the repositories and the backends, which both use them.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import sqlalchemy as sa

from app.core.lifecycle import RunStatus
from app.store import changes
from app.store.changes import Change
from app.store.schema import fair_ranks, runs
from app.store.scoping import p_tenant


def status_in(statuses: Sequence[str]) -> sa.ColumnElement[bool]:
    """`status IN (...)` for a run found by its key, as a filter only: `status || ''` keeps
    status-led indexes from serving the lookup, so the primary key does. Seen: with
    `status` bare, a plan made while few runs were suspended found the run through
    ix_runs_lease, reading every suspended run on each submission. The statuses are
    literals (enum values), part of the statement."""
    status = runs.c.status.concat(sa.literal_column("''"))
    return status.in_([sa.literal_column(f"'{RunStatus(s).value}'") for s in statuses])


#: The claim order (ix_runs_claim's key): higher priority first, then the lower fair
#: rank (fair keys take turns), then the oldest due.
CLAIM_ORDER = (runs.c.priority.desc(), runs.c.fair_rank, runs.c.available_at, runs.c.id)


def is_queued() -> sa.ColumnElement[bool]:
    """The status is the queued one, as a literal, not a parameter: it matches the
    partial indexes' predicate, so even a generic plan uses them."""
    return runs.c.status == sa.literal_column(f"'{RunStatus.QUEUED.value}'")


def due_runs(prefix: str = "") -> sa.Select[Any]:
    """The ids of the first due queued runs in claim order, at most `p_limit` (a claim's
    pick): read from ix_runs_claim in its order, a run not yet due stepped over on its
    index entry."""
    return (
        sa.select(runs.c.id)
        .where(is_queued(), runs.c.available_at <= sa.bindparam("p_now"))
        .order_by(*CLAIM_ORDER)
        .limit(sa.bindparam(f"{prefix}p_limit", type_=sa.Integer()))
    )


def fair_rank(
    insert: Any,
    priority: sa.ColumnElement[Any],
    fair_key: sa.ColumnElement[Any],
    now: sa.ColumnElement[Any],
    greatest: Any,
) -> Any:
    """The upsert that ranks a run at enqueue (start-time fair queuing), returning its
    `rank`: one more than the later of its key's last rank and the head (the lowest rank
    of its priority's runs due at `now`: a run that waits keeps its low rank and would
    hold the head back while backlogs advance; with none due, the lowest queued; with
    none queued, the highest rank given at that priority, so ranks never start again). A
    key with a backlog ranks after it; a key with none joins at the head, so keys take
    turns. `insert`: the dialect's insert of `fair_ranks`; `greatest`: its two-argument
    maximum. The row lock of the upsert makes concurrent creates of one key wait for
    each other's rank (PostgreSQL), not share it."""
    lowest = sa.select(sa.func.min(runs.c.fair_rank)).where(
        is_queued(), runs.c.priority == priority
    )
    due = lowest.where(runs.c.available_at <= now)
    given = sa.select(sa.func.max(fair_ranks.c.rank)).where(fair_ranks.c.priority == priority)
    head = sa.func.coalesce(
        due.scalar_subquery(), lowest.scalar_subquery(), given.scalar_subquery(), 0
    )
    stmt = insert.values(fair_key=fair_key, priority=priority, rank=head + 1)
    return stmt.on_conflict_do_update(
        index_elements=["fair_key", "priority"],
        set_={"rank": greatest(fair_ranks.c.rank + 1, stmt.excluded.rank)},
    ).returning(fair_ranks.c.rank)


def update_run(
    keys: tuple[str, ...],
    statuses: tuple[str, ...],
    n_events: int,
    *,
    fenced: bool = False,
    bump: bool = True,
    claimed: sa.ColumnElement[bool] | None = None,
    prefix: str = "",
    scoped: bool = False,
) -> Any:
    """The UPDATE of a run by id (`p_id`), compare-and-set on its status (and `version`
    when `fenced`); `bump` moves the fencing token on. A claim passes the predicate that
    picks its runs as `claimed` (the backend's form of `due_runs`) and counts an attempt.
    `prefix` names the parameters of a claim chained to a change; `scoped`: the run must
    be tenant `p_tenant`'s too (a change on a tenant's behalf)."""
    if claimed is not None:  # (a claim's pick is row-locked and re-checked by its subquery)
        where = [claimed]
    else:
        where = [runs.c.id == sa.bindparam("p_id"), status_in(statuses)]
    if fenced:
        where.append(runs.c.version == sa.bindparam("p_version"))
    if scoped:
        where.append(runs.c.tenant_id == p_tenant())
    values: dict[str, Any] = {k: sa.bindparam(f"{prefix}v_{k}", type_=runs.c[k].type) for k in keys}
    if claimed is not None:
        values["attempts"] = runs.c.attempts + 1
    if bump:
        values["version"] = runs.c.version + 1
    return (
        runs.update()
        .where(*where)
        .values(
            **values,
            last_event_seq=runs.c.last_event_seq + n_events,
            updated_at=sa.bindparam("p_now"),
        )
    )


@functools.cache
def claim_keys() -> tuple[str, ...]:
    """The columns a claim sets (sorted, as statements are keyed)."""
    return tuple(sorted(changes.claim("", datetime.min).columns()))


def change_params(change: Change, now: datetime, prefix: str = "") -> dict[str, Any]:
    """The UPDATE's values: the columns `change` sets, the clock, the fencing token."""
    params: dict[str, Any] = {f"{prefix}v_{k}": v for k, v in change.columns().items()}
    params["p_now"] = now
    if change.expect_version is not None:
        params["p_version"] = change.expect_version
    return params
