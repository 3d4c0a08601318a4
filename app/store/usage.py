"""The usage ledger's totals for /v1/usage, read from the rollups (app.store.fold).

A range [start, end) is read as its whole UTC hours and its edges: the whole hours from
`usage_hourly` plus the ledger rows not folded yet (`ix_model_calls_unfolded`), the partial
hours at either edge from the ledger itself (`ix_model_calls_created`). So a report reads
a few rows per hour, model and status, the calls of runs not folded yet and at most two
hours of calls, whatever is kept; and it is exact to the token: each call is in exactly
one of them, in one statement's snapshot. Calls of runs that retention deleted are in the
rollups only: they count in ranges that hold their whole hour, not at an edge.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from app.core.scope import Scope
from app.store.backend.dialect_forms import forms_for
from app.store.fold import COUNTERS, TOKENS, Sums, hour_of
from app.store.schema import IS_WAITING, LEDGER_UNFOLDED, model_calls, runs, usage_hourly
from app.store.scoping import within


def _ceil_hour(moment: datetime) -> datetime | None:
    """The first whole hour at or after `moment` (None: past the calendar's end)."""
    floor = hour_of(moment)
    if floor == moment.astimezone(UTC):
        return floor
    try:
        return floor + timedelta(hours=1)
    except OverflowError:
        return None


def _ledger(where: list[Any], scope: Scope) -> sa.Select[Any]:
    """Ledger rows' sums by provider, model and the status of their run, which is read
    from the index of waiting runs (ix_runs_waiting, whole: most calls not folded are
    theirs), else by the run's key (a scalar subquery, run only for the others): never a
    join that could read `runs` whole. Calls whose run is gone have no status (dropped)."""
    mine = within(runs.c.tenant_id, scope)
    waiting = sa.select(runs.c.id, runs.c.status).where(IS_WAITING, *mine).subquery("waiting")
    where = [*where, *within(model_calls.c.tenant_id, scope)]
    by_key = sa.select(runs.c.status).where(runs.c.id == model_calls.c.run_id).scalar_subquery()
    status = sa.func.coalesce(waiting.c.status, by_key).label("status")
    return (
        sa.select(
            model_calls.c.provider,
            model_calls.c.model,
            status,
            sa.func.count().label("calls"),
            sa.func.count().filter(model_calls.c.outcome == "error").label("failed_calls"),
            *[sa.func.coalesce(sa.func.sum(model_calls.c[c]), 0).label(c) for c in TOKENS],
            sa.func.sum(model_calls.c.cost_usd).label("cost_usd"),
        )
        .select_from(model_calls.outerjoin(waiting, waiting.c.id == model_calls.c.run_id))
        .where(*where)
        .group_by(model_calls.c.provider, model_calls.c.model, status)
    )


def _between(a: datetime, b: datetime) -> list[Any]:
    return [model_calls.c.created_at >= a, model_calls.c.created_at < b]


def usage_query(start: datetime, end: datetime, scope: Scope) -> Any:
    """One statement (one snapshot) whose rows add up to the usage of [start, end), of
    the runs in `scope`."""
    first, last = _ceil_hour(start), hour_of(end)
    parts: list[sa.Select[Any]] = []
    if first is not None and first < last:
        # (Summed here: a month is a few thousand rows in, one per model and status out.)
        hourly = usage_hourly.c
        parts.append(
            sa.select(
                hourly.provider,
                hourly.model,
                hourly.run_status,
                *[sa.func.sum(hourly[c]).label(c) for c in COUNTERS],
                sa.func.sum(hourly.cost_usd).label("cost_usd"),
            )
            .where(
                hourly.hour >= first,
                hourly.hour < last,
                *within(hourly.tenant_id, scope),
            )
            .group_by(hourly.provider, hourly.model, hourly.run_status)
        )
        parts.append(_ledger([LEDGER_UNFOLDED, *_between(first, last)], scope))
        edges = [(start, first), (last, end)]
    else:
        edges = [(start, end)]
    parts += [_ledger(_between(a, b), scope) for a, b in edges if a < b]
    if not parts:  # an empty range
        return _ledger([sa.false()], scope)
    return parts[0] if len(parts) == 1 else sa.union_all(*parts)


async def usage_totals(
    conn: AsyncConnection, start: datetime, end: datetime, scope: Scope
) -> dict[str, Any]:
    """Sums of the usage ledger in [start, end): overall, by run status, by model (of
    the runs in `scope`)."""
    overall = Sums()
    by_status: dict[str, Sums] = {}
    by_model: dict[str, Sums] = {}
    await forms_for(conn).by_index(conn)
    for row in (await conn.execute(usage_query(start, end, scope))).all():
        provider, model, status = row[0], row[1], row[2]
        if status is None:  # (calls of a run deleted since: never, as a run's rows go with it)
            continue
        for into in (
            overall,
            by_status.setdefault(status, Sums()),
            by_model.setdefault(f"{provider}:{model}", Sums()),
        ):
            _add(into, row)
    return {
        **_plain(overall),
        "by_status": {k: _plain(v) for k, v in by_status.items()},
        "by_model": {k: _plain(v) for k, v in by_model.items()},
    }


def _add(into: Sums, row: Any) -> None:
    m = row._mapping
    for column in COUNTERS:
        setattr(into, column, getattr(into, column) + int(m[column] or 0))
    if m["cost_usd"] is not None:
        into.cost_usd = (into.cost_usd or 0.0) + float(m["cost_usd"])


def _plain(sums: Sums) -> dict[str, Any]:
    return dict(sums.__dict__)
