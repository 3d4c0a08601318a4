"""A callback URL answers a run's tool calls without a key, so only a caller that may
submit tool results is shown one: a viewer key or a browser token reads the run, its
list, its wait, its events (JSON and SSE) with `callback_url` withheld; a creator, an
executor or an admin sees it as before."""

from __future__ import annotations

from typing import Any

import httpx

from app.main import create_app
from app.settings import Settings
from app.tenancy.access import Role
from app.tenancy.keys import KeyAdmin
from tests.api.conftest import KEY
from tests.api.sse_client import read_events
from tests.conftest import make_settings
from tests.helpers import drive_once, run_body
from tests.mocks.uvicorn_thread import serve_in_thread

CALLBACKS = "/v1/callbacks/"


async def suspended(client: httpx.AsyncClient, settings: Settings) -> str:
    created = await client.post("/v1/runs", json=run_body().model_dump(mode="json"))
    assert created.status_code == 201, created.text
    store = client.app.state.service.store  # type: ignore[attr-defined]
    assert await drive_once(store, settings) is not None
    run_id: str = created.json()["id"]
    run = (await client.get(f"/v1/runs/{run_id}")).json()
    assert run["status"] == "requires_action"
    return run_id


async def key_of(client: httpx.AsyncClient, role: Role) -> dict[str, str]:
    admin: KeyAdmin = client.app.state.keys  # type: ignore[attr-defined]
    issued = await admin.create("default", role, f"{role.value}-key")
    return {"Authorization": f"Bearer {issued.secret}"}


async def reads(client: httpx.AsyncClient, run_id: str, headers: dict[str, str]) -> list[Any]:
    """What a caller reads of the run: the run, the wait, the events (and the list)."""
    got = [
        await client.get(f"/v1/runs/{run_id}", headers=headers),
        await client.get(f"/v1/runs/{run_id}/wait", params={"timeout": 0}, headers=headers),
        await client.get(f"/v1/runs/{run_id}/events", headers=headers),
    ]
    for response in got:
        assert response.status_code == 200, response.text
    return [r.json() for r in got]


async def test_a_viewer_reads_the_run_without_its_callback_url(
    client: httpx.AsyncClient, api_settings: Settings
) -> None:
    run_id = await suspended(client, api_settings)
    viewer = await key_of(client, Role.VIEWER)
    run, waited, events = await reads(client, run_id, viewer)
    for shown in (run, waited):
        assert shown["required_action"]["type"] == "submit_tool_results"
        assert shown["required_action"]["callback_url"] is None
        assert len(shown["required_action"]["tool_calls"]) == 2  # the calls are still shown
    asked = [e for e in events["data"] if e["type"] == "run.requires_action"]
    assert asked and "callback_url" not in asked[0]["data"]
    assert asked[0]["data"]["tool_calls"]  # the rest of the event is kept
    listed = await client.get("/v1/runs", headers=viewer)
    assert CALLBACKS not in listed.text and run_id in listed.text


async def test_callers_that_may_answer_see_the_callback_url(
    client: httpx.AsyncClient, api_settings: Settings
) -> None:
    run_id = await suspended(client, api_settings)
    for headers in (
        {"Authorization": f"Bearer {KEY}"},
        await key_of(client, Role.CREATOR),
        await key_of(client, Role.OPERATOR),
    ):
        run, waited, events = await reads(client, run_id, headers)
        assert CALLBACKS in run["required_action"]["callback_url"]
        assert waited["required_action"]["callback_url"] == run["required_action"]["callback_url"]
        asked = [e for e in events["data"] if e["type"] == "run.requires_action"]
        assert asked[0]["data"]["callback_url"] == run["required_action"]["callback_url"]
    # The URL a viewer was not shown is a working credential: answering through it works.
    url = run["required_action"]["callback_url"]
    calls = run["required_action"]["tool_calls"]
    results = [{"tool_call_id": c["id"], "output": "x"} for c in calls]
    answered = await client.post(url.split("http://127.0.0.1:8000")[1], json={"results": results})
    assert answered.status_code == 200, answered.text


def test_a_browser_token_streams_the_events_without_the_callback_url(
    database_url: str, store: object
) -> None:
    settings = make_settings(database_url, api_keys=KEY)
    admin_headers = {"Authorization": f"Bearer {KEY}"}
    with (
        serve_in_thread(create_app(settings, worker_slots=1)) as base,
        httpx.Client(base_url=base, headers=admin_headers, timeout=30) as admin,
        httpx.Client(base_url=base, timeout=30) as browser,
    ):
        run_id = admin.post("/v1/runs", json=run_body().model_dump(mode="json")).json()["id"]
        token = admin.post(f"/v1/runs/{run_id}/browser-tokens", json={}).json()["token"]
        raw: list[str] = []
        with browser.stream(
            "GET",
            f"/v1/runs/{run_id}/events",
            params={"access_token": token},
            headers={"Accept": "text/event-stream"},
        ) as response:
            assert response.status_code == 200
            for event in read_events(response):
                raw.append(repr(event))
                if event["event"] == "run.requires_action":
                    assert event["data"]["tool_calls"]
                    assert "callback_url" not in event["data"]
                    break
        assert raw and all(CALLBACKS not in line for line in raw)
        waited = browser.get(
            f"/v1/runs/{run_id}/wait", params={"access_token": token, "timeout": 0}
        ).json()
        assert waited["status"] == "requires_action"
        assert waited["required_action"]["callback_url"] is None
        # The admin, who may answer, is shown it.
        assert (
            CALLBACKS in admin.get(f"/v1/runs/{run_id}").json()["required_action"]["callback_url"]
        )
