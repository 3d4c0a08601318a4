"""The AG-UI endpoint in process: a thread's turns, its frontend tools' calls answered by
tool messages, gated calls by resume entries; each stream as the protocol's models
parse it."""

from __future__ import annotations

import httpx

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
    print(events)
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
    print(events)
    assert types(events)[0] == "RUN_STARTED"
    text = "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")
    assert text == "It is sunny in Paris"
    assert finished(events)["outcome"] == {"type": "success"}
