"""`/v1/queues` over HTTP on both back ends: lease, heartbeat and answer through the lease,
every refusal as a problem document, and the create option that names a queue."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx
import pytest

from app.service.principals import DEFAULT_TENANT
from app.settings import Settings
from app.store.backend.leases import bell_of
from app.store.runs import RunStore
from tests.api.test_runs_api import assert_problem, body, suspend
from tests.metrics_support import sample


async def lease(client: httpx.AsyncClient, queue: str = "q", **kw: Any) -> list[dict[str, Any]]:
    response = await client.post(f"/v1/queues/{queue}/lease", json={"wait": 0, "limit": 10, **kw})
    assert response.status_code == 200, response.text
    calls: list[dict[str, Any]] = response.json()["calls"]
    return calls


def url(call: dict[str, Any], what: str, queue: str = "q") -> str:
    return f"/v1/queues/{queue}/leases/{call['lease_token']}/{what}"


async def test_lease_heartbeat_and_answer_resume_the_run(
    client: httpx.AsyncClient, store: RunStore
) -> None:
    run = await suspend(client, store, tool_queue="q")
    pending = run["required_action"]["tool_calls"]
    assert [c["queue"] for c in pending] == ["q", "q"]
    calls = await lease(client, executor="box-1:42", lease_seconds=30)
    assert [(c["run_id"], c["tool_call_id"], c["attempt"]) for c in calls] == [
        (run["id"], pending[0]["id"], 1),
        (run["id"], pending[1]["id"], 1),
    ]
    assert calls[0]["name"] == "add" and calls[0]["arguments"] == {"a": 1, "b": 2}
    assert calls[0]["lease_expires_at"].endswith("Z")
    beat = await client.post(url(calls[0], "heartbeat"), json={"lease_seconds": 120})
    assert beat.status_code == 200, beat.text
    assert beat.json()["lease_expires_at"] > calls[0]["lease_expires_at"]
    first = await client.post(url(calls[0], "result"), json={"output": 3})
    assert first.status_code == 200, first.text
    assert first.json()["accepted"] == [pending[0]["id"]] and not first.json()["resumed"]
    again = await client.post(url(calls[0], "result"), json={"output": 3})
    assert again.json()["accepted"] == []
    last = await client.post(url(calls[1], "result"), json={"output": 7, "is_error": False})
    assert last.json()["resumed"] and last.json()["run"]["status"] == "queued"
    events = (await client.get(f"/v1/runs/{run['id']}/events")).json()["data"]
    leased = [e for e in events if e["type"] == "tool_call.leased"]
    assert [e["data"]["executor"] for e in leased] == ["box-1:42", "box-1:42"]


async def test_refusals_are_problems(client: httpx.AsyncClient, store: RunStore) -> None:
    run = await suspend(client, store, tool_queue="q")
    calls = await lease(client, lease_seconds=1)
    assert_problem(await client.post(url(calls[0], "result", "p"), json={"output": 1}), 404,
                   "lease-not-found")  # fmt: skip
    # A token of the documented shape that this queue never issued, for a real call:
    for made_up in (f"{run['id']}-1-0-{'0' * 32}", f"{calls[0]['lease_token'][:-4]}0000"):
        bad = {"lease_token": made_up}
        assert_problem(await client.post(url(bad, "heartbeat"), json={}), 404, "lease-not-found")
        assert_problem(await client.post(url(bad, "result"), json={"output": 1}), 404,
                       "lease-not-found")  # fmt: skip
    await client.post(url(calls[0], "result"), json={"output": 1})
    conflict = await client.post(url(calls[0], "result"), json={"output": 2})
    assert_problem(conflict, 409, "tool-result-conflict")
    await client.post(f"/v1/runs/{run['id']}/cancel")
    state = await client.post(url(calls[1], "result"), json={"output": 1})
    assert assert_problem(state, 409, "run-state-conflict")["current_status"] == "cancelled"
    assert_problem(await client.post(url({"lease_token": "nope"}, "result"), json={"output": 1}),
                   404, "lease-not-found")  # fmt: skip


async def test_a_cancel_withdraws_the_calls_and_refuses_their_leases(
    client: httpx.AsyncClient, store: RunStore
) -> None:
    run = await suspend(client, store, tool_queue="q")
    held = await lease(client, limit=1, lease_seconds=30)  # one leased, one still offered
    assert len(held) == 1
    assert (await client.post(f"/v1/runs/{run['id']}/cancel")).status_code == 200
    # The leased call's executor is told to stop; its result is refused; nothing else is
    # offered (docs/queue.md).
    beat = await client.post(url(held[0], "heartbeat"), json={})
    assert_problem(beat, 409, "tool-call-lease-lost")
    result = await client.post(url(held[0], "result"), json={"output": 1})
    assert assert_problem(result, 409, "run-state-conflict")["current_status"] == "cancelled"
    assert await lease(client) == []
    pending = await client.get(f"/v1/runs/{run['id']}")
    assert pending.json()["required_action"] is None
    callback = run["required_action"]["callback_url"].replace("http://127.0.0.1:8000", "")
    answer = {"results": [{"tool_call_id": held[0]["tool_call_id"], "output": 1}]}
    assert_problem(await client.post(callback, json=answer), 404, "callback-token-invalid")


@pytest.mark.parametrize(
    ("path", "payload"),
    [
        ("/v1/queues/q/lease", {"limit": 0}),
        ("/v1/queues/q/lease", {"limit": 101}),
        ("/v1/queues/q/lease", {"wait": 61}),
        ("/v1/queues/q/lease", {"lease_seconds": 0.5}),
        ("/v1/queues/q/lease", {"surprise": 1}),
        ("/v1/queues/.hidden/lease", {}),
        ("/v1/queues/q/leases/x/heartbeat", {"lease_seconds": 7200}),
        ("/v1/queues/q/leases/x/result", {"is_error": True}),
    ],
)
async def test_bodies_and_names_outside_the_schema_are_422(
    client: httpx.AsyncClient, path: str, payload: dict[str, Any]
) -> None:
    assert_problem(await client.post(path, json=payload), 422, "validation-error")


@pytest.mark.parametrize("name", ["a/b", ".x", "", "x" * 65, "sp ace"])
async def test_a_queue_name_is_checked_at_create(client: httpx.AsyncClient, name: str) -> None:
    response = await client.post("/v1/runs", json=body() | {"tool_queue": name})
    assert_problem(response, 422, "validation-error")
    tools = [{"name": "add", "parameters": {"type": "object"}, "queue": name}]
    response = await client.post("/v1/runs", json=body() | {"tools": tools})
    assert_problem(response, 422, "validation-error")


async def test_the_queue_routes_need_a_key(client: httpx.AsyncClient) -> None:
    anonymous = {"Authorization": ""}
    response = await client.post("/v1/queues/q/lease", json={"wait": 0}, headers=anonymous)
    assert_problem(response, 401, "unauthorized")


async def test_a_long_poll_answers_when_calls_arrive(
    client: httpx.AsyncClient, store: RunStore
) -> None:
    waiting = asyncio.ensure_future(lease(client, wait=20))
    queues = client.app.state.queues  # type: ignore[attr-defined]
    while not queues.bell.waiting(bell_of(DEFAULT_TENANT, "q")):
        await asyncio.sleep(0.01)
    run = await suspend(client, store, tool_queue="q")
    calls = await asyncio.wait_for(waiting, 10)
    assert {c["run_id"] for c in calls} == {run["id"]}


async def test_metrics_count_queued_and_leased_calls_per_queue(
    client: httpx.AsyncClient, store: RunStore
) -> None:
    await suspend(client, store, tool_queue="q")
    await suspend(client, store, tool_queue="other")
    await lease(client, limit=1)
    text = (await client.get("/metrics")).text
    assert 'agentrun_tool_calls_queued{queue="q"} 1.0' in text
    assert 'agentrun_tool_calls_leased{queue="q"} 1.0' in text
    assert 'agentrun_tool_calls_queued{queue="other"} 2.0' in text
    assert 'agentrun_tool_calls_leased{queue="other"} 0.0' in text


async def test_metrics_count_leases_again_after_a_lapse_and_lost_leases(
    client: httpx.AsyncClient, store: RunStore
) -> None:
    async def scrape() -> dict[str, float]:
        text = (await client.get("/metrics")).text
        return {
            lease: sample(text, "agentrun_tool_call_leases_total", queue="q", lease=lease) or 0
            for lease in ("first", "again")
        } | {"lost": sample(text, "agentrun_tool_call_leases_lost_total", queue="q") or 0}

    before = await scrape()
    await suspend(client, store, tool_queue="q")
    first = await lease(client, lease_seconds=1)
    await asyncio.sleep(1.1)  # the leases lapse
    again = await lease(client, lease_seconds=30)
    lost = await client.post(url(first[0], "heartbeat"), json={})
    assert lost.status_code == 409
    after = await scrape()
    assert len(first) == len(again) == 2
    assert {k: after[k] - before[k] for k in after} == {"first": 2, "again": 2, "lost": 1}


def test_a_lease_request_whose_client_goes_away_ends(api_settings: Settings) -> None:
    """Over a real socket: a client that gives up on its long poll leaves no waiter. The
    request is seen waiting before the client goes (the bell's name is the tenant's queue:
    `waiting("q")` was always 0, so the test passed whatever happened)."""
    import socket

    from app.main import create_app
    from tests.api.conftest import KEY
    from tests.mocks.uvicorn_thread import serve_in_thread

    app = create_app(api_settings)
    name = bell_of(DEFAULT_TENANT, "q")

    def waiting() -> int:
        return int(app.state.event_hub.bell.waiting(name))  # (read: no LISTEN started)

    def until(done: Any) -> bool:
        deadline = time.monotonic() + 30
        while not done() and time.monotonic() < deadline:
            time.sleep(0.02)
        return bool(done())

    with serve_in_thread(app) as base:
        port = int(base.rsplit(":", 1)[1])
        payload = b'{"wait": 30}'
        request = (
            f"POST /v1/queues/q/lease HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            f"Authorization: Bearer {KEY}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(payload)}\r\n\r\n"
        ).encode() + payload
        with socket.create_connection(("127.0.0.1", port)) as client:
            client.sendall(request)
            assert until(lambda: waiting() == 1), "the lease request never waited"
        # (the client has gone: its socket is closed)
        assert until(lambda: waiting() == 0), "the lease request still waits"
