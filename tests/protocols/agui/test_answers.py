"""What answers over AG-UI may do: tool messages answer the frontend's calls only (never
the agent's own executors'), a browser token answers and decides but never cancels, an
operator's interrupt is cancelled only while the run waits on it; and a request refused
at any part of it (its answers, its decisions, its cancel) writes nothing."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from app.service.errors import RunStateConflict
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
from tests.protocols.agui.test_refusals import problem

PAY = {"name": "pay", "description": "Pay", "parameters": {"type": "object"}}
LOOKUP = {"name": "lookup", "description": "", "parameters": {"type": "object"}, "queue": "q1"}


async def token_of(client: httpx.AsyncClient, run_id: str) -> dict[str, str]:
    minted = await client.post(f"/v1/runs/{run_id}/browser-tokens", json={})
    assert minted.status_code == 201, minted.text
    return {"Authorization": f"Bearer {minted.json()['token']}"}


async def run_of(client: httpx.AsyncClient, run_id: str) -> dict[str, Any]:
    response = await client.get(f"/v1/runs/{run_id}")
    assert response.status_code == 200, response.text
    doc: dict[str, Any] = response.json()
    return doc


async def event_types(client: httpx.AsyncClient, run_id: str) -> list[str]:
    response = await client.get(f"/v1/runs/{run_id}/events", params={"limit": 1000})
    return [e["type"] for e in response.json()["data"]]


async def waiting_on_budget(client: httpx.AsyncClient) -> str:
    """A thread `bu` whose run waits on its budget (its second model call is refused)."""
    model = scripted(
        {"tool_calls": [{"name": "get_weather", "arguments": {"city": "Oslo"}}]}, {"text": "cold"}
    )
    await make_agent(client, "capped", model=model, limits={"max_model_calls": 1})
    _, events = await post(client, "capped", run_input("bu", "r1", [user("w?")], tools=[WEATHER]))
    run_id: str = events[0]["metadata"]["agentrun"]["run_id"]
    answer = run_input("bu", "r2", [user("w?"), tool_message("call_1_0", "-5 C")], tools=[WEATHER])
    _, events = await post(client, "capped", answer)
    (interrupt,) = finished(events)["outcome"]["interrupts"]
    assert interrupt["id"] == "budget"
    return run_id


async def test_a_browser_token_may_not_cancel_its_run(client: httpx.AsyncClient) -> None:
    run_id = await waiting_on_budget(client)
    token = await token_of(client, run_id)
    cancel = run_input("bu", "r3", [], resume=[{"interruptId": "budget", "status": "cancelled"}])
    refused = await client.post("/ag-ui/capped", json=cancel, headers=token)
    assert problem(refused, 403, "forbidden")["permission"] == "runs:cancel"
    assert (await run_of(client, run_id))["status"] == "requires_action"
    _, events = await post(client, "capped", cancel)  # (an API key with runs:cancel may)
    assert finished(events)["outcome"] == {"type": "cancelled"}


async def test_an_interrupt_the_run_does_not_wait_on_cancels_nothing(
    client: httpx.AsyncClient,
) -> None:
    """`budget` cancelled while the run waits for the frontend's call: 422 as an unknown
    interrupt, and the answer beside it is not taken either."""
    await make_agent(
        client, "helper", model=scripted({"tool_calls": [{"name": "get_weather", "arguments": {}}]})
    )
    _, events = await post(client, "helper", run_input("c", "r1", [user("w?")], tools=[WEATHER]))
    run_id = events[0]["metadata"]["agentrun"]["run_id"]
    for interrupt in ("budget", "invalid_tool_call"):
        body = run_input(
            "c",
            "r2",
            [user("w?"), tool_message("call_1_0", "sunny")],
            resume=[{"interruptId": interrupt, "status": "cancelled"}],
        )
        refused = await client.post("/ag-ui/helper", json=body)
        assert interrupt in problem(refused, 422, "invalid-request")["detail"]
    after = await run_of(client, run_id)
    assert after["status"] == "requires_action"
    assert [c["answered"] for c in after["required_action"]["tool_calls"]] == [False]


async def test_tool_messages_answer_the_frontends_calls_only(client: httpx.AsyncClient) -> None:
    """A call of the agent's own tool (a queue's) is its executor's to answer: a tool
    message for it is refused, from a browser token as from a key; the run still waits."""
    model = scripted({"tool_calls": [{"name": "lookup", "arguments": {}}]}, {"text": "found"})
    await make_agent(client, "finder", model=model, tools=[LOOKUP])
    streaming = asyncio.create_task(post(client, "finder", run_input("f", "r1", [user("find")])))
    waiting = await wait_for(
        lambda: client.get("/v1/runs"),
        lambda r: any(x["status"] == "requires_action" for x in r.json()["data"]),
    )
    (run,) = waiting.json()["data"]
    token = await token_of(client, run["id"])
    answer = run_input("f", "r2", [user("find"), tool_message("call_1_0", "forged")])
    for headers in (token, {}):
        refused = await client.post("/ag-ui/finder", json=answer, headers=headers)
        assert "lookup" in problem(refused, 422, "tool-call-not-pending")["detail"]
    assert "tool_result.received" not in await event_types(client, run["id"])
    assert not streaming.done()
    results = {"results": [{"tool_call_id": "call_1_0", "output": "the answer"}]}
    submitted = await client.post(f"/v1/runs/{run['id']}/tool-results", json=results)
    assert submitted.status_code == 200, submitted.text
    _, events = await streaming
    assert finished(events)["result"] == "found"


async def test_too_many_resume_entries_are_a_422(client: httpx.AsyncClient) -> None:
    await make_agent(
        client, "helper", model=scripted({"tool_calls": [{"name": "get_weather", "arguments": {}}]})
    )
    await post(client, "helper", run_input("m", "r1", [user("w?")], tools=[WEATHER]))
    entry = {"interruptId": f"call_1_0@0#{'a' * 64}", "status": "cancelled"}
    body = run_input("m", "r2", [], resume=[entry] * 1001)
    assert (
        "1000"
        in problem(await client.post("/ag-ui/helper", json=body), 422, "invalid-request")["detail"]
    )


async def two_gated(client: httpx.AsyncClient, thread: str) -> tuple[str, list[dict[str, Any]]]:
    """A thread whose run waits on two gated calls of the frontend's `pay`."""
    calls = [{"name": "pay", "arguments": {"amount": 5}}, {"name": "pay", "arguments": {"n": 1}}]
    model = scripted({"tool_calls": calls}, {"text": "paid"})
    await make_agent(client, "payer", model=model, approval="always")
    _, events = await post(client, "payer", run_input(thread, "r1", [user("pay")], tools=[PAY]))
    interrupts: list[dict[str, Any]] = finished(events)["outcome"]["interrupts"]
    assert [i["toolCallId"] for i in interrupts] == ["call_1_0", "call_1_1"]
    return events[0]["metadata"]["agentrun"]["run_id"], interrupts


