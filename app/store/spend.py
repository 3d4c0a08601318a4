"""The overview's reads of the usage ledger over a window of whole UTC hours: usage per
hour, tenant, provider, model and agent (`spend`), and answered calls' latencies per
provider and model (`latencies`).

As /v1/usage (app.store.usage), a window's whole hours up to the current one are read
from the rollups (`usage_hourly`, `latency_hourly`) plus the ledger's calls not folded
yet, and the current hour from the ledger itself, its statements in one snapshot
(`Forms.snapshot`): exact to the token whatever the fold's lag, and a few rows per hour
and model whatever is kept. The ledger's rows (the calls of runs not folded, and the
current hour's) are summed by the database per hour and, on PostgreSQL, per latency
bucket (SQLite's latencies are bucketed here).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from app.core.scope import Scope
from app.store.backend.base import Forms
from app.store.backend.dialect_forms import forms_for
from app.store.fold import COUNTERS, TOKENS, Sums, hour_of
from app.store.latency import bucket_of
from app.store.run_records import utc
from app.store.schema import LEDGER_UNFOLDED, latency_hourly, model_calls, run_configs, usage_hourly
from app.store.scoping import within

#: (tenant, UTC hour, provider, model, agent): '' for a run without an agent.
SpendKey = tuple[str, datetime, str, str, str]
#: (provider, model, latency bucket).
LatencyKey = tuple[str, str, int]
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass
class Window:
    """[start, end): `start` a whole hour; `end` any moment after it (now). `agents`:
    whether usage is told apart by agent (else every key's agent is '': the ledger's
    calls are not looked up in their runs' configurations)."""

    start: datetime
    end: datetime
    agents: bool = True

    @property
    def current(self) -> datetime:
        """The hour `end` is in: read from the ledger (the rollups hold whole hours)."""
        return max(self.start, hour_of(self.end))


def _agent() -> Any:
    """The agent's name of a ledger row's run (by the configuration's primary key)."""
    name = run_configs.c.config[("agent", "name")].as_string()
    return sa.select(name).where(run_configs.c.run_id == model_calls.c.run_id).scalar_subquery()


def _ledger_rows(w: Window, scope: Scope, *, agents: bool) -> Any:
    """The ledger rows no rollup read holds: calls of the window's whole hours not folded
    yet (`ix_model_calls_unfolded`), and every call of the current hour
    (`ix_model_calls_created`), each with its run's agent."""
    c = model_calls.c
    columns = [
        c.created_at,
        c.tenant_id,
        c.provider,
        c.model,
        c.outcome,
        c.http_status,
        c.latency_ms,
        c.cost_usd,
        *[c[t] for t in TOKENS],
        (_agent() if agents else sa.literal("")).label("agent"),
    ]
    mine = within(c.tenant_id, scope)
    parts = [
        sa.select(*columns).where(c.created_at >= w.current, c.created_at < w.end, *mine),
    ]
    if w.start < w.current:
        parts.append(
            sa.select(*columns).where(
                LEDGER_UNFOLDED, c.created_at >= w.start, c.created_at < w.current, *mine
            )
        )
    return (parts[0] if len(parts) == 1 else sa.union_all(*parts)).subquery("ledger")


def ledger_query(w: Window, scope: Scope, forms: Forms) -> Any:
    """Those rows' usage per tenant, UTC hour, provider, model and agent."""
    r = _ledger_rows(w, scope, agents=w.agents).c
    error = r.outcome == "error"
    hour = forms.hour_utc(r.created_at).label("hour")
    return sa.select(
        r.tenant_id,
        hour,
        r.provider,
        r.model,
        r.agent,
        sa.func.count().label("calls"),
        sa.func.count().filter(error).label("failed_calls"),
        sa.func.count().filter(error, r.http_status == 429).label("throttled_calls"),
        *[sa.func.coalesce(sa.func.sum(r[t]), 0).label(t) for t in TOKENS],
        sa.func.sum(r.cost_usd).label("cost_usd"),
    ).group_by(r.tenant_id, hour, r.provider, r.model, r.agent)


def ledger_latency_query(w: Window, scope: Scope, forms: Forms) -> Any:
    """Those rows' answered calls per provider, model and latency bucket; where the
    database cannot bucket them, their latencies one by one (`bucketed` False)."""
    r = _ledger_rows(w, scope, agents=False).c
    answered = [r.outcome == "ok", r.latency_ms.is_not(None)]
    bucket = forms.latency_bucket(r.latency_ms)
    if bucket is None:
        return sa.select(r.provider, r.model, r.latency_ms).where(*answered)
    bucket = bucket.label("bucket")
    return (
        sa.select(r.provider, r.model, bucket, sa.func.count())
        .where(*answered)
        .group_by(r.provider, r.model, bucket)
    )


def hourly_query(w: Window, scope: Scope) -> Any:
    h = usage_hourly.c
    keys = [h.tenant_id, h.hour, h.provider, h.model, *([h.agent] if w.agents else [])]
    return (
        sa.select(
            *keys,
            *([] if w.agents else [sa.literal("").label("agent")]),
            *[sa.func.sum(h[c]).label(c) for c in (*COUNTERS, "throttled_calls")],
            sa.func.sum(h.cost_usd).label("cost_usd"),
        )
        .where(h.hour >= w.start, h.hour < w.current, *within(h.tenant_id, scope))
        .group_by(*keys)
    )


def latency_query(w: Window, scope: Scope) -> Any:
    h = latency_hourly.c
    return (
        sa.select(h.provider, h.model, h.bucket, sa.func.sum(h.calls))
        .where(h.hour >= w.start, h.hour < w.current, *within(h.tenant_id, scope))
        .group_by(h.provider, h.model, h.bucket)
    )


@dataclass
class Ledger:
    """A window's usage and latencies, before the overview groups them."""

    spend: dict[SpendKey, Sums]
    latency: Counter[LatencyKey]


async def read(engine: AsyncEngine, w: Window, scope: Scope) -> Ledger:
    """The window's usage by `SpendKey` and answered calls by `LatencyKey`, its
    statements in one snapshot (a fold committing between them would move calls from the
    ledger's part to the rollups': counted twice, or not at all)."""
    async with engine.connect() as conn:
        forms = forms_for(conn)
        await forms.snapshot(conn)
        await forms.by_index(conn)
        return await _read(conn, w, scope)


async def _read(conn: AsyncConnection, w: Window, scope: Scope) -> Ledger:
    out = Ledger({}, Counter())
    forms = forms_for(conn)
    usage = [ledger_query(w, scope, forms)]
    if w.start < w.current:
        usage.append(hourly_query(w, scope))
        for provider, model, bucket, n in (await conn.execute(latency_query(w, scope))).all():
            out.latency[(provider, model, int(bucket))] += int(n)
    for stmt in usage:
        for r in (await conn.execute(stmt)).all():
            m = r._mapping
            hour = hour_of(utc(_as_datetime(m["hour"])) or EPOCH)
            agent = (m["agent"] or "")[:100]
            key = (m["tenant_id"], hour, m["provider"], m["model"], agent)
            _add(out.spend.setdefault(key, Sums()), m)
    latencies = ledger_latency_query(w, scope, forms)
    for row in (await conn.execute(latencies)).all():
        if len(row) == 4:  # (bucketed by the database)
            out.latency[(row[0], row[1], int(row[2]))] += int(row[3])
        else:
            out.latency[(row[0], row[1], bucket_of(float(row[2])))] += 1
    return out


def _add(into: Sums, m: Any) -> None:
    for column in (*COUNTERS, "throttled_calls"):
        setattr(into, column, getattr(into, column) + int(m[column] or 0))
    if m["cost_usd"] is not None:
        into.cost_usd = (into.cost_usd or 0.0) + float(m["cost_usd"])


def _as_datetime(value: Any) -> datetime:
    return datetime.fromisoformat(value) if isinstance(value, str) else value
