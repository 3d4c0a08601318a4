"""AG-UI requests and streams for the in-process tests: a `RunAgentInput` body, and a
response's events, each parsed by the protocol's own models (`ag_ui.core.Event`)."""

from __future__ import annotations

import json
import re
from typing import Any

import httpx
from ag_ui.core import Event
from pydantic import TypeAdapter

EVENTS: TypeAdapter[Any] = TypeAdapter(Event)

WEATHER = {
    "name": "get_weather",
    "description": "The weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
}


def scripted(*answers: dict[str, Any]) -> dict[str, Any]:
    return {"provider": "scripted", "name": "demo", "script": list(answers)}


async def make_agent(client: httpx.AsyncClient, name: str, **spec: Any) -> None:
    response = await client.post("/v1/agents", json={"name": name, "description": name, **spec})
    assert response.status_code == 201, response.text


def user(text: str, mid: str = "u1") -> dict[str, Any]:
    return {"id": mid, "role": "user", "content": text}


def tool_message(call_id: str, content: str, mid: str = "t1") -> dict[str, Any]:
    return {"id": mid, "role": "tool", "toolCallId": call_id, "content": content}


def run_input(
    thread: str, run: str, messages: list[dict[str, Any]], **fields: Any
) -> dict[str, Any]:
    return {"threadId": thread, "runId": run, "messages": messages, **fields}


def parse(text: str) -> list[dict[str, Any]]:
    """The stream's events, each validated as an AG-UI event; comments (pings) skipped.
    Lines end at CR, LF or CRLF only, as the SSE format says (`str.splitlines` would also
    split at U+2028 and U+0085, which JSON strings carry unescaped)."""
    out = []
    for block in re.split(r"\r\n\r\n|\n\n|\r\r", text):
        lines = re.split(r"\r\n|\r|\n", block)
        data = [line[5:].removeprefix(" ") for line in lines if line.startswith("data:")]
        if data:
            event = json.loads("\n".join(data))
            EVENTS.validate_python(event)
            out.append(event)
    return out


async def post(
    client: httpx.AsyncClient, agent: str, body: Any, **kw: Any
) -> tuple[httpx.Response, list[dict[str, Any]]]:
    """The response and, for a stream, its events (read to its end)."""
    response = await client.post(f"/ag-ui/{agent}", json=body, **kw)
    events = parse(response.text) if response.status_code == 200 else []
    return response, events


def types(events: list[dict[str, Any]]) -> list[str]:
    return [e["type"] for e in events]


def finished(events: list[dict[str, Any]]) -> dict[str, Any]:
    last = events[-1]
    assert last["type"] == "RUN_FINISHED", events
    return last
