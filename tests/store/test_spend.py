"""The overview's reads (app.store.spend) against every call ever made: a day's usage by
model equals /v1/usage's report of that day (`usage_totals`), whatever was folded or
deleted; latency percentiles hold the ledger's exact ones within their bucket; 429s,
agents and tenants land where their calls' runs say (both databases)."""

from __future__ import annotations

import asyncio
import math
from collections import Counter
from datetime import timedelta
from typing import Any

import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.core.events import EventType
from app.core.lifecycle import Transition
from app.core.scope import Scope
from app.store import latency
from app.store.backend.engines import create_engine
from app.store.changes import Change
from app.store.fold import fold
from app.store.run_records import NewEvent
from app.store.runs import RunStore
from app.store.schema import model_calls
from app.store.spend import Ledger, Window, read
from app.store.usage import usage_totals
from tests.helpers import CLEAN_TABLES, bare_run
from tests.store.test_usage import DAYS, MODELS, MONTH, STEP, World, _apply


async def _agent_run(store: RunStore, run_id: str, minutes: int, agent: str, tenant: str) -> None:
    config: dict[str, Any] = {"agent": {"name": agent, "version": 1}} if agent else {}
    async with store.engine.begin() as conn:
        at = MONTH + timedelta(minutes=minutes)
        await bare_run(conn, run_id, at, tenant=tenant, config=config)


async def _call(
    store: RunStore, run_id: str, at: Any, model: int, status: int | None, ms: float
) -> None:
    provider, name = MODELS[model]
    data: dict[str, Any] = {"turn": 1, "provider": provider, "model": name}
    data["usage"] = {"input_tokens": 3, "output_tokens": 4, "total_tokens": 7}
    data["cost_usd"] = 0.001
    if status is None:
        data["latency_ms"] = ms
        event = NewEvent(EventType.MODEL_CALLED, data)
    else:
        event = NewEvent(EventType.MODEL_FAILED, {**data, "status": status, "message": "no"})
    changed, _ = await store.apply(
        run_id, Change(Transition.BILL, events=(event,)), at, scope=Scope.ALL
    )
    assert changed is not None


def by_model(ledger: Ledger, start: Any, end: Any) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for (_, hour, provider, model, _), s in ledger.spend.items():
        if start <= hour < end:
            into = out.setdefault(f"{provider}:{model}", Counter())
            for k in ("calls", "failed_calls", "input_tokens", "output_tokens", "total_tokens"):
                into[k] += getattr(s, k)
            into["cost_millis"] += round((s.cost_usd or 0.0) * 1000)
    return {k: dict(v) for k, v in out.items()}


def reported(totals: dict[str, Any]) -> dict[str, dict[str, Any]]:
    keys = ("calls", "failed_calls", "input_tokens", "output_tokens", "total_tokens")
    return {
        model: {
            **{k: v[k] for k in keys},
            "cost_millis": round((v["cost_usd"] or 0.0) * 1000),
        }
        for model, v in totals["by_model"].items()
    }


@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
@given(steps=st.lists(STEP, max_size=50), folds=st.booleans())
def test_each_days_spend_by_model_is_the_usage_report_of_that_day(
    database_url: str, steps: list[tuple[Any, ...]], folds: bool
) -> None:
    async def scenario() -> None:
        store = RunStore(create_engine(database_url))
        try:
            async with store.engine.begin() as conn:
                for table in CLEAN_TABLES:
                    await conn.exec_driver_sql(f"DELETE FROM {table}")
            world = World()
            for n, step in enumerate(steps):
                await _apply(store, world, step, n)
            if folds:
                await fold(store.engine)
            end = MONTH + timedelta(days=DAYS + 2)
            ledger = await read(store.engine, Window(MONTH, end), Scope.ALL)
            for day in range(DAYS + 2):
                start = MONTH + timedelta(days=day)
                async with store.engine.connect() as conn:
                    totals = await usage_totals(conn, start, start + timedelta(days=1), Scope.ALL)
                want = {m: v for m, v in reported(totals).items() if v["calls"]}
                assert by_model(ledger, start, start + timedelta(days=1)) == want, day
        finally:
            await store.aclose()

    asyncio.run(scenario())


