"""`/metrics` in the Prometheus text format: the counters and histograms the processes
keep (`app.metrics`: this host's processes in multiprocess mode, else this process's),
then the gauges that need the database, each read from an index at scrape time."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import cast

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily, HistogramMetricFamily, Metric

from app import metrics as m
from app.core.lifecycle import RunStatus
from app.core.scope import Scope
from app.service.reads import RunReads


class Snapshot:
    def __init__(self, families: list[Metric]) -> None:
        self.families = families

    def collect(self) -> Iterator[Metric]:
        yield from self.families


async def database_gauges(reads: RunReads, now: datetime) -> list[Metric]:
    counts = await reads.count_by_status(Scope.ALL)  # (deployment-wide gauges)
    g = await reads.gauges(now, m.AGE_BUCKETS)
    runs = GaugeMetricFamily(*m.RUNS, labels=["status"])
    for status in RunStatus:
        runs.add_metric([status.value], counts.get(status.value, 0))
    ages = HistogramMetricFamily(*m.SUSPENDED_AGE)
    buckets = [(str(edge), n) for edge, n in zip(m.AGE_BUCKETS, g.suspended_within, strict=True)]
    ages.add_metric([], [*buckets, ("+Inf", g.suspended)], sum_value=g.suspended_seconds)
    oldest = 0.0 if g.oldest_suspended is None else (now - g.oldest_suspended).total_seconds()
    deliveries = GaugeMetricFamily(*m.WEBHOOK_DELIVERIES, labels=["state"])
    for state, n in g.deliveries.items():
        deliveries.add_metric([state], n)
    queued = GaugeMetricFamily(*m.TOOL_CALLS_QUEUED, labels=["queue"])
    leased = GaugeMetricFamily(*m.TOOL_CALLS_LEASED, labels=["queue"])
    for depth in await reads.queue_depths(now):
        queued.add_metric([depth.queue], depth.queued)
        leased.add_metric([depth.queue], depth.leased)
    return [
        runs,
        GaugeMetricFamily(*m.QUEUE_DEPTH, value=g.depth),
        ages,
        GaugeMetricFamily(*m.OLDEST_SUSPENDED, value=max(0.0, oldest)),
        deliveries,
        queued,
        leased,
        *cast(list[Metric], await reads.feature_gauges(now)),  # (the shared limits')
    ]


async def render(reads: RunReads, now: datetime) -> bytes:
    families = await database_gauges(reads, now)
    registry = CollectorRegistry(auto_describe=False)
    registry.register(m.ProcessMetrics())
    registry.register(Snapshot(families))
    return generate_latest(registry)
