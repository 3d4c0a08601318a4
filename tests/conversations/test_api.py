"""Conversations over HTTP, on SQLite and PostgreSQL: `previous_run_id` on create, its
refusals as problem documents, and `GET /v1/runs/{id}/messages` page by page."""

from __future__ import annotations

from typing import Any

import httpx

from app.store.runs import RunStore
from tests.api.test_runs_api import answers, assert_problem, create, suspend
from tests.helpers import drive_once

ECHO = {"provider": "scripted", "name": "echo"}


async def completed(client: httpx.AsyncClient, store: RunStore, **overrides: Any) -> dict[str, Any]:
    run = await suspend(client, store, **overrides)
    submitted = await client.post(f"/v1/runs/{run['id']}/tool-results", json=answers(run))
    assert submitted.status_code == 200, submitted.text
    await drive_once(store, client.app.state.settings)  # type: ignore[attr-defined]
    got = (await client.get(f"/v1/runs/{run['id']}")).json()
    assert got["status"] == "completed", got
    return got  # type: ignore[no-any-return]


async def all_messages(client: httpx.AsyncClient, run_id: str, limit: int) -> list[Any]:
    out: list[Any] = []
    params: dict[str, Any] = {"limit": limit}
    while True:
        page = await client.get(f"/v1/runs/{run_id}/messages", params=params)
        assert page.status_code == 200, page.text
        out.extend(page.json()["data"])
        if page.json()["next_cursor"] is None:
            return out
        params["cursor"] = page.json()["next_cursor"]


async def test_continue_a_completed_run_and_page_through_its_conversation(
    client: httpx.AsyncClient, store: RunStore
) -> None:
    first = await completed(client, store, preamble="Be brief.")
    assert first["conversation_id"] == first["id"] and first["previous_run_id"] is None
    response = await client.post(
        "/v1/runs", json={"prompt": "and now?", "previous_run_id": first["id"], "tools": []}
    )
    assert response.status_code == 201, response.text
    run = response.json()
    assert run["previous_run_id"] == first["id"] and run["conversation_id"] == first["id"]
    assert run["model"] == first["model"]  # inherited
    earlier = await all_messages(client, first["id"], 100)
    messages = await all_messages(client, run["id"], 2)
    assert [m["index"] for m in messages] == list(range(len(earlier) + 1))
    assert [m["message"] for m in messages[:-1]] == [m["message"] for m in earlier]
    assert all(m["from_history"] for m in messages[:-1]) and not messages[-1]["from_history"]
    assert messages[-1]["message"] == {
        "role": "user",
        "content": [{"type": "text", "text": "and now?"}],
        "id": None,
    }
    events = (await client.get(f"/v1/runs/{first['id']}/events")).json()["data"]
    assert events[-1]["type"] == "run.continued" and events[-1]["data"]["run_id"] == run["id"]
    assert events[-1]["actor"] is not None


async def test_a_page_of_messages_is_accepted_back_as_history(
    client: httpx.AsyncClient, store: RunStore
) -> None:
    first = await completed(client, store)
    messages = await all_messages(client, first["id"], 100)
    assert any(item["type"] == "toolresult" for m in messages for item in m["message"]["content"])
    copy = await create(client, history=[m["message"] for m in messages], prompt="again")
    copied = await all_messages(client, copy["id"], 100)
    assert [m["message"] for m in copied[:-1]] == [m["message"] for m in messages]


async def test_continuing_refusals_are_problems(client: httpx.AsyncClient, store: RunStore) -> None:
    suspended = await suspend(client, store)
    response = await client.post(
        "/v1/runs", json={"prompt": "x", "previous_run_id": suspended["id"]}
    )
    doc = assert_problem(response, 409, "run-state-conflict")
    assert doc["current_status"] == "requires_action"
    missing = await client.post("/v1/runs", json={"prompt": "x", "previous_run_id": "run_nope"})
    assert_problem(missing, 404, "run-not-found")
    no_model = await client.post("/v1/runs", json={"prompt": "x"})
    assert_problem(no_model, 422, "invalid-request")
    null_model = await client.post("/v1/runs", json={"prompt": "x", "model": None})
    assert_problem(null_model, 422, "validation-error")
    bad_id = await client.post("/v1/runs", json={"prompt": "x", "previous_run_id": "run nope"})
    assert_problem(bad_id, 422, "validation-error")


async def test_messages_refusals_are_problems(client: httpx.AsyncClient) -> None:
    assert_problem(await client.get("/v1/runs/run_nope/messages"), 404, "run-not-found")
    run = await create(client)
    bad = await client.get(f"/v1/runs/{run['id']}/messages", params={"cursor": "bXg"})
    assert_problem(bad, 422, "invalid-request")
    too_many = await client.get(f"/v1/runs/{run['id']}/messages", params={"limit": 101})
    assert_problem(too_many, 422, "validation-error")
    page = (await client.get(f"/v1/runs/{run['id']}/messages")).json()
    assert len(page["data"]) == 1 and page["next_cursor"] is None


async def test_the_openapi_document_says_what_is_inherited(client: httpx.AsyncClient) -> None:
    doc = (await client.get("/openapi.json")).json()
    create_body = doc["components"]["schemas"]["RunCreate"]
    assert create_body["required"] == ["prompt"]
    assert "null" not in str(create_body["properties"]["model"])
    described = create_body["properties"]["previous_run_id"]["description"]
    for name in ("model", "preamble", "tools", "tool_choice", "invalid_tool_call", "webhook"):
        assert f"`{name}`" in described
    assert "/v1/runs/{run_id}/messages" in doc["paths"]