async def test_answers_refused_after_decisions_keep_no_decision(
    client: httpx.AsyncClient,
) -> None:
    run_id, interrupts = await two_gated(client, "g")
    approve = {
        "interruptId": interrupts[0]["id"],
        "status": "resolved",
        "payload": {"action": "approve"},
    }
    body = run_input("g", "r2", [user("pay"), tool_message("call_1_1", "done")], resume=[approve])
    refused = await client.post("/ag-ui/payer", json=body, headers={})
    problem(refused, 422, "tool-call-not-pending")
    approvals = (await client.get(f"/v1/runs/{run_id}/approvals")).json()["data"]
    assert [a["status"] for a in approvals] == ["pending", "pending"]
    assert "tool_call.approved" not in await event_types(client, run_id)

    # Approving the call a tool message answers, in the same request: both are taken.
    body = run_input("g", "r3", [user("pay"), tool_message("call_1_0", "done")], resume=[approve])
    response, events = await post(client, "payer", body)
    assert response.status_code == 200, response.text
    assert finished(events)["outcome"]["type"] == "interrupt"  # (call_1_1 still waits)
    log = await event_types(client, run_id)
    assert log.count("tool_call.approved") == 1 and log.count("tool_result.received") == 1


async def test_two_identical_answers_at_once_are_both_taken(
    client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The second of two identical answers finds the run resumed by the first: it is
    the answer accepted already, not a conflict."""
    model = scripted(
        {"tool_calls": [{"name": "get_weather", "arguments": {}}]}, {"text": "sunny it is"}
    )
    await make_agent(client, "helper", model=model)
    await post(client, "helper", run_input("i", "r1", [user("w?")], tools=[WEATHER]))
    service = client.app.state.service  # type: ignore[attr-defined]
    submit = service.submit_tool_results
    raced: list[Exception] = []

    async def beaten(*args: Any, **kwargs: Any) -> Any:
        await submit(*args, **kwargs)  # (the other request's, just before this one's)
        try:
            return await submit(*args, **kwargs)
        except RunStateConflict as exc:
            raced.append(exc)
            raise

    monkeypatch.setattr(service, "submit_tool_results", beaten)
    answer = run_input("i", "r2", [user("w?"), tool_message("call_1_0", "sunny")])
    response, events = await post(client, "helper", answer)
    assert raced, "the race was not reproduced"
    assert response.status_code == 200, response.text
    assert finished(events)["result"] == "sunny it is"
    assert "TOOL_CALL_RESULT" not in types(events)  # (the request brought it)
