"""`/metrics` in the Prometheus text format, computed from the database at scrape time, so
one scrape of any API process sees the work of every worker process."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import sqlalchemy as sa
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)

from app.core.lifecycle import RunStatus
from app.store.runs import RunStore
from app.store.schema import model_calls, run_events, runs, webhook_attempts, webhook_outbox

AGE_BUCKETS = (60.0, 300.0, 900.0, 3600.0, 6 * 3600.0, 86400.0, 7 * 86400.0)
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
QUEUEING_EVENTS = ("run.created", "run.resumed", "run.lease_lost", "run.released", "run.retried")


def histogram(
    name: str,
    doc: str,
    samples: dict[str, list[float]],
    label: str | None,
    buckets: Iterable[float],
) -> HistogramMetricFamily:
    family = HistogramMetricFamily(name, doc, labels=[label] if label else [])
    edges = list(buckets)
    for key, values in sorted(samples.items()):
        counts = [(str(edge), sum(1 for v in values if v <= edge)) for edge in edges]
        counts.append(("+Inf", len(values)))
        family.add_metric([key] if label else [], counts, sum_value=sum(values))
    return family


class Snapshot:
    def __init__(self, families: list[Metric]) -> None:
        self.families = families

    def collect(self) -> Iterator[Metric]:
        yield from self.families


async def render(store: RunStore) -> bytes:
    now = datetime.now(UTC)
    hour_ago = now - timedelta(hours=1)
    async with store.engine.connect() as conn:
        by_status: dict[str, int] = dict(
            (
                await conn.execute(
                    sa.select(runs.c.status, sa.func.count()).group_by(runs.c.status)
                )
            ).all()
        )
        depth = (
            await conn.execute(
                sa.select(sa.func.count()).where(
                    runs.c.status == RunStatus.QUEUED.value, runs.c.available_at <= now
                )
            )
        ).scalar_one()
        suspended = (
            (
                await conn.execute(
                    sa.select(runs.c.updated_at).where(
                        runs.c.status == RunStatus.REQUIRES_ACTION.value
                    )
                )
            )
            .scalars()
            .all()
        )
        calls = (
            await conn.execute(
                sa.select(model_calls.c.provider, model_calls.c.outcome, sa.func.count()).group_by(
                    model_calls.c.provider, model_calls.c.outcome
                )
            )
        ).all()
        latencies = (
            await conn.execute(
                sa.select(model_calls.c.provider, model_calls.c.latency_ms)
                .where(model_calls.c.created_at >= hour_ago, model_calls.c.latency_ms.is_not(None))
                .limit(20000)
            )
        ).all()
        deliveries = (
            await conn.execute(
                sa.select(webhook_outbox.c.status, sa.func.count()).group_by(
                    webhook_outbox.c.status
                )
            )
        ).all()
        outcome = sa.case(
            (webhook_attempts.c.status_code.between(200, 299), "delivered"), else_="error"
        )
        attempts = (await conn.execute(sa.select(outcome, sa.func.count()).group_by(outcome))).all()
        recent = (
            await conn.execute(
                sa.select(run_events.c.run_id, run_events.c.type, run_events.c.created_at)
                .where(
                    run_events.c.created_at >= hour_ago,
                    run_events.c.type.in_([*QUEUEING_EVENTS, "run.claimed"]),
                )
                .order_by(run_events.c.run_id, run_events.c.seq)
                .limit(50000)
            )
        ).all()

    families: list[Metric] = []
    g = GaugeMetricFamily("agentrun_runs", "Runs by status", labels=["status"])
    for status in RunStatus:
        g.add_metric([status.value], by_status.get(status.value, 0))
    families.append(g)
    families.append(
        GaugeMetricFamily("agentrun_queue_depth", "Queued runs that are due now", value=depth)
    )
    ages = [(now - (t if t.tzinfo else t.replace(tzinfo=UTC))).total_seconds() for t in suspended]
    families.append(
        histogram(
            "agentrun_suspended_run_age_seconds",
            "How long suspended runs have been waiting for their tool results",
            {"": ages},
            None,
            AGE_BUCKETS,
        )
    )
    c = CounterMetricFamily(
        "agentrun_model_calls",
        "Model call attempts by provider and outcome",
        labels=["provider", "outcome"],
    )
    for provider, outcome, count in calls:
        c.add_metric([provider, outcome], count)
    families.append(c)
    per_provider: dict[str, list[float]] = defaultdict(list)
    for provider, ms in latencies:
        per_provider[provider].append(ms / 1000)
    families.append(
        histogram(
            "agentrun_model_call_latency_seconds",
            "Model call latency over the last hour",
            per_provider,
            "provider",
            LATENCY_BUCKETS,
        )
    )
    d = GaugeMetricFamily(
        "agentrun_webhook_deliveries", "Webhook deliveries by state", labels=["state"]
    )
    states: dict[str, int] = dict(deliveries)
    for state in ("pending", "delivered", "failed"):
        d.add_metric([state], states.get(state, 0))
    families.append(d)
    a = CounterMetricFamily(
        "agentrun_webhook_attempts", "Webhook delivery attempts by outcome", labels=["outcome"]
    )
    for outcome, count in attempts:
        a.add_metric([outcome], count)
    families.append(a)
    families.append(
        histogram(
            "agentrun_claim_latency_seconds",
            "From a run becoming due to a worker claiming it (last hour)",
            {"": claim_latencies(recent)},
            None,
            LATENCY_BUCKETS,
        )
    )
    registry = CollectorRegistry()
    registry.register(Snapshot(families))
    return generate_latest(registry)


def claim_latencies(rows: Iterable[tuple[str, str, Any]]) -> list[float]:
    out: list[float] = []
    pending: dict[str, Any] = {}
    for run_id, kind, at in rows:
        if kind == "run.claimed":
            if run_id in pending:
                out.append(max(0.0, (at - pending.pop(run_id)).total_seconds()))
        else:
            pending[run_id] = at
    return out
