"""Checkpoints of a compacted run (both back ends, the OpenAI wire to the mock): its
early answers were folded into a summary, yet each checkpoint's turn is the model call
that made it, the last one the run's own count."""

from __future__ import annotations

import httpx

from app.service.runs import RunService
from app.settings import Settings
from app.store.runs import RunStore
from tests.compaction.support import compacted_run
from tests.mocks.server import MockProviderServer


async def test_a_compacted_runs_checkpoints_count_its_turns(
    client: httpx.AsyncClient,
    store: RunStore,
    api_settings: Settings,
    mock: MockProviderServer,
) -> None:
    service = RunService(store, api_settings)
    run_id, model = await compacted_run(service, mock, 10)
    assert model.summaries >= 2
    run = (await client.get(f"/v1/runs/{run_id}")).json()
    listed = (await client.get(f"/v1/runs/{run_id}/checkpoints")).json()["data"]
    answered = [c for c in listed if c["kind"] in ("tool_calls", "answer")]
    assert answered[-1]["kind"] == "answer" and answered[-1]["turn"] == run["turn"]
    turns = [c["turn"] for c in answered]
    assert turns == list(range(run["turn"] - len(turns) + 1, run["turn"] + 1))
