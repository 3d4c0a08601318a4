"""Forks over HTTP (both back ends): a run's checkpoints, a fork's conversation equal to
the original's first N messages byte for byte, patched results, tools before the
checkpoint never handed out again, splits refused (409), the original unchanged."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx

from app.store.runs import RunStore
from tests.helpers import ADD_TOOL, drive_due

SCRIPT = [
    {"tool_calls": [{"name": "add", "arguments": {"a": 1, "b": 2}}]},
    {"tool_calls": [{"name": "add", "arguments": {"a": 3, "b": 4}}]},
    {"text": "the sums are 3 and 7"},
]


def body(**overrides: Any) -> dict[str, Any]:
    return {
        "prompt": "add 1+2, then 3+4",
        "model": {"provider": "scripted", "name": "demo", "script": SCRIPT},
        "tools": [ADD_TOOL],
        "preamble": "You add numbers.",
        "max_turns": 5,
        **overrides,
    }


async def drive(client: httpx.AsyncClient, store: RunStore) -> None:
    await drive_due(store, client.app.state.settings)  # type: ignore[attr-defined]


async def run_of(client: httpx.AsyncClient, run_id: str) -> dict[str, Any]:
    got = await client.get(f"/v1/runs/{run_id}")
    assert got.status_code == 200, got.text
    return dict(got.json())


def pending(run: dict[str, Any]) -> list[dict[str, Any]]:
    action = run["required_action"]
    return list(action["tool_calls"]) if action else []


async def answer(client: httpx.AsyncClient, run: dict[str, Any]) -> list[str]:
    """Answer every pending call with the sum of its arguments; the calls' ids."""
    calls = pending(run)
    results = [
        {"tool_call_id": c["id"], "output": str(sum(c["arguments"].values()))} for c in calls
    ]
    sent = await client.post(f"/v1/runs/{run['id']}/tool-results", json={"results": results})
    assert sent.status_code == 200, sent.text
    return [c["id"] for c in calls]


async def finish(
    client: httpx.AsyncClient, store: RunStore, run_id: str
) -> tuple[dict[str, Any], list[str]]:
    """Drive the run to its end, answering its rounds; the run and the calls answered."""
    answered: list[str] = []
    for _ in range(10):
        await drive(client, store)
        run = await run_of(client, run_id)
        if run["status"] != "requires_action":
            return run, answered
        answered += await answer(client, run)
    raise AssertionError("the run did not end")


async def messages(client: httpx.AsyncClient, run_id: str) -> list[dict[str, Any]]:
    got = await client.get(f"/v1/runs/{run_id}/messages", params={"limit": 100})
    assert got.status_code == 200, got.text
    return [e["message"] for e in got.json()["data"]]


async def completed(client: httpx.AsyncClient, store: RunStore) -> dict[str, Any]:
    made = await client.post("/v1/runs", json=body())
    assert made.status_code == 201, made.text
    run, _ = await finish(client, store, made.json()["id"])
    assert run["status"] == "completed", run
    return run


async def test_a_completed_runs_checkpoints_are_its_turns(
    client: httpx.AsyncClient, store: RunStore
) -> None:
    run = await completed(client, store)
    got = await client.get(f"/v1/runs/{run['id']}/checkpoints")
    assert got.status_code == 200, got.text
    listed = got.json()
    assert listed["messages"] == 6
    kinds = [(c["seq"], c["kind"], c["turn"]) for c in listed["data"]]
    assert kinds == [
        (1, "start", 0),
        (2, "tool_calls", 1),
        (3, "tool_results", 1),
        (4, "tool_calls", 2),
        (5, "tool_results", 2),
        (6, "answer", 3),
    ]
    assert all(c["usage"]["input_tokens"] >= 0 for c in listed["data"])


