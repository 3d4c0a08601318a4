"""`GET /v1/runs/{id}/log` (`app.compaction.routes`): after compactions, the run's log
still holds every original message, page by page, while its conversation holds the
summary."""

from __future__ import annotations

from typing import Any

import httpx

from app.service.runs import RunService
from app.settings import Settings
from app.store.runs import RunStore
from tests.compaction.support import PROMPT, compacted_run
from tests.mocks.server import MockProviderServer


async def all_pages(client: httpx.AsyncClient, path: str, limit: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    cursor = None
    while True:
        params: dict[str, Any] = {"limit": limit, **({"cursor": cursor} if cursor else {})}
        response = await client.get(path, params=params)
        assert response.status_code == 200, response.text
        page = response.json()
        out.extend(page["data"])
        cursor = page["next_cursor"]
        if cursor is None:
            return out


def summary(message: dict[str, Any]) -> bool:
    return message["role"] == "user" and "Summary of the earlier" in str(message["content"])


async def test_the_log_keeps_the_originals_a_compaction_replaced(
    client: httpx.AsyncClient,
    store: RunStore,
    api_settings: Settings,
    mock: MockProviderServer,
) -> None:
    service = RunService(store, api_settings)
    run_id, model = await compacted_run(service, mock, 10)
    assert model.summaries >= 2

    conversation = await all_pages(client, f"/v1/runs/{run_id}/messages", 100)
    assert sum(summary(e["message"]) for e in conversation) == 1
    logged = await all_pages(client, f"/v1/runs/{run_id}/log", 7)
    assert [e["index"] for e in logged] == list(range(len(logged)))
    assert [e["batch"] for e in logged] == sorted(e["batch"] for e in logged)
    assert logged[0]["batch"] == 1 and logged[0]["from_history"]
    originals = [e["message"] for e in logged if not e["replaces"]]
    calls = {
        item["call"]
        for m in originals
        if isinstance(m["content"], list)
        for item in m["content"]
        if item["type"] == "toolresult"
    }
    assert calls == {f"call_{n}" for n in range(1, 10)}
    assert not any(summary(m) for m in originals)
    restated = [e for e in logged if e["replaces"]]
    assert sum(summary(e["message"]) for e in restated) == model.summaries
    prompts = [e for e in logged if e["message"]["content"] == [{"type": "text", "text": PROMPT}]]
    assert prompts[0]["batch"] == 1 and not prompts[0]["replaces"]
    assert all(p["replaces"] for p in prompts[1:])  # (each compaction kept it verbatim)


async def test_the_log_of_an_unknown_run_or_a_bad_cursor_is_refused(
    client: httpx.AsyncClient,
) -> None:
    missing = await client.get("/v1/runs/run_nope/log")
    assert missing.status_code == 404, missing.text
    bad = await client.get("/v1/runs/run_nope/log", params={"cursor": "!!"})
    assert bad.status_code == 422, bad.text
    made = await client.post(
        "/v1/runs", json={"prompt": "hi", "model": {"provider": "scripted", "name": "echo"}}
    )
    assert made.status_code == 201
    fresh = await client.get(f"/v1/runs/{made.json()['id']}/log")
    assert fresh.status_code == 200
    assert fresh.json() == {
        "data": [
            {
                "index": 0,
                "batch": 1,
                "from_history": False,
                "replaces": False,
                "message": {
                    "role": "user",
                    "content": [{"type": "text", "text": "hi"}],
                    "id": None,
                },
            }
        ],
        "next_cursor": None,
    }