async def test_latency_percentiles_hold_the_ledgers_within_their_bucket(store: RunStore) -> None:
    """Answered calls' latencies, some folded and some not, some in the current hour: each
    model's p50 and p95 bucket holds the ledger's exact nearest-rank percentile."""
    # (4, 64 and 1024 ms open their buckets: the database's logarithm and Python's agree.)
    latencies = [3.0, 40.5, 41.0, 120.0, 250.0, 251.0, 999.0, 1500.0, 7000.0, 0.2, 4.0]
    latencies += [64.0, 1024.0, 1024.0]
    for i in range(4):
        await _agent_run(store, f"r{i}", 0, "", "default")
    for n, ms in enumerate(latencies):
        at = MONTH + timedelta(hours=1 + n % 3, minutes=n)
        await _call(store, f"r{n % 4}", at, n % 2, None, ms)
    await _call(store, "r0", MONTH + timedelta(hours=2), 0, 500, 10.0)  # (no latency counted)
    end = MONTH + timedelta(hours=3, minutes=30)  # the third hour is the current one
    histograms = []
    for step in ("unfolded", "folded"):
        ledger = await read(store.engine, Window(MONTH, end), Scope.ALL)
        histograms.append(ledger.latency)
        async with store.engine.connect() as conn:
            rows = (
                await conn.execute(
                    sa.select(
                        model_calls.c.provider, model_calls.c.model, model_calls.c.latency_ms
                    ).where(model_calls.c.outcome == "ok", model_calls.c.created_at < end)
                )
            ).all()
        exact: dict[tuple[str, str], list[float]] = {}
        for provider, model, ms in rows:
            exact.setdefault((provider, model), []).append(float(ms))
        assert sum(len(v) for v in exact.values()) == len(latencies)
        for (provider, model), values in exact.items():
            counts = {
                b: n for (p, m, b), n in ledger.latency.items() if (p, m) == (provider, model)
            }
            values.sort()
            for q in (0.5, 0.95):
                want = values[max(1, math.ceil(q * len(values))) - 1]
                got = latency.quantile(counts, q)
                assert got is not None and got.low <= want < got.high, (step, q, want, got)
        if step == "folded":
            assert histograms[0] == histograms[1]  # (bucketed by SQL, then by the fold)
            break
        # Everything finished and folded: the same answers from the rollups.
        for i in range(4):
            for transition in (Transition.CLAIM, Transition.COMPLETE):
                await store.apply(f"r{i}", Change(transition), end, scope=Scope.ALL)
        await fold(store.engine)


async def test_429s_agents_and_tenants_are_where_their_calls_runs_are(store: RunStore) -> None:
    await _agent_run(store, "a", 0, "support", "default")
    await _agent_run(store, "b", 0, "", "acme")
    at = MONTH + timedelta(minutes=5)
    await _call(store, "a", at, 0, 429, 0)
    await _call(store, "a", at, 0, 429, 0)
    await _call(store, "a", at, 0, None, 12.0)
    await _call(store, "b", at, 1, 503, 0)
    window = Window(MONTH, MONTH + timedelta(hours=2))
    for folded in (False, True):
        if folded:
            for run_id in ("a", "b"):
                for transition in (Transition.CLAIM, Transition.COMPLETE):
                    await store.apply(run_id, Change(transition), at, scope=Scope.ALL)
            await fold(store.engine)
        everyone = await read(store.engine, window, Scope.ALL)
        keys = {f"{k[0]}/{k[4]}": v for k, v in everyone.spend.items()}
        assert set(keys) == {"default/support", "acme/"}
        support = keys["default/support"]
        assert (support.calls, support.failed_calls, support.throttled_calls) == (3, 2, 2)
        assert (keys["acme/"].failed_calls, keys["acme/"].throttled_calls) == (1, 0)
        plain = await read(store.engine, Window(window.start, window.end, agents=False), Scope.ALL)
        assert {f"{k[0]}/{k[4]}" for k in plain.spend} == {"default/", "acme/"}
        acme = await read(store.engine, window, Scope.of("acme"))
        assert [k[0] for k in acme.spend] == ["acme"] and not acme.latency
        assert sum(everyone.latency.values()) == 1


def test_latency_buckets_are_ordered_and_cover_every_latency() -> None:
    assert latency.bucket_of(0) == latency.bucket_of(-1) == latency.bucket_of(float("nan")) == 0
    assert latency.bucket_of(1e12) == latency.LAST
    previous = 0
    for ms in (0.5, 1.0, 1.1, 2.0, 10.0, 100.0, 1000.0, 60_000.0, 3_600_000.0):
        b = latency.bucket_of(ms)
        assert b >= previous and latency.lower(b) <= max(ms, 0.0) < latency.upper(b), ms
        previous = b
    assert latency.quantile({}, 0.5) is None
    assert latency.quantile({5: 1, 9: 1}, 0.5) == latency.Quantile(
        latency.lower(5), latency.upper(5)
    )
