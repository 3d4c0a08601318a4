"""The shared limits' gauges on /metrics (`app.store.hooks.Hooks.gauges`): each key's
use of its last minute, and the queued runs waiting for each key."""

from __future__ import annotations

from datetime import datetime

from prometheus_client.core import GaugeMetricFamily, Metric

from app import metrics as m
from app.limits.shared import shared
from app.store import gauges
from app.store.runs import RunStore


async def flow_gauges(store: RunStore, now: datetime) -> list[Metric]:
    """The families `agentrun_flow_used` and `agentrun_flow_waiting` at `now`."""
    limited = await shared(store).flow.buckets(now.timestamp())
    waiting = await gauges.throttled(store.engine, now)
    used = GaugeMetricFamily(*m.FLOW_USED, labels=["key", "limit"])
    for b in limited:
        used.add_metric([b.key, "requests_per_minute"], b.requests_used)
        used.add_metric([b.key, "tokens_per_minute"], b.tokens_used)
        if b.calls_in_flight is not None:
            used.add_metric([b.key, "max_concurrent"], b.calls_in_flight)
    throttled = GaugeMetricFamily(*m.FLOW_WAITING, labels=["key"])
    for key, n in sorted(waiting.items()):
        throttled.add_metric([key], n)
    return [used, throttled]
