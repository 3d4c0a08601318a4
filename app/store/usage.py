"""The usage ledger's totals for /v1/usage: `model_calls` rows of runs still stored, plus
the daily aggregates retention kept of the runs it deleted."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from app.store.retention import add_daily, daily_usage
from app.store.schema import model_calls, runs


async def usage_totals(conn: AsyncConnection, start: datetime, end: datetime) -> dict[str, Any]:
    """Sums of the usage ledger in [start, end): overall, by run status, by model."""
    sums = [
        sa.func.count().label("calls"),
        sa.func.count().filter(model_calls.c.outcome == "error").label("failed_calls"),
        *[
            sa.func.coalesce(sa.func.sum(model_calls.c[c]), 0).label(c)
            for c in (
                "input_tokens",
                "output_tokens",
                "cached_input_tokens",
                "reasoning_tokens",
                "total_tokens",
            )
        ],
        sa.func.sum(model_calls.c.cost_usd).label("cost_usd"),
    ]
    in_range = sa.and_(model_calls.c.created_at >= start, model_calls.c.created_at < end)
    joined = model_calls.join(runs, runs.c.id == model_calls.c.run_id)
    model_key = model_calls.c.provider + ":" + model_calls.c.model
    total = (await conn.execute(sa.select(*sums).where(in_range))).one()
    by_status = (
        await conn.execute(
            sa.select(runs.c.status, *sums)
            .select_from(joined)
            .where(in_range)
            .group_by(runs.c.status)
        )
    ).all()
    by_model = (
        await conn.execute(
            sa.select(model_key.label("key"), *sums).where(in_range).group_by(model_key)
        )
    ).all()
    kept = await daily_usage(conn, start, end)  # of runs retention deleted

    def clean(row: Any) -> dict[str, Any]:
        m = dict(row._mapping)
        m.pop("status", None)
        m.pop("key", None)
        for k, v in m.items():
            if k != "cost_usd":
                m[k] = int(v or 0)
        m["cost_usd"] = None if m["cost_usd"] is None else float(m["cost_usd"])
        return m

    return add_daily(
        {
            **clean(total),
            "by_status": {r.status: clean(r) for r in by_status},
            "by_model": {r.key: clean(r) for r in by_model},
        },
        kept,
    )
