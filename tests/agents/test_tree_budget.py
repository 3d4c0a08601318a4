"""The root's limits cover its tree (on both databases): a child's call that could pass
what the root has left is refused as a budget is (the child suspends on the `tree`
budget), `tree_usage` is the sum of the nodes' usage to the token, and raising the root's
limits resumes the child and the chain completes."""

from __future__ import annotations

import httpx

from app.store.runs import RunStore
from tests.agents.test_tree_api import drive_all, get, make_agent, script


async def test_the_roots_limits_cover_its_children(
    client: httpx.AsyncClient, store: RunStore
) -> None:
    await make_agent(
        client,
        name="spender",
        model=script({"text": "spent", "usage": {"input_tokens": 1200, "output_tokens": 100}}),
    )
    root = (
        await client.post(
            "/v1/runs",
            json={
                "prompt": "go",
                "model": script(
                    {
                        "tool_calls": [
                            {"name": "spend", "arguments": {"input": "one"}},
                            {"name": "spend", "arguments": {"input": "two"}},
                        ],
                        "usage": {"input_tokens": 90, "output_tokens": 10},
                    },
                    {"text": "done", "usage": {"input_tokens": 5, "output_tokens": 5}},
                ),
                "tools": [{"name": "spend", "agent": "spender"}],
                "limits": {"max_total_tokens": 1420},
            },
        )
    ).json()
    await drive_all(client, store)
    nodes = (await client.get("/v1/runs", params={"root_run_id": root["id"]})).json()["data"]
    children = [n for n in nodes if n["depth"] == 1]
    spent = [c for c in children if c["status"] == "completed"]
    held = [c for c in children if c["status"] == "requires_action"]
    assert len(spent) == 1 and len(held) == 1, nodes
    reason = held[0]["waiting_reason"]
    assert reason["type"] == "budget" and reason["scope"] == "tree", reason
    assert held[0]["required_action"]["type"] == "raise_limits"
    tree = (await get(client, root["id"]))["tree_usage"]
    own = [(await get(client, n["id"]))["usage"] for n in nodes]
    for key in ("input_tokens", "output_tokens", "total_tokens", "model_calls"):
        assert tree[key] == sum((u or {}).get(key, 0) for u in own), key
    assert tree["total_tokens"] == 100 + 1300 <= 1420

    raised = await client.post(f"/v1/runs/{root['id']}/limits", json={"max_total_tokens": 10_000})
    assert raised.status_code == 200, raised.text
    await drive_all(client, store)
    done = await get(client, root["id"])
    assert done["status"] == "completed", done
    assert done["tree_usage"]["total_tokens"] == 100 + 2 * 1300 + 10
