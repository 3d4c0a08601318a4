"""Agents that call agents over HTTP, on SQLite and PostgreSQL: an agent tool's call
starts a child run in the parent's suspension, the child's end answers it, the parent
resumes once; refusals (depth, bad bodies) and the tree's reads."""

from __future__ import annotations

from typing import Any

import httpx

from app.store.runs import RunStore
from tests.helpers import drive_due

ECHO = {"provider": "scripted", "name": "echo"}


def script(*entries: dict[str, Any]) -> dict[str, Any]:
    return {**ECHO, "script": list(entries)}


async def make_agent(client: httpx.AsyncClient, **body: Any) -> dict[str, Any]:
    response = await client.post("/v1/agents", json={"description": "does things", **body})
    assert response.status_code == 201, response.text
    return response.json()  # type: ignore[no-any-return]


async def drive_all(client: httpx.AsyncClient, store: RunStore) -> int:
    """Drive due runs until none is left; how many claims were made."""
    return await drive_due(store, client.app.state.settings)  # type: ignore[attr-defined]


async def get(client: httpx.AsyncClient, run_id: str) -> dict[str, Any]:
    response = await client.get(f"/v1/runs/{run_id}")
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


async def test_two_children_in_parallel_answer_their_parent_which_resumes_once(
    client: httpx.AsyncClient, store: RunStore
) -> None:
    await make_agent(
        client,
        name="researcher",
        model=script({"text": "found it", "usage": {"input_tokens": 5, "output_tokens": 3}}),
    )
    boss = await make_agent(
        client,
        name="boss",
        model=script(
            {
                "tool_calls": [
                    {"name": "ask", "arguments": {"input": "first"}},
                    {"name": "ask", "arguments": {"input": "second"}},
                ],
                "usage": {"input_tokens": 10, "output_tokens": 2},
            },
            {"text": "all done", "usage": {"input_tokens": 20, "output_tokens": 4}},
        ),
        tools=[{"name": "ask", "description": "ask the researcher", "agent": "researcher"}],
    )
    assert boss["version"] == 1
    response = await client.post("/v1/runs", json={"agent": "boss", "prompt": "go"})
    assert response.status_code == 201, response.text
    root = response.json()
    assert root["agent"] == {"name": "boss", "version": 1}
    assert root["root_run_id"] == root["id"] and root["depth"] == 0
    await drive_all(client, store)
    done = await get(client, root["id"])
    assert done["status"] == "completed", done
    assert done["output"] == "all done"
    children = (await client.get(f"/v1/runs/{root['id']}/children")).json()["data"]
    assert len(children) == 2
    assert {c["status"] for c in children} == {"completed"}
    assert {c["parent_run_id"] for c in children} == {root["id"]}
    assert all(c["depth"] == 1 and c["root_run_id"] == root["id"] for c in children)
    assert all(c["agent"] == {"name": "researcher", "version": 1} for c in children)
    events = (await client.get(f"/v1/runs/{root['id']}/events")).json()["data"]
    types = [e["type"] for e in events]
    assert types.count("run.resumed") == 1, types
    assert types.count("run.children_started") == 1
    assert "run.requires_action" not in types  # (no executor owed anything)
    assert types.count("model.called") == 2
    # The tree's spend: exact to the token.
    assert done["usage"]["total_tokens"] == 36
    assert done["tree_usage"]["total_tokens"] == 36 + 2 * 8
    tree = (await client.get("/v1/runs", params={"root_run_id": root["id"]})).json()["data"]
    assert {r["id"] for r in tree} == {root["id"], *(c["id"] for c in children)}


