"""`GET /v1/runs/{id}/wait`: a long poll that answers with the run as `GET /v1/runs/{id}`
shows it, 200 either way, `Wait-Outcome` saying why it ended; refusals as problems."""

from __future__ import annotations

import asyncio
import socket
import time
from typing import Any
from urllib.parse import urlsplit

import httpx

from app.main import create_app
from app.service.live import EventHub
from app.service.runs import RunService
from app.settings import Settings
from tests.api.conftest import KEY
from tests.e2e.processes import wait_until
from tests.helpers import drive_once, run_body, wait_for
from tests.mocks.uvicorn_thread import serve_in_thread

BODY = run_body().model_dump(mode="json", exclude_none=True)


async def create(client: httpx.AsyncClient) -> str:
    response = await client.post("/v1/runs", json=BODY)
    assert response.status_code == 201
    return str(response.json()["id"])


async def test_wakes_when_the_run_suspends_and_answers_as_get_does(
    client: httpx.AsyncClient,
) -> None:
    app: Any = client.app  # type: ignore[attr-defined]
    hub: EventHub = app.state.event_hub
    service: RunService = app.state.service
    run_id = await create(client)
    pending = asyncio.ensure_future(
        client.get(f"/v1/runs/{run_id}/wait", params={"timeout": 60}, timeout=60)
    )
    await wait_for(lambda: asyncio.sleep(0, hub.subscribers(run_id)), lambda n: n == 1)
    if service.store.notifies:
        await wait_for(service.store.watched, lambda w: (run_id, hub.watcher) in w)
    await drive_once(service.store, service.settings)
    response = await asyncio.wait_for(pending, 30)
    assert response.status_code == 200
    assert response.headers["wait-outcome"] == "reached"
    run = response.json()
    assert run["status"] == "requires_action"
    assert run == (await client.get(f"/v1/runs/{run_id}")).json()
    assert run["required_action"]["callback_url"].startswith("http")


async def test_answers_at_once_for_a_run_in_a_wanted_or_final_status(
    client: httpx.AsyncClient,
) -> None:
    run_id = await create(client)
    queued = await client.get(f"/v1/runs/{run_id}/wait", params={"status": "queued"})
    assert queued.headers["wait-outcome"] == "reached"
    assert queued.json()["status"] == "queued"
    await client.post(f"/v1/runs/{run_id}/cancel")
    ended = await client.get(f"/v1/runs/{run_id}/wait")  # default: suspended or ended
    assert ended.headers["wait-outcome"] == "reached"
    never = await client.get(
        f"/v1/runs/{run_id}/wait",
        params=[("status", "requires_action"), ("status", "running")],
    )
    assert never.status_code == 200
    assert never.headers["wait-outcome"] == "final"
    assert never.json()["status"] == "cancelled"


async def test_times_out_with_200_and_the_run_as_it_is(client: httpx.AsyncClient) -> None:
    run_id = await create(client)
    response = await client.get(f"/v1/runs/{run_id}/wait", params={"timeout": 0.2})
    assert response.status_code == 200
    assert response.headers["wait-outcome"] == "timeout"
    assert response.json()["status"] == "queued"


async def test_refusals_are_problems(client: httpx.AsyncClient) -> None:
    missing = await client.get("/v1/runs/run_missing/wait", params={"timeout": 1})
    assert missing.status_code == 404
    assert missing.headers["content-type"] == "application/problem+json"
    assert missing.json()["type"] == "/problems/run-not-found"
    run_id = await create(client)
    for params in (
        {"status": "sleeping"},
        {"timeout": "61"},
        {"timeout": "-1"},
        {"timeout": "soon"},
    ):
        refused = await client.get(f"/v1/runs/{run_id}/wait", params=params)
        assert refused.status_code == 422, params
        assert refused.json()["type"] == "/problems/validation-error"
        assert refused.json()["errors"][0]["loc"][0] == "query"
    no_key = await client.get(f"/v1/runs/{run_id}/wait", headers={"Authorization": ""})
    assert no_key.status_code == 401


async def test_the_openapi_document_describes_the_wait(client: httpx.AsyncClient) -> None:
    document = (await client.get("/openapi.json")).json()
    operation = document["paths"]["/v1/runs/{run_id}/wait"]["get"]
    parameters = {p["name"]: p for p in operation["parameters"]}
    assert parameters["timeout"]["schema"]["maximum"] == 60
    assert parameters["timeout"]["schema"]["minimum"] == 0
    status = parameters["status"]["schema"]
    assert status["type"] == "array"
    assert status["items"] == {"$ref": "#/components/schemas/RunStatus"}
    assert "requires_action" in document["components"]["schemas"]["RunStatus"]["enum"]
    header = operation["responses"]["200"]["headers"]["Wait-Outcome"]
    assert header["schema"]["enum"] == ["reached", "final", "timeout"]
    for code in ("401", "404", "422", "429"):
        assert "application/problem+json" in operation["responses"][code]["content"]


def test_a_wait_ends_when_its_client_disconnects(api_settings: Settings) -> None:
    app = create_app(api_settings)
    with serve_in_thread(app) as base:
        auth = {"Authorization": f"Bearer {KEY}"}
        run_id = httpx.post(f"{base}/v1/runs", json=BODY, headers=auth).json()["id"]
        hub: EventHub = app.state.event_hub
        address = urlsplit(base)
        with socket.create_connection((address.hostname, address.port)) as client:
            client.sendall(
                f"GET /v1/runs/{run_id}/wait?timeout=60 HTTP/1.1\r\nHost: test\r\n"
                f"Authorization: Bearer {KEY}\r\n\r\n".encode()
            )
            wait_until(lambda: hub.subscribers(run_id) == 1, 10, "the wait to start")
        gone = time.monotonic()
        wait_until(lambda: hub.subscribers(run_id) == 0, 10, "the wait to end")
        assert time.monotonic() - gone < 5
