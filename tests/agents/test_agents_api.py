"""Named, versioned agents over HTTP, on SQLite and PostgreSQL: versions, runs started
from one (what a caller may add or narrow), deletion, roles and tenants, and every bad
body a problem document that changes nothing."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from app.store.runs import RunStore
from tests.agents.test_tree_api import ECHO, make_agent
from tests.tenancy.test_keys_api import bearer, new_tenant


async def agents_now(client: httpx.AsyncClient) -> Any:
    listed = await client.get("/v1/agents")
    assert listed.status_code == 200, listed.text
    return listed.json()


async def test_versions_are_immutable_and_runs_name_one(client: httpx.AsyncClient) -> None:
    v1 = await make_agent(client, name="helper", model=ECHO, preamble="one", metadata={"a": 1})
    assert (v1["name"], v1["version"], v1["created_by"]) == ("helper", 1, v1["created_by"])
    put = await client.put(
        "/v1/agents/helper", json={"description": "better", "model": ECHO, "preamble": "two"}
    )
    assert put.status_code == 200, put.text
    assert put.json()["version"] == 2 and put.json()["spec"]["preamble"] == "two"
    assert (await client.get("/v1/agents/helper")).json()["version"] == 2
    first = (await client.get("/v1/agents/helper/versions/1")).json()
    assert first["spec"] == {"model": ECHO, "preamble": "one", "metadata": {"a": 1}}
    versions = (await client.get("/v1/agents/helper/versions")).json()["data"]
    assert [v["version"] for v in versions] == [1, 2]

    latest = await client.post("/v1/runs", json={"agent": "helper", "prompt": "hi"})
    pinned = await client.post(
        "/v1/runs", json={"agent": "helper@1", "prompt": "hi", "metadata": {"b": 2}}
    )
    assert latest.status_code == 201 and pinned.status_code == 201, pinned.text
    assert latest.json()["agent"] == {"name": "helper", "version": 2}
    assert pinned.json()["agent"] == {"name": "helper", "version": 1}
    assert pinned.json()["metadata"] == {"a": 1, "b": 2}
    assert pinned.json()["model"] == ECHO


async def test_a_run_may_narrow_limits_and_nothing_else(client: httpx.AsyncClient) -> None:
    await make_agent(client, name="capped", model=ECHO, limits={"max_model_calls": 5})
    narrowed = await client.post(
        "/v1/runs",
        json={"agent": "capped", "prompt": "x", "limits": {"max_model_calls": 2}, "priority": 3},
    )
    assert narrowed.status_code == 201, narrowed.text
    assert narrowed.json()["limits"] == {"max_model_calls": 2}
    assert narrowed.json()["priority"] == 3
    for body, field in [
        ({"limits": {"max_model_calls": 9}}, "limits.max_model_calls"),
        ({"model": ECHO}, "model"),
        ({"preamble": "mine"}, "preamble"),
        ({"tools": []}, "tools"),
        ({"previous_run_id": "run_x"}, "agent"),
    ]:
        refused = await client.post("/v1/runs", json={"agent": "capped", "prompt": "x", **body})
        assert refused.status_code == 422, refused.text
        assert refused.json()["detail"].startswith(field), refused.json()
    missing = await client.post("/v1/runs", json={"agent": "nobody", "prompt": "x"})
    assert missing.status_code == 422 and "nobody" in missing.json()["detail"]
    assert (await client.get("/v1/runs")).json()["data"] == [narrowed.json() | {"queue": None}]


async def test_delete_stops_new_runs_and_keeps_runs_in_flight(
    client: httpx.AsyncClient, store: RunStore
) -> None:
    await make_agent(client, name="gone", model=ECHO)
    run = (await client.post("/v1/runs", json={"agent": "gone", "prompt": "x"})).json()
    deleted = await client.delete("/v1/agents/gone")
    assert deleted.status_code == 204
    assert (await client.get("/v1/agents/gone")).status_code == 404
    assert (await client.get("/v1/agents/gone/versions/1")).status_code == 404
    refused = await client.post("/v1/runs", json={"agent": "gone@1", "prompt": "x"})
    assert refused.status_code == 422
    assert (await client.delete("/v1/agents/gone")).status_code == 404
    kept = (await client.get(f"/v1/runs/{run['id']}")).json()
    assert kept["agent"] == {"name": "gone", "version": 1} and kept["model"] == ECHO
    again = await make_agent(client, name="gone", model=ECHO)  # (the name is free again)
    assert again["version"] == 2
    assert [a["name"] for a in (await agents_now(client))["data"]] == ["gone"]


BAD_BODIES: list[tuple[dict[str, Any], int, str]] = [
    ({"name": "x", "description": "d", "model": ECHO, "surprise": 1}, 422, "validation-error"),
    ({"name": "x", "model": ECHO}, 422, "validation-error"),  # (no description)
    ({"name": "bad name", "description": "d", "model": ECHO}, 422, "validation-error"),
    ({"name": "x", "description": "d"}, 422, "validation-error"),  # (no model)
    (
        {"name": "x", "description": "d", "model": ECHO, "tools": [{"name": "t", "agent": "nope"}]},
        422,
        "invalid-request",
    ),
    (
        {
            "name": "x",
            "description": "d",
            "model": ECHO,
            "tools": [{"name": "t", "agent": "y", "queue": "q"}],
        },
        422,
        "invalid-request",  # (a rule between fields)
    ),
    (
        {"name": "x", "description": "d", "model": ECHO, "tools": [{"name": "t", "agent": "x"}]},
        422,
        "invalid-request",
    ),  # (itself: an endless chain)
    # A run could not start from these: the create's own checks refuse them at once.
    (
        {"name": "x", "description": "d", "model": ECHO, "webhook": {"url": "http://127.0.0.1:9/"}},
        422,
        "invalid-request",
    ),
    (
        {"name": "x", "description": "d", "model": ECHO, "tool_choice": {"name": "nope"}},
        422,
        "invalid-request",
    ),
]


@pytest.mark.parametrize(("body", "status", "problem"), BAD_BODIES)
async def test_bad_agent_bodies_are_problems_that_change_nothing(
    client: httpx.AsyncClient, body: dict[str, Any], status: int, problem: str
) -> None:
    response = await client.post("/v1/agents", json=body)
    assert response.status_code == status, response.text
    assert response.json()["type"] == f"/problems/{problem}"
    assert (await agents_now(client))["data"] == []


async def test_a_name_taken_and_a_cycle_are_refused(client: httpx.AsyncClient) -> None:
    await make_agent(client, name="a", model=ECHO)
    taken = await client.post("/v1/agents", json={"name": "a", "description": "d", "model": ECHO})
    assert taken.status_code == 409 and taken.json()["type"] == "/problems/agent-exists"
    await make_agent(client, name="b", model=ECHO, tools=[{"name": "to_a", "agent": "a"}])
    cycle = await client.put(
        "/v1/agents/a",
        json={"description": "d", "model": ECHO, "tools": [{"name": "to_b", "agent": "b"}]},
    )
    assert cycle.status_code == 422, cycle.text
    assert "a → b → a" in cycle.json()["detail"] and "DEPTH" in cycle.json()["detail"]
    assert (await client.get("/v1/agents/a")).json()["version"] == 1  # (unchanged)
    missing = await client.put("/v1/agents/zzz", json={"description": "d", "model": ECHO})
    assert missing.status_code == 404 and missing.json()["type"] == "/problems/agent-not-found"
    run = await client.post(
        "/v1/runs",
        json={"prompt": "x", "model": ECHO, "tools": [{"name": "t", "agent": "nobody@3"}]},
    )
    assert run.status_code == 422 and "tools[0].agent" in run.json()["detail"]


async def test_roles_and_tenants(client: httpx.AsyncClient) -> None:
    await make_agent(client, name="ours", model=ECHO)
    creator = (await client.post("/v1/keys", json={"name": "c", "role": "creator"})).json()
    refused = await client.post(
        "/v1/agents",
        headers=bearer(creator["secret"]),
        json={"name": "x", "description": "d", "model": ECHO},
    )
    assert refused.status_code == 403 and refused.json()["permission"] == "agents:manage"
    used = await client.post(
        "/v1/runs", headers=bearer(creator["secret"]), json={"agent": "ours", "prompt": "x"}
    )
    assert used.status_code == 201, used.text
    tenant = await new_tenant(client)
    theirs = await client.post(
        "/v1/keys", params={"tenant": tenant}, json={"name": "t", "role": "admin"}
    )
    other = bearer(theirs.json()["secret"])
    assert (await client.get("/v1/agents", headers=other)).json()["data"] == []
    assert (await client.get("/v1/agents/ours", headers=other)).status_code == 404
    run = await client.post("/v1/runs", headers=other, json={"agent": "ours", "prompt": "x"})
    assert run.status_code == 422
    mine = await client.post(
        "/v1/agents", headers=other, json={"name": "ours", "description": "d", "model": ECHO}
    )
    assert mine.status_code == 201 and mine.json()["version"] == 1  # (names are per tenant)
