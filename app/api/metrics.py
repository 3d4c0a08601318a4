"""`/metrics` in the Prometheus text format, computed from the database at scrape time, so
one scrape of any API process sees the work of every worker process."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)

from app.core.lifecycle import OutboxStatus, RunStatus
from app.service.reads import RunReads

AGE_BUCKETS = (60.0, 300.0, 900.0, 3600.0, 6 * 3600.0, 86400.0, 7 * 86400.0)
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


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


async def render(reads: RunReads) -> bytes:
    now = datetime.now(UTC)
    m = await reads.metrics(now)
    families: list[Metric] = []
    g = GaugeMetricFamily("agentrun_runs", "Runs by status", labels=["status"])
    for status in RunStatus:
        g.add_metric([status.value], m.by_status.get(status.value, 0))
    families.append(g)
    families.append(
        GaugeMetricFamily("agentrun_queue_depth", "Queued runs that are due now", value=m.depth)
    )
    ages = [(now - t).total_seconds() for t in m.suspended]
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
    for provider, outcome, count in m.calls:
        c.add_metric([provider, outcome], count)
    families.append(c)
    per_provider: dict[str, list[float]] = defaultdict(list)
    for provider, ms in m.latencies:
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
    states: dict[str, int] = dict(m.deliveries)
    for state in OutboxStatus:
        d.add_metric([state.value], states.get(state.value, 0))
    families.append(d)
    a = CounterMetricFamily(
        "agentrun_webhook_attempts", "Webhook delivery attempts by outcome", labels=["outcome"]
    )
    for outcome, count in m.attempts:
        a.add_metric([outcome], count)
    families.append(a)
    families.append(
        histogram(
            "agentrun_claim_latency_seconds",
            "From a run becoming due to a worker claiming it (last hour)",
            {"": claim_latencies(m.recent)},
            None,
            LATENCY_BUCKETS,
        )
    )
    queued = GaugeMetricFamily(
        "agentrun_tool_calls_queued",
        "Unanswered tool calls of a queue that no live lease holds (never leased, or lapsed)",
        labels=["queue"],
    )
    leased = GaugeMetricFamily(
        "agentrun_tool_calls_leased",
        "Tool calls of a queue under a live lease (an executor is running them)",
        labels=["queue"],
    )
    for depth in await reads.queue_depths(now):
        queued.add_metric([depth.queue], depth.queued)
        leased.add_metric([depth.queue], depth.leased)
    families += [queued, leased]
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
