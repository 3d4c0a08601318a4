"""What the AG-UI endpoint refuses, before any stream starts, as the API's problems: a
wrong key, a key that may not, another tenant's agent, a body that is not JSON or not a
`RunAgentInput`, a thread that does not exist, a tool message for a call never made, a
stale resume; each changes nothing (no run is created, nothing is decided)."""

from __future__ import annotations

import secrets
from typing import Any

import httpx

from tests.protocols.agui.agui import (
    WEATHER,
    finished,
    make_agent,
    post,
    run_input,
    scripted,
    tool_message,
    user,
)

MODEL = scripted({"tool_calls": [{"name": "get_weather", "arguments": {"city": "Oslo"}}]})


async def runs(client: httpx.AsyncClient) -> list[dict[str, Any]]:
    response = await client.get("/v1/runs", params={"limit": 100})
    assert response.status_code == 200, response.text
    data: list[dict[str, Any]] = response.json()["data"]
    return data


async def other_tenant(client: httpx.AsyncClient) -> dict[str, str]:
    """The header of an admin key of a new tenant (tenants outlive a test: a fresh id)."""
    tenant = f"other-{secrets.token_hex(4)}"
    made = await client.post("/v1/tenants", json={"id": tenant, "name": "Other"})
    assert made.status_code == 201, made.text
    theirs = await client.app.state.keys.create(tenant, "admin", "theirs")  # type: ignore[attr-defined]
    return {"Authorization": f"Bearer {theirs.secret}"}


def problem(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    doc: dict[str, Any] = response.json()
    assert doc["type"] == f"/problems/{code}", doc
    return doc


async def test_keys_and_tenants_are_refused_before_anything_is_made(
    client: httpx.AsyncClient,
) -> None:
    await make_agent(client, "helper", model=MODEL)
    body = run_input("t", "r", [user("hi")], tools=[WEATHER])
    wrong = await client.post("/ag-ui/helper", json=body, headers={"Authorization": "Bearer no"})
    problem(wrong, 401, "unauthorized")
    bare = httpx.Headers({"content-type": "application/json"})
    missing = await client.post("/ag-ui/helper", json=body, headers={**bare, "Authorization": ""})
    problem(missing, 401, "unauthorized")

    other = await other_tenant(client)
    foreign = await client.post("/ag-ui/helper", json=body, headers=other)
    problem(foreign, 404, "agent-not-found")
    viewer = await client.app.state.keys.create("default", "viewer", "looker")  # type: ignore[attr-defined]
    looking = {"Authorization": f"Bearer {viewer.secret}"}
    refused = await client.post("/ag-ui/helper", json=body, headers=looking)
    assert problem(refused, 403, "forbidden")["permission"] == "runs:create"
    executor = await client.app.state.keys.create("default", "executor", "box")  # type: ignore[attr-defined]
    blind = await client.post(
        "/ag-ui/helper", json=body, headers={"Authorization": f"Bearer {executor.secret}"}
    )
    assert problem(blind, 403, "forbidden")["permission"] == "runs:read"
    assert await runs(client) == []


async def test_bodies_that_are_not_a_run_agent_input_are_refused(
    client: httpx.AsyncClient,
) -> None:
    await make_agent(client, "helper", model=MODEL)
    headers = {"content-type": "application/json"}
    problem(
        await client.post("/ag-ui/helper", content=b"{nope", headers=headers), 400, "malformed-json"
    )
    shapeless = await client.post("/ag-ui/helper", json={"threadId": "t", "messages": []})
    doc = problem(shapeless, 422, "validation-error")
    assert ["body", "runId"] in [e["loc"] for e in doc["errors"]]
    bad_role = run_input("t", "r", [{"id": "m", "role": "robot", "content": "x"}])
    problem(await client.post("/ag-ui/helper", json=bad_role), 422, "validation-error")
    nul = run_input("t", "r", [user("a\u0000b")])
    problem(await client.post("/ag-ui/helper", json=nul), 422, "validation-error")
    idle = run_input("t", "r", [])
    assert (
        "nothing to do"
        in problem(await client.post("/ag-ui/helper", json=idle), 422, "invalid-request")["detail"]
    )
    bad_tool = run_input("t", "r", [user("hi")], tools=[{"name": "no spaces", "description": ""}])
    problem(await client.post("/ag-ui/helper", json=bad_tool), 422, "invalid-request")
    clash = run_input("t", "r", [user("hi")], tools=[WEATHER, WEATHER])
    problem(await client.post("/ag-ui/helper", json=clash), 422, "invalid-request")
    unknown = await client.post("/ag-ui/nobody", json=run_input("t", "r", [user("hi")]))
    problem(unknown, 404, "agent-not-found")
    no_thread = run_input("never", "r", [user("hi"), tool_message("call_1_0", "x")])
    problem(await client.post("/ag-ui/helper", json=no_thread), 404, "run-not-found")
    assert await runs(client) == []


async def test_answers_that_answer_nothing_change_nothing(client: httpx.AsyncClient) -> None:
    await make_agent(client, "helper", model=MODEL)
    response, events = await post(
        client, "helper", run_input("t1", "r1", [user("hi")], tools=[WEATHER])
    )
    assert response.status_code == 200, response.text
    (call,) = finished(events)["outcome"]["pendingToolCallIds"]
    (run,) = await runs(client)
    stray = run_input("t1", "r2", [user("hi"), tool_message("call_9_9", "x")], tools=[WEATHER])
    problem(await client.post("/ag-ui/helper", json=stray), 422, "tool-call-not-pending")
    resume = [
        {
            "interruptId": f"{call}@0#{'0' * 64}",
            "status": "resolved",
            "payload": {"action": "approve"},
        }
    ]
    stale = run_input("t1", "r3", [user("hi")], resume=resume)
    stale["messages"] = []
    problem(await client.post("/ag-ui/helper", json=stale), 422, "tool-call-not-pending")
    odd = run_input("t1", "r4", [], resume=[{"interruptId": "what", "status": "resolved"}])
    problem(await client.post("/ag-ui/helper", json=odd), 422, "invalid-request")
    other = await other_tenant(client)
    answer = run_input("t1", "r5", [user("hi"), tool_message(call, "x")], tools=[WEATHER])
    foreign = await client.post("/ag-ui/helper", json=answer, headers=other)
    problem(foreign, 404, "run-not-found")  # (their tenant has no such thread)
    after = (await client.get(f"/v1/runs/{run['id']}")).json()
    assert after["status"] == "requires_action"
    assert [c["answered"] for c in after["required_action"]["tool_calls"]] == [False]