async def test_a_fork_starts_from_the_first_n_messages_byte_for_byte(
    client: httpx.AsyncClient, store: RunStore
) -> None:
    run = await completed(client, store)
    original = await messages(client, run["id"])
    before = await run_of(client, run["id"])
    forked = await client.post(f"/v1/runs/{run['id']}/fork", json={"at": 3})
    assert forked.status_code == 201, forked.text
    fork = forked.json()
    assert fork["forked_from"] == {
        "run_id": run["id"],
        "checkpoint": 3,
        "mode": "fork",
        "on_divergence": "live",
    }
    assert (await messages(client, fork["id"])) == original[:3]
    done, answered = await finish(client, store, fork["id"])
    assert done["status"] == "completed" and done["output"] == "the sums are 3 and 7"
    first_call = original[1]["content"][0]["id"]
    assert first_call not in answered and len(answered) == 1  # (only the round after it)
    after = await messages(client, fork["id"])
    assert after[:3] == original[:3] and len(after) == 6
    assert (await messages(client, run["id"])) == original  # the original is unchanged
    assert (await run_of(client, run["id"]))["updated_at"] == before["updated_at"]


async def test_a_patched_result_replaces_the_recorded_one_in_place(
    client: httpx.AsyncClient, store: RunStore
) -> None:
    run = await completed(client, store)
    original = await messages(client, run["id"])
    call = original[1]["content"][0]["id"]
    patch = {"tool_results": [{"tool_call_id": call, "output": "42"}]}
    forked = await client.post(f"/v1/runs/{run['id']}/fork", json={"at": 3, "patch": patch})
    assert forked.status_code == 201, forked.text
    got = await messages(client, forked.json()["id"])
    assert got[:2] == original[:2]
    result = got[2]["content"][0]
    assert result["type"] == "toolresult" and result["call"] == call
    assert result["content"] == [{"type": "text", "text": "42"}]


async def test_a_fork_at_a_suspension_waits_for_its_calls_again(
    client: httpx.AsyncClient, store: RunStore
) -> None:
    run = await completed(client, store)
    original = await messages(client, run["id"])
    forked = await client.post(f"/v1/runs/{run['id']}/fork", json={"at": 2})
    assert forked.status_code == 201, forked.text
    fork_id = forked.json()["id"]
    await drive(client, store)
    waiting = await run_of(client, fork_id)
    assert waiting["status"] == "requires_action"
    assert [c["id"] for c in pending(waiting)] == [original[1]["content"][0]["id"]]
    done, _ = await finish(client, store, fork_id)
    assert done["status"] == "completed"


async def test_a_fork_that_would_split_a_call_from_its_result_is_409(
    client: httpx.AsyncClient, store: RunStore
) -> None:
    run = await completed(client, store)
    original = await messages(client, run["id"])
    call = original[1]["content"][0]["id"]
    patch = {"append": [{"role": "user", "content": "never mind"}]}
    refused = await client.post(f"/v1/runs/{run['id']}/fork", json={"at": 2, "patch": patch})
    assert refused.status_code == 409, refused.text
    problem = refused.json()
    assert problem["type"].endswith("/fork-split") and problem["tool_call_id"] == call
    assert call in problem["detail"]
    listed = (await client.get("/v1/runs", params={"limit": 100})).json()["data"]
    assert [r["id"] for r in listed] == [run["id"]]  # nothing made


async def test_bad_forks_are_refused_and_make_nothing(
    client: httpx.AsyncClient, store: RunStore
) -> None:
    run = await completed(client, store)
    rid = run["id"]
    cases = [
        ({"at": 7}, 422),  # past the conversation
        ({"at": 6}, 422),  # ends with the model's answer, nothing appended
        ({"at": 0}, 422),
        ({"mode": "rewind"}, 422),
        ({"overrides": {"max_turns": 0}}, 422),
        ({"overrides": {"tool_choice": {"function": "nope"}}}, 422),
        ({"patch": {"tool_results": [{"tool_call_id": "nope", "output": 1}]}, "at": 3}, 422),
        ({"unknown": 1}, 422),
    ]
    for request, status in cases:
        got = await client.post(f"/v1/runs/{rid}/fork", json=request)
        assert got.status_code == status, (request, got.text)
    assert (await client.post("/v1/runs/run_nope/fork", json={})).status_code == 404
    listed = (await client.get("/v1/runs", params={"limit": 100})).json()["data"]
    assert [r["id"] for r in listed] == [rid]


