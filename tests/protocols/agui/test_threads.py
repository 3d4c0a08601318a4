"""A thread's turns over AG-UI: a turn is checked whole before anything is written (its
decisions on the run it replaces included); a deleted agent starts no turn and a later
turn never inherits an earlier turn's frontend tools; two first requests at once each
get their own run, and a retry finds it; a request's ids and tools are bounded."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from app.core.scope import Scope
from tests.helpers import wait_for
from tests.protocols.agui.agui import (
    WEATHER,
    finished,
    make_agent,
    post,
    run_input,
    scripted,
    tool_message,
    types,
    user,
)
from tests.protocols.agui.test_answers import LOOKUP, event_types, two_gated
from tests.protocols.agui.test_refusals import problem, runs


async def test_a_refused_turn_decides_nothing(client: httpx.AsyncClient) -> None:
    run_id, interrupts = await two_gated(client, "g")
    resume = [{"interruptId": i["id"], "status": "cancelled"} for i in interrupts]
    bad = {"name": "bad name!", "description": ""}
    body = run_input("g", "r2", [user("pay"), user("no, stop", "u2")], tools=[bad], resume=resume)
    problem(await client.post("/ag-ui/payer", json=body), 422, "invalid-request")
    approvals = (await client.get(f"/v1/runs/{run_id}/approvals")).json()["data"]
    assert [a["status"] for a in approvals] == ["pending", "pending"]
    log = await event_types(client, run_id)
    assert "tool_call.rejected" not in log and "run.resumed" not in log
    assert len(await runs(client)) == 1


async def test_a_deleted_agent_takes_answers_but_starts_no_turn(
    client: httpx.AsyncClient,
) -> None:
    model = scripted({"tool_calls": [{"name": "get_weather", "arguments": {}}]}, {"text": "ok"})
    await make_agent(client, "del1", model=model)
    await post(client, "del1", run_input("d1", "r1", [user("w?")], tools=[WEATHER]))
    assert (await client.delete("/v1/agents/del1")).status_code == 204
    answer = run_input("d1", "r2", [user("w?"), tool_message("call_1_0", "sunny")])
    response, events = await post(client, "del1", answer)  # (a run in flight goes on)
    assert response.status_code == 200, response.text
    assert finished(events)["result"] == "ok"
    turn = run_input("d1", "r3", [user("w?"), user("again", "u2")])
    problem(await client.post("/ag-ui/del1", json=turn), 404, "agent-not-found")
    assert len(await runs(client)) == 1


async def test_a_later_turn_never_inherits_the_frontends_tools(
    client: httpx.AsyncClient,
) -> None:
    """The agent deleted and made again: the thread's next turn runs on what its last run
    was configured with (its version is gone), without that turn's frontend tools."""
    model = scripted({"tool_calls": [{"name": "get_weather", "arguments": {}}]}, {"text": "ok"})
    await make_agent(client, "del2", model=model, tools=[LOOKUP])
    await post(client, "del2", run_input("d2", "r1", [user("w?")], tools=[WEATHER]))
    assert (await client.delete("/v1/agents/del2")).status_code == 204
    await make_agent(client, "del2", model=scripted({"text": "new"}))
    streaming = asyncio.create_task(
        post(client, "del2", run_input("d2", "r2", [user("w?"), user("again", "u2")]))
    )
    try:
        made = await wait_for(lambda: runs(client), lambda listed: len(listed) == 2)
        service = client.app.state.service  # type: ignore[attr-defined]
        view = await service.get_run(made[0]["id"], scope=Scope.ALL)
        assert [t["name"] for t in view.record.config["tools"]] == ["lookup"]
        _, events = await streaming
        assert events[-1]["type"] == "RUN_ERROR"  # (the script calls a tool it has not)
    finally:
        streaming.cancel()


async def first_read_stale(client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch) -> None:
    """The next request reads the thread as new (as it would have, arriving together
    with the request that made its first run)."""
    service = client.app.state.service  # type: ignore[attr-defined]
    lookup = service.by_idempotency_key
    stale = [True]

    async def racing(key: str, *, scope: Scope) -> Any:
        if stale and key.count(":") == 2:  # (the thread's key, read first)
            stale.clear()
            return None
        return await lookup(key, scope=scope)

    monkeypatch.setattr(service, "by_idempotency_key", racing)


