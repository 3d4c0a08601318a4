"""The service's Prometheus vocabulary: every metric `/metrics` shows is named here, once.

Counters and histograms are kept by the process that does the work (a worker counts its
model calls, claims and webhook attempts; an API process its tool-call leases; every
process the transitions it applies), so a scrape reads none of them from the database.
Where one host runs several processes (`agentrun api` beside `agentrun worker`s), set
`PROMETHEUS_MULTIPROC_DIR` to an empty directory shared by all of them: prometheus_client
then keeps each process's values in a file there and the API's `/metrics` adds up every
process's files (`ProcessMetrics`). Without it a process shows its own values, and a
worker serves them itself with `agentrun worker --metrics-port` (`serve`).

Gauges that need the database (`DB_GAUGES`) are read at scrape time by `app.api.metrics`,
from statements served by an index (`app.store.gauges`): their cost follows the runs in
flight, never the runs kept.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from datetime import datetime
from typing import TYPE_CHECKING

from prometheus_client import REGISTRY, Counter, Histogram, disable_created_metrics
from prometheus_client.core import Metric
from prometheus_client.multiprocess import MultiProcessCollector

from app.core.lifecycle import OutboxStatus, RunStatus, Transition

if TYPE_CHECKING:
    from wsgiref.simple_server import WSGIServer

# `_created` series double every counter's output and no dashboard here uses them.
disable_created_metrics()  # type: ignore[no-untyped-call]

#: Seconds: model calls, webhook attempts, claims.
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
#: Seconds a suspended run has waited.
AGE_BUCKETS = (60.0, 300.0, 900.0, 3600.0, 6 * 3600.0, 86400.0, 7 * 86400.0)

# --- kept by the processes (cumulative since each process started) --------------------------

MODEL_CALLS = Counter(
    "agentrun_model_calls",
    "Model call attempts by provider and outcome (ok | error), as the usage ledger counts them",
    ["provider", "outcome"],
)
MODEL_CALL_LATENCY = Histogram(
    "agentrun_model_call_latency_seconds",
    "Latency of answered model calls",
    ["provider"],
    buckets=LATENCY_BUCKETS,
)
CLAIM_LATENCY = Histogram(
    "agentrun_claim_latency_seconds",
    "From a run becoming due (its available_at) to a worker claiming it",
    buckets=LATENCY_BUCKETS,
)
TRANSITIONS = Counter(
    "agentrun_transitions",
    "Run transitions applied, by transition and the status the run is in after it",
    ["transition", "status"],
)
SCHEDULE_TICKS = Counter(
    "agentrun_schedule_ticks",
    "Schedule ticks handled, by outcome (started | skipped | buffered | missed | failed)",
    ["outcome"],
)
SCHEDULE_LAG = Histogram(
    "agentrun_schedule_lag_seconds",
    "From a cron tick's scheduled time to its run's creation, for the ticks fired on their "
    "own time (jitter and a late worker included; not triggers, backfills, buffered ticks)",
    buckets=(0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0, 3600.0),
)
WEBHOOK_ATTEMPTS = Counter(
    "agentrun_webhook_attempts",
    "Webhook delivery attempts by outcome (delivered | error)",
    ["outcome"],
)
WEBHOOK_ATTEMPT_LATENCY = Histogram(
    "agentrun_webhook_attempt_latency_seconds",
    "Latency of webhook delivery attempts (the destination check and the POST)",
    buckets=LATENCY_BUCKETS,
)
WEBHOOK_DELIVERIES_ENDED = Counter(
    "agentrun_webhook_deliveries_ended",
    "Webhook deliveries that ended: delivered, or failed (no attempt left)",
    ["outcome"],
)
TOOL_CALL_LEASES = Counter(
    "agentrun_tool_call_leases",
    "Tool calls leased by queue executors (lease: first, or again after one lapsed)",
    ["queue", "lease"],
)
TOOL_CALL_LEASES_LOST = Counter(
    "agentrun_tool_call_leases_lost",
    "Heartbeats and results refused because the lease had moved on",
    ["queue"],
)
FLOW_WAITS = Counter(
    "agentrun_flow_waits",
    "Model calls a shared limit deferred (the run throttled back to the queue)",
    ["key", "limit"],
)
FLOW_PROVIDER_429 = Counter(
    "agentrun_flow_provider_429",
    "Provider 429s fed to a shared limit (every worker's calls on the key slow down)",
    ["key"],
)

# --- read from the database at scrape time (app.api.metrics) --------------------------------

RUNS = ("agentrun_runs", "Runs by status")
QUEUE_DEPTH = ("agentrun_queue_depth", "Queued runs that are due now")
SUSPENDED_AGE = (
    "agentrun_suspended_run_age_seconds",
    "How long suspended runs have been waiting (since their last change)",
)
OLDEST_SUSPENDED = (
    "agentrun_oldest_suspended_run_age_seconds",
    "How long the longest-waiting suspended run has waited (0: none)",
)
WEBHOOK_DELIVERIES = (
    "agentrun_webhook_deliveries",
    "Webhook deliveries waiting to be sent (pending) or given up (failed)",
)
TOOL_CALLS_QUEUED = (
    "agentrun_tool_calls_queued",
    "Unanswered tool calls of a queue that no live lease holds (never leased, or lapsed)",
)
TOOL_CALLS_LEASED = (
    "agentrun_tool_calls_leased",
    "Tool calls of a queue under a live lease (an executor is running them)",
)
FLOW_USED = (
    "agentrun_flow_used",
    "A shared limit key's use: reservations of the last minute (requests, tokens) or "
    "calls in flight (max_concurrent)",
)
FLOW_WAITING = (
    "agentrun_flow_waiting_runs",
    "Queued runs a shared limit deferred, by the key they wait for",
)
DB_GAUGES = (
    RUNS,
    QUEUE_DEPTH,
    SUSPENDED_AGE,
    OLDEST_SUSPENDED,
    WEBHOOK_DELIVERIES,
    TOOL_CALLS_QUEUED,
    TOOL_CALLS_LEASED,
    FLOW_USED,
    FLOW_WAITING,
)


# --- recording ------------------------------------------------------------------------------


def model_call(provider: str, ok: bool, seconds: float) -> None:
    MODEL_CALLS.labels(provider, "ok" if ok else "error").inc()
    if ok:
        MODEL_CALL_LATENCY.labels(provider).observe(seconds)


def flow_wait(key: str, limit: str) -> None:
    FLOW_WAITS.labels(key, limit).inc()


def flow_429(keys: Iterable[str]) -> None:
    for key in keys:
        FLOW_PROVIDER_429.labels(key).inc()


def transition(name: str, status: str) -> None:
    TRANSITIONS.labels(name, status).inc()


def claimed(due: Iterable[datetime], now: datetime) -> None:
    """Runs claimed at `now` that became due at `due` (their `available_at`)."""
    for at in due:
        TRANSITIONS.labels(Transition.CLAIM.value, RunStatus.RUNNING.value).inc()
        CLAIM_LATENCY.observe(max(0.0, (now - at).total_seconds()))


def webhook_attempt(delivered: bool, seconds: float, *, gave_up: bool) -> None:
    WEBHOOK_ATTEMPTS.labels(OutboxStatus.DELIVERED.value if delivered else "error").inc()
    WEBHOOK_ATTEMPT_LATENCY.observe(seconds)
    if delivered or gave_up:
        ended = OutboxStatus.DELIVERED if delivered else OutboxStatus.FAILED
        WEBHOOK_DELIVERIES_ENDED.labels(ended.value).inc()


def tool_calls_leased(queue: str, attempts: Iterable[int]) -> None:
    """Calls just leased, by their lease count (1: the first lease)."""
    for n in attempts:
        TOOL_CALL_LEASES.labels(queue, "first" if n <= 1 else "again").inc()


def tool_call_lease_lost(queue: str) -> None:
    TOOL_CALL_LEASES_LOST.labels(queue).inc()


# --- exposition -----------------------------------------------------------------------------


def multiprocess_dir() -> str | None:
    """The directory shared by this host's processes, when there is one."""
    return os.environ.get("PROMETHEUS_MULTIPROC_DIR") or None


class ProcessMetrics:
    """A collector of the kept metrics: every process's on this host (multiprocess mode),
    else this process's own."""

    def collect(self) -> Iterator[Metric]:
        path = multiprocess_dir()
        if path is None:
            yield from REGISTRY.collect()
        else:
            collector = MultiProcessCollector(None, path=path)  # type: ignore[no-untyped-call]
            yield from collector.collect()  # type: ignore[no-untyped-call]


def serve(port: int, host: str = "127.0.0.1") -> WSGIServer:
    """Serve this process's kept metrics on http://host:port/ (a daemon thread); `agentrun
    worker --metrics-port`."""
    from prometheus_client import start_http_server

    server, _ = start_http_server(port, host, registry=REGISTRY)
    return server
