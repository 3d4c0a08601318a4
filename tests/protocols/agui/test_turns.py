"""The AG-UI endpoint in process: a thread's turns, its frontend tools' calls answered by
tool messages, gated calls by resume entries; each stream as the protocol's models
parse it."""

from __future__ import annotations

import asyncio

import httpx

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


async def test_a_frontend_tool_call_is_pending_then_answered_by_a_tool_message(
    client: httpx.AsyncClient,
) -> None:
    model = scripted(
        {"tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}]},
        {"text": "It is sunny in Paris"},
    )
    await make_agent(client, "helper", model=model)
    first = run_input("th-1", "r-1", [user("Weather in Paris?")], tools=[WEATHER])
    response, events = await post(client, "helper", first)
    assert response.status_code == 200, response.text
    done = finished(events)
    pending = done["outcome"]["pendingToolCallIds"]
    (start,) = [e for e in events if e["type"] == "TOOL_CALL_START"]
    assert pending == [start["toolCallId"]]
    second = run_input(
        "th-1",
        "r-2",
        [user("Weather in Paris?"), tool_message(start["toolCallId"], "sunny")],
        tools=[WEATHER],
    )
    response, events = await post(client, "helper", second)
    assert response.status_code == 200, response.text
    assert types(events)[0] == "RUN_STARTED"
    text = "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")
    assert text == "It is sunny in Paris"
    assert finished(events)["outcome"] == {"type": "success"}


PAY = {"name": "pay", "description": "Pay", "parameters": {"type": "object"}}


async def test_an_approval_is_an_interrupt_decided_by_resume_entries(
    client: httpx.AsyncClient,
) -> None:
    model = scripted({"tool_calls": [{"name": "pay", "arguments": {"amount": 5}}]}, {"text": "ok"})
    await make_agent(client, "payer", model=model, approval="always")
    response, events = await post(client, "payer", run_input("p", "r1", [user("pay")], tools=[PAY]))
    outcome = finished(events)["outcome"]
    assert outcome["type"] == "interrupt"
    (interrupt,) = outcome["interrupts"]
    run_id = events[0]["metadata"]["agentrun"]["run_id"]
    assert interrupt["toolCallId"] == "call_1_0" and interrupt["reason"] == "tool_approval"
    assert interrupt["metadata"]["arguments"] == {"amount": 5}

    stale = interrupt["id"].rsplit("#", 1)[0] + "#" + "0" * 64
    entry = {"interruptId": stale, "status": "resolved", "payload": {"action": "approve"}}
    refused = await client.post("/ag-ui/payer", json=run_input("p", "r2", [], resume=[entry]))
    assert refused.status_code == 409 and refused.json()["type"] == "/problems/approval-stale"
    pending = (await client.get(f"/v1/runs/{run_id}/approvals")).json()["data"]
    assert [a["status"] for a in pending] == ["pending"]

    entry = {"interruptId": interrupt["id"], "status": "cancelled"}
    response, events = await post(client, "payer", run_input("p", "r3", [], resume=[entry]))
    assert response.status_code == 200, response.text
    (result,) = [e for e in events if e["type"] == "TOOL_CALL_RESULT"]
    assert result["toolCallId"] == "call_1_0" and "rejected" in result["content"]
    assert finished(events)["result"] == "ok"
    decided = (await client.get(f"/v1/runs/{run_id}/approvals")).json()["data"]
    assert [a["status"] for a in decided] == ["rejected"]


async def test_the_agents_own_tools_are_followed_until_their_executor_answers(
    client: httpx.AsyncClient,
) -> None:
    """A call of the agent's own tool is not the frontend's: the stream goes on while the
    agent's executor answers it (here by the API), then shows its result and the answer."""
    model = scripted(
        {"tool_calls": [{"name": "lookup", "arguments": {"q": "x"}}]}, {"text": "found it"}
    )
    lookup = {"name": "lookup", "description": "", "parameters": {"type": "object"}}
    await make_agent(client, "finder", model=model, tools=[lookup])
    streaming = asyncio.create_task(post(client, "finder", run_input("f", "r1", [user("find")])))
    waiting = await wait_for(
        lambda: client.get("/v1/runs"),
        lambda r: any(x["status"] == "requires_action" for x in r.json()["data"]),
    )
    (run,) = waiting.json()["data"]
    assert not streaming.done()
    answer = {"results": [{"tool_call_id": "call_1_0", "output": "the answer"}]}
    submitted = await client.post(f"/v1/runs/{run['id']}/tool-results", json=answer)
    assert submitted.status_code == 200, submitted.text
    _, events = await streaming
    kinds = types(events)
    assert (
        kinds.index("TOOL_CALL_END")
        < kinds.index("TOOL_CALL_RESULT")
        < kinds.index("TEXT_MESSAGE_START")
    )
    (result,) = [e for e in events if e["type"] == "TOOL_CALL_RESULT"]
    assert result["content"] == "the answer"
    assert finished(events)["outcome"] == {"type": "success"}


