"""The counters and histograms a worker keeps (app.metrics): model calls as the ledger
counts them, claims and their latency, transitions, webhook attempts. They are this
process's, cumulative over the test session, so each test compares before and after."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from app.core.lifecycle import RunStatus
from app.core.scope import Scope
from app.service.runs import RunService
from app.store.runs import RunStore
from tests.conftest import make_settings
from tests.helpers import results_for, run_body, running_worker, wait_for, wait_status
from tests.metrics_support import counted
from tests.mocks.receiver import SECRET, Receiver, webhook_receiver

SAMPLES = {
    "ok": ("agentrun_model_calls_total", {"provider": "scripted", "outcome": "ok"}),
    "error": ("agentrun_model_calls_total", {"provider": "scripted", "outcome": "error"}),
    "latency": ("agentrun_model_call_latency_seconds_count", {"provider": "scripted"}),
    "claims": ("agentrun_claim_latency_seconds_count", {}),
    "created": ("agentrun_transitions_total", {"transition": "create", "status": "queued"}),
    "claimed": ("agentrun_transitions_total", {"transition": "claim", "status": "running"}),
    "backoff": ("agentrun_transitions_total", {"transition": "backoff", "status": "queued"}),
    "suspended": (
        "agentrun_transitions_total",
        {"transition": "suspend", "status": "requires_action"},
    ),
    "resumed": ("agentrun_transitions_total", {"transition": "resume", "status": "queued"}),
    "completed": ("agentrun_transitions_total", {"transition": "complete", "status": "completed"}),
    "delivered": ("agentrun_webhook_attempts_total", {"outcome": "delivered"}),
    "refused": ("agentrun_webhook_attempts_total", {"outcome": "error"}),
    "attempt_latency": ("agentrun_webhook_attempt_latency_seconds_count", {}),
    "ended_delivered": ("agentrun_webhook_deliveries_ended_total", {"outcome": "delivered"}),
    "ended_failed": ("agentrun_webhook_deliveries_ended_total", {"outcome": "failed"}),
}


def snapshot() -> dict[str, float]:
    return {key: counted(name, **labels) for key, (name, labels) in SAMPLES.items()}


def grown(before: dict[str, float]) -> dict[str, float]:
    after = snapshot()
    return {key: after[key] - before[key] for key in after if after[key] != before[key]}


@pytest.mark.parametrize("stream", [False, True])
async def test_a_worker_counts_calls_claims_and_transitions(
    store: RunStore, database_url: str, stream: bool
) -> None:
    settings = make_settings(database_url)
    service = RunService(store, settings)
    model = {**run_body().model.model_dump(exclude_none=True), "fail_times": 1}
    before = snapshot()
    view, _ = await service.create_run(run_body(model=model, stream=stream))
    async with running_worker(store, settings):
        suspended = await wait_status(service, view.record.id, RunStatus.REQUIRES_ACTION)
        await service.submit_tool_results(
            results_for(suspended), run_id=view.record.id, scope=Scope.ALL
        )
        await wait_status(service, view.record.id, RunStatus.COMPLETED)
    # Each of the two model calls failed once (a 503, backed off) and then answered.
    assert grown(before) == {
        "ok": 2,
        "error": 2,
        "latency": 2,
        "claims": 4,
        "created": 1,
        "claimed": 4,
        "backoff": 2,
        "suspended": 1,
        "resumed": 1,
        "completed": 1,
    }


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with webhook_receiver() as r:
        yield r


async def test_a_worker_counts_webhook_attempts_and_their_ends(
    store: RunStore, database_url: str, receiver: Receiver
) -> None:
    settings = make_settings(
        database_url, webhook_secret=SECRET, webhook_allow_private=True, webhook_max_attempts=1
    )
    service = RunService(store, settings)
    before = snapshot()
    await service.create_run(run_body(webhook={"url": receiver.url}))
    # A destination that refuses connections: one attempt, then the delivery fails.
    await service.create_run(run_body(webhook={"url": "http://127.0.0.1:9/hook"}))
    async with running_worker(store, settings):
        await wait_for(lambda: asyncio.sleep(0, grown(before)), lambda g: g.get("refused") == 1)
        await wait_for(lambda: asyncio.sleep(0, receiver.of_type("run.requires_action")), bool)
        await wait_for(lambda: asyncio.sleep(0, grown(before)), lambda g: "delivered" in g)
    got = grown(before)
    sent = len(receiver.of_type("run.requires_action"))
    assert got["delivered"] == got["ended_delivered"] == sent == 1
    assert got["refused"] == got["ended_failed"] == 1
    assert got["attempt_latency"] == 2