async def test_a_call_deeper_than_the_limit_gets_an_error_result_and_the_run_goes_on(
    client: httpx.AsyncClient, store: RunStore
) -> None:
    # Four agents each calling the next: the run at depth 3 may not start depth 4.
    await make_agent(client, name="a4", model=script({"text": "leaf"}))
    for name, callee in (("a3", "a4"), ("a2", "a3"), ("a1", "a2")):
        await make_agent(
            client,
            name=name,
            model=script(
                {"tool_calls": [{"name": "down", "arguments": {"input": "deeper"}}]},
                {"text": f"{name} done"},
            ),
            tools=[{"name": "down", "agent": callee}],
        )
    # (a chain of 4 from a root: a0 -> a1 -> a2 -> a3 -> a4 would be depth 4)
    response = await client.post(
        "/v1/runs",
        json={
            "prompt": "go",
            "model": script(
                {"tool_calls": [{"name": "down", "arguments": {"input": "x"}}]}, {"text": "root"}
            ),
            "tools": [{"name": "down", "agent": "a1"}],
        },
    )
    assert response.status_code == 201, response.text
    root = response.json()
    await drive_all(client, store)
    assert (await get(client, root["id"]))["status"] == "completed"
    runs = (await client.get("/v1/runs", params={"root_run_id": root["id"]})).json()["data"]
    by_depth = {r["depth"]: r for r in runs}
    assert sorted(by_depth) == [0, 1, 2, 3]
    deepest = by_depth[3]
    assert deepest["agent"]["name"] == "a3" and deepest["status"] == "completed"
    messages = (await client.get(f"/v1/runs/{deepest['id']}/messages")).json()["data"]
    results = [
        item for m in messages for item in m["message"]["content"] if item["type"] == "toolresult"
    ]
    assert len(results) == 1 and "AGENTRUN_MAX_AGENT_DEPTH" in str(results[0])


async def test_cancel_of_the_root_cancels_every_node(
    client: httpx.AsyncClient, store: RunStore
) -> None:
    await make_agent(
        client,
        name="leaf",
        model=script({"tool_calls": [{"name": "lookup", "arguments": {}}]}, {"text": "ok"}),
        tools=[{"name": "lookup"}],
    )
    await make_agent(
        client,
        name="mid",
        model=script({"tool_calls": [{"name": "go", "arguments": {"input": "x"}}]}, {"text": "m"}),
        tools=[{"name": "go", "agent": "leaf"}],
    )
    root = (
        await client.post(
            "/v1/runs",
            json={
                "prompt": "go",
                "model": script(
                    {"tool_calls": [{"name": "go", "arguments": {"input": "x"}}]}, {"text": "r"}
                ),
                "tools": [{"name": "go", "agent": "mid"}],
            },
        )
    ).json()
    await drive_all(client, store)
    runs = (await client.get("/v1/runs", params={"root_run_id": root["id"]})).json()["data"]
    assert len(runs) == 3
    leaf = next(r for r in runs if r["depth"] == 2)
    assert leaf["status"] == "requires_action"
    assert [c["name"] for c in leaf["required_action"]["tool_calls"]] == ["lookup"]
    cancelled = await client.post(f"/v1/runs/{root['id']}/cancel")
    assert cancelled.status_code == 200, cancelled.text
    runs = (await client.get("/v1/runs", params={"root_run_id": root["id"]})).json()["data"]
    assert {r["status"] for r in runs} == {"cancelled"}
    assert await drive_all(client, store) == 0
    # (a child's result after the cancel is refused, nothing moves)
    late = await client.post(
        f"/v1/runs/{leaf['id']}/tool-results",
        json={
            "results": [
                {"tool_call_id": leaf["required_action"]["tool_calls"][0]["id"], "output": "x"}
            ]
        },
    )
    assert late.status_code == 409


async def test_an_agent_tools_call_is_not_answered_by_a_client(
    client: httpx.AsyncClient, store: RunStore
) -> None:
    await make_agent(
        client,
        name="slow",
        model=script({"tool_calls": [{"name": "wait", "arguments": {}}]}, {"text": "ok"}),
        tools=[{"name": "wait"}],
    )
    root = (
        await client.post(
            "/v1/runs",
            json={
                "prompt": "go",
                "model": script({"tool_calls": [{"name": "ask", "arguments": {"input": "q"}}]}),
                "tools": [{"name": "ask", "agent": "slow"}],
            },
        )
    ).json()
    await drive_all(client, store)
    got = await get(client, root["id"])
    assert got["status"] == "requires_action" and got["required_action"] is None
    call = (await store.tool_calls(root["id"]))[0]
    refused = await client.post(
        f"/v1/runs/{root['id']}/tool-results",
        json={"results": [{"tool_call_id": call.call_id, "output": "mine"}]},
    )
    assert refused.status_code == 422, refused.text
    assert call.child_run_id in refused.json()["detail"]
