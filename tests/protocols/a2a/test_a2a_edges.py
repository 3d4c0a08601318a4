"""A2A's refusals and approvals, in process (both back ends): wrong keys, another
tenant's agent, a browser token, a viewer, malformed JSON-RPC and arbitrary JSON, each in
the binding's own error shape with nothing changed; an approval-gated call decided over
A2A, and a stale decision refused."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from a2a.client import Client, ClientConfig, create_client
from a2a.types.a2a_pb2 import (
    CancelTaskRequest,
    GetTaskRequest,
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    Task,
    TaskState,
)
from a2a.utils.errors import InvalidParamsError, TaskNotFoundError, UnsupportedOperationError
from google.protobuf import struct_pb2
from google.protobuf.json_format import MessageToDict, ParseDict
from hypothesis import given, settings
from hypothesis import strategies as st

from app.settings import Settings
from app.store.runs import RunStore
from app.tenancy.keys import KeyAdmin
from app.tenancy.keys import Role as KeyRole
from app.tenancy.tenants import Tenants
from tests.api.conftest import KEY, api_settings
from tests.helpers import api_client, drive_once
from tests.strategies import JSON_VALUES

__all__ = ["api_settings"]

SCRIPT = [
    {"tool_calls": [{"name": "pay", "arguments": {"amount": 5}}]},
    {"text": "paid"},
]
AGENT = {
    "name": "payer",
    "description": "pays",
    "model": {"provider": "scripted", "name": "demo", "script": SCRIPT},
    "tools": [{"name": "pay", "parameters": {"type": "object"}, "approval": "always"}],
}
JSONRPC = "/a2a/payer"


@pytest.fixture
async def client(api_settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    async with api_client(api_settings, KEY) as made:
        response = await made.post("/v1/agents", json=AGENT)
        assert response.status_code == 201, response.text
        yield made


@pytest.fixture
async def a2a(client: httpx.AsyncClient) -> AsyncIterator[Client]:
    config = ClientConfig(httpx_client=client, streaming=False)
    made = await create_client("http://test/a2a/payer", config)
    yield made


async def runs(client: httpx.AsyncClient) -> list[str]:
    listed = await client.get("/v1/runs", params={"limit": 100})
    return [r["id"] for r in listed.json()["data"]]


def rpc(method: str, params: Any, id: Any = 1) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id, "method": method, "params": params}


def message(words: str) -> dict[str, Any]:
    return {
        "message": {
            "messageId": secrets.token_hex(4),
            "role": "ROLE_USER",
            "parts": [{"text": words}],
        }
    }


VERSION = {"A2A-Version": "1.0"}


async def test_a_wrong_key_is_refused_in_each_bindings_shape(client: httpx.AsyncClient) -> None:
    wrong = {"Authorization": "Bearer not-a-key", **VERSION}
    response = await client.post(JSONRPC, json=rpc("SendMessage", message("hi")), headers=wrong)
    assert response.status_code == 401 and response.headers["www-authenticate"] == "Bearer"
    body = response.json()
    assert body["jsonrpc"] == "2.0" and body["error"]["data"]["code"] == "unauthorized"
    rest = await client.post(f"{JSONRPC}/message:send", json=message("hi"), headers=wrong)
    assert rest.status_code == 401 and rest.json()["error"]["status"] == "UNAUTHENTICATED"
    card = await client.get(f"{JSONRPC}/.well-known/agent-card.json", headers=wrong)
    assert card.status_code == 401 and card.json()["type"] == "/problems/unauthorized"
    assert await runs(client) == []


async def test_a_browser_token_is_refused(client: httpx.AsyncClient) -> None:
    made = await client.post(
        "/v1/runs", json={"prompt": "x", "model": {"provider": "scripted", "name": "demo"}}
    )
    run_id = made.json()["id"]
    token = (await client.post(f"/v1/runs/{run_id}/browser-tokens")).json()["token"]
    bearer = {"Authorization": f"Bearer {token}", **VERSION}
    response = await client.post(JSONRPC, json=rpc("GetTask", {"id": run_id}), headers=bearer)
    assert response.status_code == 403 and response.json()["error"]["data"]["code"] == "forbidden"
    assert await runs(client) == [run_id]


async def test_another_tenants_agent_is_not_found(client: httpx.AsyncClient) -> None:
    tenants: Tenants = client.app.state.tenants  # type: ignore[attr-defined]
    keys: KeyAdmin = client.app.state.keys  # type: ignore[attr-defined]
    other = (await tenants.create(f"a2a-{secrets.token_hex(4)}")).id
    secret = (await keys.create(other, KeyRole.ADMIN, "other")).secret
    theirs = {"Authorization": f"Bearer {secret}", **VERSION}
    response = await client.post(JSONRPC, json=rpc("SendMessage", message("hi")), headers=theirs)
    assert (
        response.status_code == 404
        and response.json()["error"]["data"]["code"] == "agent-not-found"
    )
    rest = await client.post(f"{JSONRPC}/message:send", json=message("hi"), headers=theirs)
    assert rest.status_code == 404 and rest.json()["error"]["status"] == "NOT_FOUND"
    card = await client.get(f"{JSONRPC}/.well-known/agent-card.json", headers=theirs)
    assert card.status_code == 404
    assert await runs(client) == []


async def test_a_task_of_another_agent_is_not_found(client: httpx.AsyncClient, a2a: Client) -> None:
    made = await client.post(
        "/v1/runs", json={"prompt": "x", "model": {"provider": "scripted", "name": "demo"}}
    )
    with pytest.raises(TaskNotFoundError):
        await a2a.get_task(GetTaskRequest(id=made.json()["id"]))


async def test_a_viewer_reads_but_starts_no_task(client: httpx.AsyncClient) -> None:
    keys: KeyAdmin = client.app.state.keys  # type: ignore[attr-defined]
    secret = (await keys.create("default", KeyRole.VIEWER, "viewer")).secret
    viewer = {"Authorization": f"Bearer {secret}", **VERSION}
    response = await client.post(JSONRPC, json=rpc("SendMessage", message("hi")), headers=viewer)
    assert response.status_code == 200 and "runs:create" in response.json()["error"]["message"]
    card = await client.get(f"{JSONRPC}/.well-known/agent-card.json", headers=viewer)
    assert card.status_code == 200 and card.json()["name"] == "payer"
    assert await runs(client) == []


@pytest.mark.parametrize(
    ("body", "code"),
    [
        (b"{not json", -32700),
        (b"[]", -32600),
        (b'{"jsonrpc": "2.0", "id": 1}', -32600),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "Nope", "params": {}}', -32601),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": 5}}', -32602),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {}}', -32602),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "run_nope"}}', -32001),
        (
            b'{"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": '
            b'{"messageId": "'
            + b"m" * 256
            + b'", "role": "ROLE_USER", "parts": [{"text": "x"}]}}}',
            -32602,
        ),
        (  # (JSON holds no infinity: a DataPart's number out of a double's range)
            b'{"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": '
            b'{"messageId": "i", "role": "ROLE_USER", "parts": [{"data": {"x": 1e400}}]}}}',
            -32602,
        ),
    ],
)
async def test_malformed_json_rpc_gets_its_error_and_changes_nothing(
    client: httpx.AsyncClient, body: bytes, code: int
) -> None:
    response = await client.post(
        JSONRPC, content=body, headers={"content-type": "application/json", **VERSION}
    )
    assert response.status_code == 200, response.text
    assert response.json()["error"]["code"] == code, response.text
    assert await runs(client) == []


JSON = JSON_VALUES
METHODS = st.sampled_from(
    [
        "SendMessage",
        "GetTask",
        "ListTasks",
        "CancelTask",
        "SubscribeToTask",
        "CreateTaskPushNotificationConfig",
    ]
)


async def test_arbitrary_params_never_break_the_server(client: httpx.AsyncClient) -> None:
    """Hypothesis's arbitrary JSON as each method's params (drawn first, then sent: the
    app's client lives on this test's loop): never an internal error, and a refusal
    changes nothing."""
    cases: list[tuple[str, Any]] = []

    @settings(max_examples=80, deadline=None, database=None)
    @given(method=METHODS, params=JSON)
    def draw(method: str, params: Any) -> None:
        cases.append((method, params))

    draw()
    before = await runs(client)
    for method, params in cases:
        response = await client.post(JSONRPC, json=rpc(method, params), headers=VERSION)
        assert response.status_code == 200, response.text
        error = response.json().get("error")
        assert error is None or error["code"] != -32603, (method, params, response.text)
        if error is not None:
            assert await runs(client) == before, (method, params)
        else:
            before = await runs(client)


def decision(task: Task, **fields: Any) -> Message:
    (asked,) = task.status.message.parts
    request = MessageToDict(asked.data)
    part = Part(data=struct_pb2.Value(), metadata=struct_pb2.Struct())
    answer = {"id": request["id"], "arguments_hash": request["arguments_hash"], **fields}
    ParseDict(answer, part.data)
    part.metadata.update({"adk_type": "approval_response"})
    return Message(
        message_id=secrets.token_hex(4), role=Role.ROLE_USER, task_id=task.id, parts=[part]
    )


async def sent(a2a: Client, message: Message) -> Task:
    configuration = SendMessageConfiguration(return_immediately=True)
    (event,) = [
        e
        async for e in a2a.send_message(
            SendMessageRequest(message=message, configuration=configuration)
        )
    ]
    return event.task


async def test_an_approval_is_asked_and_decided_over_a2a(
    a2a: Client, client: httpx.AsyncClient, store: RunStore, api_settings: Settings
) -> None:
    start = Message(message_id="m1", role=Role.ROLE_USER, parts=[Part(text="pay 5")])
    task = await sent(a2a, start)
    assert task.status.state == TaskState.TASK_STATE_SUBMITTED
    await drive_once(store, api_settings)
    asked = await a2a.get_task(GetTaskRequest(id=task.id))
    assert asked.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    (part,) = asked.status.message.parts
    assert MessageToDict(part.metadata) == {"adk_type": "approval_request"}
    request = MessageToDict(part.data)
    assert request["name"] == "pay" and request["args"] == {"amount": 5.0}

    with pytest.raises(InvalidParamsError) as stale:
        await sent(a2a, decision(asked, decision="approve", arguments_hash="0" * 64))
    assert stale.value.data is not None and stale.value.data["code"] == "approval-stale"
    assert (await client.get(f"/v1/runs/{task.id}")).json()["required_action"][
        "type"
    ] == "approve_tool_calls"

    bogus = decision(asked, decision="approve")
    extra = Part(data=struct_pb2.Value(), metadata=struct_pb2.Struct())
    ParseDict({"id": "call_bogus", "name": "pay", "response": "paid"}, extra.data)
    extra.metadata.update({"adk_type": "function_response"})
    bogus.parts.append(extra)
    with pytest.raises(InvalidParamsError) as refused:  # (refused whole: nothing decided)
        await sent(a2a, bogus)
    assert refused.value.data is not None
    assert (await client.get(f"/v1/runs/{task.id}")).json()["required_action"][
        "type"
    ] == "approve_tool_calls"

    await sent(a2a, decision(asked, decision="approve"))
    released = await a2a.get_task(GetTaskRequest(id=task.id))
    (call,) = released.status.message.parts
    assert MessageToDict(call.metadata) == {"adk_type": "function_call"}
    run = (await client.get(f"/v1/runs/{task.id}/events")).json()["data"]
    approved = [e for e in run if e["type"] == "tool_call.approved"]
    assert len(approved) == 1 and approved[0]["actor"].startswith("key:")


async def test_an_answer_to_an_ended_task_is_refused(
    a2a: Client, store: RunStore, api_settings: Settings
) -> None:
    task = await sent(a2a, Message(message_id="m2", role=Role.ROLE_USER, parts=[Part(text="go")]))
    await a2a.cancel_task(CancelTaskRequest(id=task.id))
    with pytest.raises(UnsupportedOperationError):
        await sent(
            a2a,
            Message(
                message_id="m3", role=Role.ROLE_USER, task_id=task.id, parts=[Part(text="more")]
            ),
        )


async def test_a_message_sent_again_in_a_context_starts_no_second_task(
    client: httpx.AsyncClient, a2a: Client, store: RunStore, api_settings: Settings
) -> None:
    echo = {**AGENT, "name": "echo", "tools": [], "model": {"provider": "scripted", "name": "demo"}}
    assert (await client.post("/v1/agents", json=echo)).status_code == 201
    config = ClientConfig(httpx_client=client, streaming=False)
    echoing = await create_client("http://test/a2a/echo", config)
    first = await sent(
        echoing, Message(message_id="e1", role=Role.ROLE_USER, parts=[Part(text="a")])
    )
    await drive_once(store, api_settings)
    again = Message(
        message_id="e2", role=Role.ROLE_USER, context_id=first.context_id, parts=[Part(text="b")]
    )
    second = await sent(echoing, again)
    assert (await sent(echoing, again)).id == second.id  # (while it is queued)
    await drive_once(store, api_settings)
    assert (await sent(echoing, again)).id == second.id  # (and once it completed)
    assert len(await runs(client)) == 2
