"""/metrics shows the shared limits: each key's use of its last minute
(`agentrun_flow_used`) and the queued runs a limit deferred (`agentrun_flow_waiting_runs`),
read from the database at scrape time, on both databases."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from prometheus_client.parser import text_string_to_metric_families

from app.api import metrics
from app.core.lifecycle import RunStatus
from app.limits.shared import shared
from app.limits.slots_sql import Slot
from app.service.reads import RunReads
from app.service.runs import RunService
from app.settings import Settings
from app.store.runs import RunStore
from tests.helpers import run_body
from tests.limits.test_flow import claim_and_drive, driver, limited, model_doc


def samples(text: bytes, family: str) -> dict[tuple[tuple[str, str], ...], float]:
    out = {}
    for fam in text_string_to_metric_families(text.decode()):
        if fam.name == family:
            for s in fam.samples:
                out[tuple(sorted(s.labels.items()))] = s.value
    return out


async def test_a_throttled_run_and_its_keys_use_are_on_metrics(
    store: RunStore, settings: Settings
) -> None:
    model = f"m-{uuid.uuid4().hex[:8]}"
    key = f"model:scripted/{model}"
    profiles = limited("scripted", model, requests_per_minute=2)
    service = RunService(store, settings)
    for _ in range(3):
        await service.create_run(run_body(model=model_doc(model)))
    d = await driver(store, settings, profiles)
    now = datetime.now(UTC)
    outcomes = [await claim_and_drive(d, store, now) for _ in range(3)]
    # (a bucket holds 90 % of a minute: one of the three goes, two wait for their turns)
    assert outcomes.count(RunStatus.QUEUED) == 2

    text = await metrics.render(RunReads(store), datetime.now(UTC))
    waiting = samples(text, "agentrun_flow_waiting_runs")
    assert waiting[(("key", key),)] == 2
    used = samples(text, "agentrun_flow_used")
    # Three reservations of a 2-a-minute key: all three are within the last minute's worth.
    assert 2.5 < used[(("key", key), ("limit", "requests_per_minute"))] <= 3
    assert used[(("key", key), ("limit", "tokens_per_minute"))] == 0


async def test_the_calls_in_flight_on_a_max_concurrent_key_are_on_metrics(
    store: RunStore,
) -> None:
    key = f"model:scripted/m-{uuid.uuid4().hex[:8]}"
    idle = f"tenant:t-{uuid.uuid4().hex[:8]}"
    at = datetime.now(UTC).timestamp()
    for holder in ("a", "b"):
        assert (await shared(store).slots.take([Slot(key, 3)], holder, holder, at, at + 30)).held
    assert (await shared(store).slots.take([Slot(idle, 1)], "c", "c", at, at + 30)).held
    await shared(store).slots.release([idle], "c", datetime.now(UTC))
    # (a slot whose worker died counts no more once it expired)
    assert (await shared(store).slots.take([Slot(key, 3)], "gone", "gone", at - 60, at - 1)).held

    used = samples(await metrics.render(RunReads(store), datetime.now(UTC)), "agentrun_flow_used")
    assert used[(("key", key), ("limit", "max_concurrent"))] == 2
    assert used[(("key", idle), ("limit", "max_concurrent"))] == 0