async def test_a_new_user_message_continues_the_thread_and_a_retry_makes_nothing_twice(
    client: httpx.AsyncClient,
) -> None:
    await make_agent(client, "echo", model=scripted({"text": "first"}, {"text": "second"}))
    body = run_input("e", "r1", [user("one")])
    _, events = await post(client, "echo", body)
    assert finished(events)["result"] == "first"
    _, again = await post(client, "echo", body)  # (the same request: the same run)
    assert again[0]["metadata"] == events[0]["metadata"] and finished(again)["result"] == "first"
    said = [user("one"), {"id": "a1", "role": "assistant", "content": "first"}, user("two", "u2")]
    _, second = await post(client, "echo", run_input("e", "r2", said))
    text = "".join(e["delta"] for e in second if e["type"] == "TEXT_MESSAGE_CONTENT")
    assert text == "first"  # (a new run of the same agent: its script starts again)
    _, retried = await post(client, "echo", run_input("e", "r2", said))
    assert retried[0]["metadata"] == second[0]["metadata"]
    listed = (await client.get("/v1/runs")).json()["data"]
    assert len(listed) == 2
    newer, older = listed
    assert newer["previous_run_id"] == older["id"] == newer["conversation_id"]
    assert newer["origin"] == {
        "protocol": "ag-ui",
        "thread_id": "e",
        "run_id": "r2",
        "frontend_tools": [],
    }
    history = (await client.get(f"/v1/runs/{newer['id']}/messages")).json()["data"]
    said_so_far = [str(m["message"]["content"]) for m in history]
    assert ["one" in said_so_far[0], "first" in said_so_far[1], "two" in said_so_far[2]] == [
        True
    ] * 3


async def test_a_new_message_while_the_run_waits_for_the_frontend_interrupts_it(
    client: httpx.AsyncClient,
) -> None:
    model = scripted(
        {"tool_calls": [{"name": "get_weather", "arguments": {"city": "Rome"}}]},
        {"text": "never mind then"},
    )
    await make_agent(client, "helper", model=model)
    _, events = await post(
        client, "helper", run_input("w", "r1", [user("weather?")], tools=[WEATHER])
    )
    assert finished(events)["outcome"]["pendingToolCallIds"] == ["call_1_0"]
    _, events = await post(client, "helper", run_input("w", "r2", [user("forget it", "u2")]))
    newer, older = (await client.get("/v1/runs")).json()["data"]
    assert older["status"] == "cancelled"
    assert newer["previous_run_id"] == older["id"]
    assert events[-1]["type"] in ("RUN_FINISHED", "RUN_ERROR")


async def test_a_failed_run_is_run_error_and_a_cancelled_one_says_so(
    client: httpx.AsyncClient,
) -> None:
    await make_agent(
        client, "broken", model=scripted({"tool_calls": [{"name": "nope", "arguments": {}}]})
    )
    response, events = await post(client, "broken", run_input("b", "r1", [user("go")]))
    assert response.status_code == 200
    assert events[-1]["type"] == "RUN_ERROR" and events[-1]["code"] == "UnknownToolCall"

    await make_agent(
        client, "helper", model=scripted({"tool_calls": [{"name": "get_weather", "arguments": {}}]})
    )
    _, events = await post(client, "helper", run_input("c", "r1", [user("go")], tools=[WEATHER]))
    run_id = events[0]["metadata"]["agentrun"]["run_id"]
    assert (await client.post(f"/v1/runs/{run_id}/cancel")).status_code == 200
    late = run_input("c", "r2", [user("go"), tool_message("call_1_0", "x")], tools=[WEATHER])
    _, events = await post(client, "helper", late)
    assert finished(events)["outcome"] == {"type": "cancelled"}


async def test_a_browser_token_answers_and_follows_its_own_run_only(
    client: httpx.AsyncClient,
) -> None:
    model = scripted(
        {"tool_calls": [{"name": "get_weather", "arguments": {"city": "Oslo"}}]}, {"text": "cold"}
    )
    await make_agent(client, "helper", model=model)
    _, events = await post(
        client, "helper", run_input("bt", "r1", [user("weather?")], tools=[WEATHER])
    )
    run_id = events[0]["metadata"]["agentrun"]["run_id"]
    minted = await client.post(f"/v1/runs/{run_id}/browser-tokens", json={})
    token = {"Authorization": f"Bearer {minted.json()['token']}"}
    start = run_input("bt", "r2", [user("more", "u2")])
    refused = await client.post("/ag-ui/helper", json=start, headers=token)
    assert refused.status_code == 403, refused.text
    assert refused.json()["permission"] == "runs:create"
    await post(client, "helper", run_input("bt2", "r1", [user("x")], tools=[WEATHER]))
    elsewhere = run_input("bt2", "r2", [user("x"), tool_message("call_1_0", "x")])
    assert (await client.post("/ag-ui/helper", json=elsewhere, headers=token)).status_code == 404
    answer = run_input("bt", "r3", [user("weather?"), tool_message("call_1_0", "-5 C")])
    response, events = await post(client, "helper", answer, headers=token)
    assert response.status_code == 200, response.text
    assert finished(events)["result"] == "cold"
    log = (await client.get(f"/v1/runs/{run_id}/events")).json()["data"]
    (received,) = [e for e in log if e["type"] == "tool_result.received"]
    assert received["actor"] == f"browser:{run_id}"
