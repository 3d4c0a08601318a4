"""Checkpoints of a compacted run (both back ends, the OpenAI wire to the mock): its
early answers were folded into a summary, yet each checkpoint's turn is the model call
that made it, the last one the run's own count."""

from __future__ import annotations

import httpx

from app.core.lifecycle import RunStatus
from app.service.runs import RunService
from app.settings import Settings
from app.store.runs import RunStore
from tests.compaction.support import Model, driver, run_body, step
from tests.mocks.server import MockProviderServer


async def test_a_compacted_runs_checkpoints_count_its_turns(
    client: httpx.AsyncClient,
    store: RunStore,
    api_settings: Settings,
    mock: MockProviderServer,
) -> None:
    service = RunService(store, api_settings)
    model = Model(turns=10)
    mock.responder = model
    view, _ = await service.create_run(run_body(10, 1000, keep_recent_turns=1))
    run_id = view.record.id
    run_driver = await driver(service, mock)
    status = RunStatus.QUEUED
    while status is not RunStatus.COMPLETED:
        status = await step(service, run_driver, run_id)
    assert model.summaries >= 2
    run = (await client.get(f"/v1/runs/{run_id}")).json()
    listed = (await client.get(f"/v1/runs/{run_id}/checkpoints")).json()["data"]
    answered = [c for c in listed if c["kind"] in ("tool_calls", "answer")]
    assert answered[-1]["kind"] == "answer" and answered[-1]["turn"] == run["turn"]
    turns = [c["turn"] for c in answered]
    assert turns == list(range(run["turn"] - len(turns) + 1, run["turn"] + 1))