async def test_overrides_and_an_appended_message_go_on_from_an_answer(
    client: httpx.AsyncClient, store: RunStore
) -> None:
    run = await completed(client, store)
    text_model = {"provider": "scripted", "name": "other", "script": [{"text": "again"}]}
    request = {
        "at": 6,
        "patch": {"append": [{"role": "user", "content": "and once more?"}]},
        "overrides": {"model": text_model, "max_turns": 10},
    }
    forked = await client.post(f"/v1/runs/{run['id']}/fork", json=request)
    assert forked.status_code == 201, forked.text
    fork = forked.json()
    assert fork["model"]["name"] == "other"
    done, _ = await finish(client, store, fork["id"])
    assert done["status"] == "completed" and done["output"] == "again"
    got = await messages(client, fork["id"])
    assert got[6]["role"] == "user"
    assert got[6]["content"] == [{"type": "text", "text": "and once more?"}]


async def test_an_idempotent_fork_is_made_once(client: httpx.AsyncClient, store: RunStore) -> None:
    run = await completed(client, store)
    headers = {"Idempotency-Key": "fork-1"}
    first = await client.post(f"/v1/runs/{run['id']}/fork", json={"at": 3}, headers=headers)
    again = await client.post(f"/v1/runs/{run['id']}/fork", json={"at": 3}, headers=headers)
    assert first.status_code == 201 and again.status_code == 200
    assert first.json()["id"] == again.json()["id"]
    other = await client.post(f"/v1/runs/{run['id']}/fork", json={"at": 5}, headers=headers)
    assert other.status_code == 422 and other.json()["type"].endswith("/idempotency-key-reused")


@asynccontextmanager
async def two_tenants(
    database_url: str, store: RunStore
) -> AsyncIterator[tuple[httpx.AsyncClient, httpx.AsyncClient]]:
    """Clients of two tenants' keys (the tenant-isolation tests' A and B)."""
    from datetime import UTC, datetime

    from app.store.schema import tenants
    from tests.conftest import make_settings
    from tests.tenancy.test_tenant_isolation import A, B, tenant_clients

    async with store.engine.begin() as conn:
        await conn.execute(tenants.delete().where(tenants.c.id.in_([A, B])))
        rows = [{"id": t, "name": t, "limits": {}, "created_at": datetime.now(UTC)} for t in (A, B)]
        await conn.execute(tenants.insert(), rows)
    settings = make_settings(database_url, api_keys="deployment-key")
    async with tenant_clients(settings) as (_app, a, b, _key):
        yield a, b


async def test_another_tenants_run_cannot_be_forked_nor_its_checkpoints_read(
    database_url: str, store: RunStore
) -> None:
    async with two_tenants(database_url, store) as (a, b):
        made = await a.post("/v1/runs", json=body())
        rid = made.json()["id"]
        for refused in (
            await b.post(f"/v1/runs/{rid}/fork", json={}),
            await b.post(f"/v1/runs/{rid}/fork", json={"mode": "replay"}),
            await b.get(f"/v1/runs/{rid}/checkpoints"),
        ):
            assert refused.status_code == 404, refused.text
            assert refused.json()["type"].endswith("/run-not-found")
        assert (await b.get("/v1/runs")).json()["data"] == []
        mine = await a.post(f"/v1/runs/{rid}/fork", json={})
        assert mine.status_code == 201, mine.text
        assert (await b.get(f"/v1/runs/{mine.json()['id']}")).status_code == 404