@pytest.mark.parametrize("second_prompt", ["hello", "something else"])
async def test_two_first_requests_at_once_get_a_run_each(
    client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch, second_prompt: str
) -> None:
    """The loser of the thread's first run is a later turn of the thread; retried, each
    request finds its own run."""
    await make_agent(client, "echo", model=scripted({"text": "hi there"}))
    _, won = await post(client, "echo", run_input("nn1", "rB", [user("hello")]))
    await first_read_stale(client, monkeypatch)
    lost_body = run_input("nn1", "rA", [user(second_prompt)])
    response, lost = await post(client, "echo", lost_body)
    assert response.status_code == 200, response.text
    winner = won[0]["metadata"]["agentrun"]["run_id"]
    loser = lost[0]["metadata"]["agentrun"]["run_id"]
    assert loser != winner
    newer, older = await runs(client)
    assert (older["id"], newer["id"]) == (winner, loser)
    assert newer["previous_run_id"] == winner and newer["origin"]["run_id"] == "rA"
    for body, run_id in ((lost_body, loser), (run_input("nn1", "rB", [user("hello")]), winner)):
        _, again = await post(client, "echo", body)
        assert again[0]["metadata"]["agentrun"]["run_id"] == run_id
    assert len(await runs(client)) == 2


async def test_one_run_id_with_two_messages_at_once_is_refused(
    client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    await make_agent(client, "echo", model=scripted({"text": "hi there"}))
    await post(client, "echo", run_input("nn2", "rA", [user("hello")]))
    await first_read_stale(client, monkeypatch)
    other = await client.post("/ag-ui/echo", json=run_input("nn2", "rA", [user("bye")]))
    problem(other, 422, "idempotency-key-reused")
    assert len(await runs(client)) == 1


async def test_ids_and_tool_schemas_are_bounded(client: httpx.AsyncClient) -> None:
    await make_agent(client, "echo", model=scripted({"text": "hi"}))
    long = "x" * 1025
    for body in (run_input(long, "r", [user("hi")]), run_input("t", long, [user("hi")])):
        doc = problem(await client.post("/ag-ui/echo", json=body), 422, "invalid-request")
        assert "1024" in doc["detail"]
    nope = {"name": "nope", "description": "", "parameters": {"type": "nope"}}
    body = run_input("t", "r", [user("hi")], tools=[nope])
    doc = problem(await client.post("/ag-ui/echo", json=body), 422, "invalid-request")
    assert "tools[0].parameters" in doc["detail"]
    assert await runs(client) == []
    _, events = await post(client, "echo", run_input("x" * 1024, "r", [user("hi")]))
    assert finished(events)["result"] == "hi"


async def test_a_later_runs_results_are_shown_though_its_call_ids_repeat(
    client: httpx.AsyncClient,
) -> None:
    """Each run of the scripted model names its first call `call_1_0`: the thread's
    earlier tool message for that id does not hide the next run's result."""
    model = scripted({"tool_calls": [{"name": "lookup", "arguments": {}}]}, {"text": "found"})
    await make_agent(client, "finder", model=model, tools=[LOOKUP])

    async def turn(run: str, messages: list[dict[str, Any]], output: str) -> list[dict[str, Any]]:
        streaming = asyncio.create_task(post(client, "finder", run_input("k", run, messages)))
        waiting = await wait_for(
            lambda: runs(client),
            lambda listed: listed and listed[0]["status"] == "requires_action",
        )
        answer = {"results": [{"tool_call_id": "call_1_0", "output": output}]}
        url = f"/v1/runs/{waiting[0]['id']}/tool-results"
        assert (await client.post(url, json=answer)).status_code == 200
        _, events = await streaming
        return events

    first = await turn("r1", [user("find")], "one")
    looked_up = {"name": "lookup", "arguments": "{}"}
    assert [e["content"] for e in first if e["type"] == "TOOL_CALL_RESULT"] == ["one"]
    said = [
        user("find"),
        {
            "id": "a1",
            "role": "assistant",
            "toolCalls": [{"id": "call_1_0", "type": "function", "function": looked_up}],
        },
        tool_message("call_1_0", "one"),
        {"id": "a2", "role": "assistant", "content": "found"},
        user("again", "u2"),
    ]
    second = await turn("r2", said, "two")
    assert [e["content"] for e in second if e["type"] == "TOOL_CALL_RESULT"] == ["two"]
    assert types(second)[-1] == "RUN_FINISHED"
