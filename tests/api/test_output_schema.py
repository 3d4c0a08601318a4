"""Structured output over HTTP (both back ends): a run with an `output_schema` offers the
model the `final_output` tool, completes with its arguments as JSON, asks again when a
required field is missing; an agent carries the schema to its runs; bad schemas are 422."""

from __future__ import annotations

from typing import Any

import httpx
import orjson

from app.store.runs import RunStore
from tests.helpers import drive_due

SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
    "required": ["city", "days"],
}


def scripted(*entries: dict[str, Any]) -> dict[str, Any]:
    return {"provider": "scripted", "name": "echo", "script": list(entries)}


async def finished(client: httpx.AsyncClient, store: RunStore, body: dict[str, Any]) -> Any:
    made = await client.post("/v1/runs", json=body)
    assert made.status_code == 201, made.text
    await drive_due(store, client.app.state.settings)  # type: ignore[attr-defined]
    return (await client.get(f"/v1/runs/{made.json()['id']}")).json()


async def test_the_run_completes_with_the_final_tools_arguments(
    client: httpx.AsyncClient, store: RunStore
) -> None:
    run = await finished(
        client,
        store,
        {
            "prompt": "plan",
            "output_schema": SCHEMA,
            "model": scripted(
                {"tool_calls": [{"name": "final_output", "arguments": {"city": "Oslo"}}]},
                {
                    "tool_calls": [
                        {"name": "final_output", "arguments": {"city": "Oslo", "days": 3}}
                    ]
                },
            ),
        },
    )
    assert run["status"] == "completed", run
    assert orjson.loads(run["output"]) == {"city": "Oslo", "days": 3}
    assert run["turn"] == 2  # (the first call missed `days`: asked again)
    messages = (await client.get(f"/v1/runs/{run['id']}/messages")).json()["data"]
    asked = [
        item for m in messages for item in m["message"]["content"] if item["type"] == "toolresult"
    ]
    assert len(asked) == 1 and "days" in str(asked[0])


async def test_an_agent_gives_its_runs_its_schema(
    client: httpx.AsyncClient, store: RunStore
) -> None:
    made = await client.post(
        "/v1/agents",
        json={
            "name": "planner",
            "description": "plans trips",
            "output_schema": SCHEMA,
            "model": scripted(
                {"tool_calls": [{"name": "final_output", "arguments": {"city": "Rome", "days": 2}}]}
            ),
        },
    )
    assert made.status_code == 201, made.text
    run = await finished(client, store, {"agent": "planner", "prompt": "plan"})
    assert orjson.loads(run["output"]) == {"city": "Rome", "days": 2}
    plain = await finished(client, store, {"prompt": "hi", "model": scripted({"text": "hi"})})
    assert plain["output"] == "hi"


async def test_bad_output_schemas_are_refused(client: httpx.AsyncClient) -> None:
    for schema, tools in [
        ({"type": "string"}, []),
        ({"type": "object", "properties": {"a": {"$ref": "#/nowhere"}}}, []),
        (SCHEMA, [{"name": "final_output"}]),
    ]:
        body = {
            "prompt": "x",
            "model": scripted({"text": "x"}),
            "output_schema": schema,
            "tools": tools,
        }
        refused = await client.post("/v1/runs", json=body)
        assert refused.status_code == 422, refused.text
    assert (await client.get("/v1/runs")).json()["data"] == []
