"""A provider's 429 with no limit configured (app.limits.rates): the worker that saw it
and every worker told of it draw the run's model key on the shared row from then on;
one told nothing, with nothing configured, sends no statement."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from app.clock import SYSTEM_CLOCK
from app.core.lifecycle import RunStatus
from app.core.scope import Scope
from app.limits.rates import Flow
from app.limits.rates_sql import learned_payload
from app.limits.shared import shared
from app.service.runs import RunService
from app.service.schemas import RunCreate
from app.settings import Settings
from app.store.runs import RunStore
from tests.limits.test_flow import claim_and_drive, counted, driver, script_429
from tests.mocks.server import MockProviderServer
from tests.worker.test_model_params import wire_settings


async def test_a_429_with_nothing_configured_slows_every_worker_on_the_model(
    store: RunStore, settings: Settings, mock: MockProviderServer
) -> None:
    settings = wire_settings(settings, mock)
    model = f"m-{uuid.uuid4().hex[:8]}"
    key = f"model:openai/{model}"
    body = script_429(mock, model, retry_after="3")
    service = RunService(store, settings)
    view, _ = await service.create_run(body)
    second, _ = await service.create_run(body)
    now = datetime.now(UTC)
    d = await driver(store, settings)  # (no profile limits, no tenant limits)
    assert await claim_and_drive(d, store, now) == RunStatus.QUEUED
    assert (await service.get_run(view.record.id, scope=Scope.ALL)).record.waiting_reason[
        "type"
    ] == "backoff"  # type: ignore[index]
    assert (await shared(store).flow.slow_rates())[key] == 60.0  # as the provider said
    # This worker's next call on the model draws on the row: it waits out the hint.
    assert await claim_and_drive(d, store, now) == RunStatus.QUEUED
    reason = (await service.get_run(second.record.id, scope=Scope.ALL)).record.waiting_reason
    assert reason is not None and (reason["type"], reason["key"]) == ("rate_limit", key)


async def test_a_worker_told_of_a_429_draws_on_the_key_and_one_not_told_does_not(
    store: RunStore, settings: Settings
) -> None:
    model = f"m-{uuid.uuid4().hex[:8]}"
    service = RunService(store, settings)
    body = RunCreate.model_validate(
        {"prompt": "hi", "model": {"provider": "scripted", "name": model}}
    )
    view, _ = await service.create_run(body)
    record = (await service.get_run(view.record.id, scope=Scope.ALL)).record
    now = datetime.now(UTC)
    told, spy = counted(store)
    untold = Flow(shared(store).flow, shared(store).slots, clock=SYSTEM_CLOCK)
    assert await untold.rates(record) == {} and await told.rates(record) == {}
    told.heard(learned_payload({f"model:scripted/{model}": now.timestamp() + 60}))
    rates = await told.rates(record)
    assert list(rates) == [f"model:scripted/{model}"]
    await told.acquire(rates, 100, now)
    assert spy.statements == 1
    assert await untold.rates(record) == {}
    # Past the key's slowdown the told worker forgets it: no statement again.
    told.heard(learned_payload({f"model:scripted/{model}": now.timestamp() - 1}))
    gone = Flow(shared(store).flow, shared(store).slots, clock=SYSTEM_CLOCK)
    gone.heard(learned_payload({f"model:scripted/{model}": now.timestamp() - 1}))
    assert await gone.rates(record) == {}
