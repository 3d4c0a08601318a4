"""The caps on a tree (on both databases): past the children a run may start or the runs
a tree may hold, the call gets an error result naming the setting and the run goes on;
the other calls of the round still start their children."""

from __future__ import annotations

from typing import Any

import pytest

from app.store.runs import RunStore
from tests.agents.test_tree_api import drive_all, get, make_agent, script
from tests.api.conftest import KEY
from tests.conftest import make_settings
from tests.helpers import api_client


def tool_results(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        item for m in messages for item in m["message"]["content"] if item["type"] == "toolresult"
    ]


@pytest.mark.parametrize(
    ("cap", "setting"),
    [
        ("max_children_per_run", "AGENTRUN_MAX_CHILDREN_PER_RUN"),
        ("max_runs_per_tree", "AGENTRUN_MAX_RUNS_PER_TREE"),
    ],
)
async def test_a_call_past_a_cap_is_refused_and_the_others_start(
    database_url: str, store: RunStore, cap: str, setting: str
) -> None:
    settings = make_settings(database_url, api_keys=KEY, **{cap: 2})
    async with api_client(settings, KEY) as client:
        await make_agent(client, name="worker", model=script({"text": "did it"}))
        calls = [{"name": "ask", "arguments": {"input": f"job {i}"}} for i in range(3)]
        root = (
            await client.post(
                "/v1/runs",
                json={
                    "prompt": "go",
                    "model": script({"tool_calls": calls}, {"text": "fine"}),
                    "tools": [{"name": "ask", "agent": "worker"}],
                },
            )
        ).json()
        app_store = client.app.state.service.store  # type: ignore[attr-defined]
        await drive_all(client, app_store)  # (its hooks read these settings)
        assert (await get(client, root["id"]))["status"] == "completed"
        children = (await client.get(f"/v1/runs/{root['id']}/children")).json()["data"]
        assert len(children) == 2
        messages = (await client.get(f"/v1/runs/{root['id']}/messages")).json()["data"]
        results = tool_results(messages)
        assert len(results) == 3
        refused = [r for r in results if setting in str(r)]
        assert len(refused) == 1 and refused[0]["is_error"] is True
        assert sum("did it" in str(r) for r in results) == 2
