"""A2A against real processes (`agentrun api` and two `agentrun worker`s on a database
of their own, the agent's model over the OpenAI wire to the mock provider), driven by
a2a-sdk's own client (`create_client` on `/a2a/{agent}`) over both of its bindings:
a task that needs a client's tool, its answer and its artifact; GetTask and ListTasks;
CancelTask; SubscribeToTask; a context's second message; a worker killed mid-task."""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from a2a.client import Client, ClientConfig, create_client
from a2a.types.a2a_pb2 import (
    CancelTaskRequest,
    GetTaskRequest,
    ListTasksRequest,
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    StreamResponse,
    SubscribeToTaskRequest,
    Task,
    TaskState,
)
from google.protobuf import struct_pb2
from google.protobuf.json_format import MessageToDict, ParseDict

from tests.conftest import fresh_database
from tests.e2e.model_wire import MODEL
from tests.e2e.processes import wait_until
from tests.e2e.trees import KEY, Deployment, deployment
from tests.mocks.replies import MockToolCall, Reply
from tests.mocks.server import MockProviderServer

BINDINGS = ["JSONRPC", "HTTP+JSON"]
LOOKUP = {"name": "lookup", "description": "looks a word up", "parameters": {"type": "object"}}


def model(body: Any) -> Reply:
    """`look up <word>` calls `lookup` once, then answers with its result; offered the
    agent tool `ask`, it asks `hi` once and answers with what it heard; anything else is
    answered `heard <the user's messages so far, joined by |>`."""
    messages = body["messages"]
    users = [m["content"] for m in messages if m["role"] == "user"]
    results = [m["content"] for m in messages if m["role"] == "tool"]
    offered = [t["function"]["name"] for t in body.get("tools") or ()]
    last = users[-1]
    if last.startswith("look up ") and not results:
        word = last.removeprefix("look up ")
        return Reply(tool_calls=[MockToolCall("lookup", json.dumps({"word": word, "n": 3}))])
    if last.startswith("look up "):
        return Reply(text=f"found {results[-1]}")
    if "ask" in offered and not results:
        return Reply(tool_calls=[MockToolCall("ask", json.dumps({"input": "hi"}))])
    if results:
        return Reply(text=f"told {results[-1]}")
    return Reply(text="heard " + "|".join(users))


def agent(client: httpx.Client, name: str, *tools: dict[str, Any], **fields: Any) -> None:
    body = {"name": name, "description": f"the {name}", "model": MODEL, "tools": list(tools)}
    response = client.post("/v1/agents", json={**body, **fields})
    assert response.status_code == 201, response.text


@pytest.fixture(scope="module")
def deployed(
    postgres_server: str, mock_server: MockProviderServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Deployment]:
    logs = tmp_path_factory.mktemp("a2a")
    mock_server.responder = model
    with (
        fresh_database(postgres_server) as url,
        deployment(url, logs, workers=2, **mock_server.env()) as d,
    ):
        agent(d.client, "finder", LOOKUP)
        agent(d.client, "boss", {"name": "ask", "agent": "finder"})
        agent(d.client, "thrifty", LOOKUP, limits={"max_model_calls": 1})
        yield d
    mock_server.responder = None


@pytest.fixture
def server(deployed: Deployment, mock_server: MockProviderServer) -> Iterator[Deployment]:
    mock_server.responder = model
    yield deployed
    mock_server.release()


@contextlib.asynccontextmanager
async def connect(
    base: str, binding: str, *, streaming: bool, name: str = "finder"
) -> AsyncIterator[Client]:
    """a2a-sdk's client of the agent `name` at `base`, over one binding, with the key."""
    http = httpx.AsyncClient(headers={"Authorization": f"Bearer {KEY}"}, timeout=30)
    config = ClientConfig(
        httpx_client=http, supported_protocol_bindings=[binding], streaming=streaming
    )
    made = await create_client(f"{base}/a2a/{name}", config)
    try:
        yield made
    finally:
        await made.close()
        await http.aclose()


@pytest.fixture(params=BINDINGS)
def binding(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
async def client(binding: str, server: Deployment) -> AsyncIterator[Client]:
    """A blocking client (SendMessage answers when the task ends or needs input)."""
    async with connect(str(server.client.base_url), binding, streaming=False) as made:
        yield made


def text(words: str, *, context: str = "", task: str = "") -> Message:
    return Message(
        message_id=f"m-{secrets.token_hex(8)}",  # (unique: it is the idempotency key)
        role=Role.ROLE_USER,
        context_id=context,
        task_id=task,
        parts=[Part(text=words)],
    )


def answer(task: Task, response: Any) -> Message:
    """The answer to each call the task's input-required message asks, as ADK sends it."""
    parts = []
    for asked in task.status.message.parts:
        call = MessageToDict(asked.data)
        part = Part(data=struct_pb2.Value(), metadata=struct_pb2.Struct())
        ParseDict({"id": call["id"], "name": call["name"], "response": response}, part.data)
        part.metadata.update({"adk_type": "function_response"})
        parts.append(part)
    return Message(
        message_id=f"answer-{task.id}",
        role=Role.ROLE_USER,
        task_id=task.id,
        context_id=task.context_id,
        parts=parts,
    )


async def send(client: Client, message: Message, **config: Any) -> Task:
    configuration = SendMessageConfiguration(**config)
    got = [
        e
        async for e in client.send_message(
            SendMessageRequest(message=message, configuration=configuration)
        )
    ]
    assert len(got) == 1 and got[0].HasField("task"), got
    return got[0].task


async def test_a_task_asks_for_the_clients_tool_and_completes_with_its_answer(
    client: Client, server: Deployment
) -> None:
    task = await send(client, text("look up kiwi"))
    assert task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED, task
    (asked,) = task.status.message.parts
    assert MessageToDict(asked.metadata) == {"adk_type": "function_call"}
    call = MessageToDict(asked.data)
    assert call["name"] == "lookup" and call["args"] == {"word": "kiwi", "n": 3}
    assert task.context_id == task.id  # (a new context: the conversation's first task)

    done = await send(client, answer(task, {"meaning": "a fruit"}))
    assert done.id == task.id and done.status.state == TaskState.TASK_STATE_COMPLETED
    (artifact,) = done.artifacts
    assert [p.text for p in artifact.parts] == ['found {"meaning":"a fruit"}']

    read = await client.get_task(GetTaskRequest(id=task.id))
    assert read.status.state == TaskState.TASK_STATE_COMPLETED
    kinds = [
        MessageToDict(p.metadata).get("adk_type", "text") for m in read.history for p in m.parts
    ]
    assert kinds == ["text", "function_call", "function_response", "text"], kinds
    run = server.client.get(f"/v1/runs/{task.id}").json()
    assert run["origin"]["protocol"] == "a2a" and run["agent"]["name"] == "finder"
    listed = await client.list_tasks(ListTasksRequest(context_id=task.context_id))
    assert [t.id for t in listed.tasks] == [task.id]


async def test_a_second_message_in_the_context_continues_the_conversation(
    client: Client,
) -> None:
    first = await send(client, text("hello"))
    assert first.status.state == TaskState.TASK_STATE_COMPLETED
    second = await send(client, text("again", context=first.context_id))
    assert second.id != first.id and second.context_id == first.context_id
    assert second.artifacts[0].parts[0].text == "heard hello|again"


async def test_a_cancelled_task_is_canceled(client: Client) -> None:
    task = await send(client, text("look up fig"))
    assert task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    cancelled = await client.cancel_task(CancelTaskRequest(id=task.id))
    assert cancelled.status.state == TaskState.TASK_STATE_CANCELED
    read = await client.get_task(GetTaskRequest(id=task.id))
    assert read.status.state == TaskState.TASK_STATE_CANCELED


async def test_a_subscription_streams_the_tasks_status_until_it_ends(
    client: Client, binding: str, server: Deployment, mock_server: MockProviderServer
) -> None:
    """The task is held at its model call (WORKING) when the subscription starts; the
    stream shows it, then INPUT_REQUIRED; answered, the second subscription ends with the
    artifact and COMPLETED."""
    mock_server.hold()
    task = await send(client, text("look up plum"), return_immediately=True)
    await asyncio.to_thread(mock_server.wait_held, 1)
    async with connect(str(server.client.base_url), binding, streaming=True) as streaming:
        stream = streaming.subscribe(SubscribeToTaskRequest(id=task.id))
        first = await anext(stream)
        assert first.HasField("task")
        assert first.task.status.state == TaskState.TASK_STATE_WORKING
        mock_server.release()
        rest = [e async for e in stream]
        states = [e.status_update.status.state for e in rest]
        assert states == [TaskState.TASK_STATE_INPUT_REQUIRED], rest
        asked = await client.get_task(GetTaskRequest(id=task.id))
        await send(client, answer(asked, "a fruit"), return_immediately=True)
        updates: list[StreamResponse] = [
            e async for e in streaming.subscribe(SubscribeToTaskRequest(id=task.id))
        ]
    states = [e.status_update.status.state for e in updates if e.HasField("status_update")]
    assert states[-1] == TaskState.TASK_STATE_COMPLETED, updates
    artifacts = [e.artifact_update.artifact for e in updates if e.HasField("artifact_update")]
    assert [a.parts[0].text for a in artifacts] == ["found a fruit"]


async def test_a_streamed_message_ends_when_the_task_needs_input(
    binding: str, server: Deployment
) -> None:
    """SendStreamingMessage: the task first, then its status until INPUT_REQUIRED with the
    call; the streamed answer ends with the artifact and COMPLETED."""
    async with connect(str(server.client.base_url), binding, streaming=True) as streaming:
        events = [
            e async for e in streaming.send_message(SendMessageRequest(message=text("look up yam")))
        ]
        assert events[0].HasField("task")
        last = events[-1].status_update.status
        assert last.state == TaskState.TASK_STATE_INPUT_REQUIRED, events
        task = Task(id=events[0].task.id, context_id=events[0].task.context_id, status=last)
        answered = [
            e
            async for e in streaming.send_message(
                SendMessageRequest(message=answer(task, "a root"))
            )
        ]
        final = [e.status_update.status.state for e in answered if e.HasField("status_update")]
        assert final[-1] == TaskState.TASK_STATE_COMPLETED, answered
        (artifact,) = [
            e.artifact_update.artifact for e in answered if e.HasField("artifact_update")
        ]
        assert artifact.parts[0].text == "found a root"


async def test_a_blocking_send_waits_while_the_task_waits_only_for_its_child(
    binding: str, server: Deployment, mock_server: MockProviderServer
) -> None:
    """`boss`'s run suspends for its child (held at its model call): a blocking send
    answers only once the task completed, not while it is WORKING."""
    mock_server.hold(only=lambda body: body["messages"][-1]["content"] == "hi")
    async with connect(str(server.client.base_url), binding, streaming=False, name="boss") as c:
        sending = asyncio.ensure_future(send(c, text("delegate")))
        await asyncio.to_thread(mock_server.wait_held, 1)
        mock_server.release()
        task = await sending
    assert task.status.state == TaskState.TASK_STATE_COMPLETED, task
    assert task.artifacts[0].parts[0].text == "told heard hi"


async def test_a_stream_ends_when_the_task_waits_for_a_raised_budget(
    binding: str, server: Deployment
) -> None:
    """`thrifty` may make one model call: answered, its run suspends on its budget, which
    only an operator raises; the stream says so and ends."""
    async with connect(
        str(server.client.base_url), binding, streaming=True, name="thrifty"
    ) as streaming:
        first = [
            e async for e in streaming.send_message(SendMessageRequest(message=text("look up oak")))
        ]
        status = first[-1].status_update.status
        task = Task(id=first[0].task.id, context_id=first[0].task.context_id, status=status)
        answered = [
            e
            async for e in streaming.send_message(
                SendMessageRequest(message=answer(task, "a tree"))
            )
        ]
    last = answered[-1].status_update.status
    assert last.state == TaskState.TASK_STATE_INPUT_REQUIRED, answered
    assert "max_model_calls" in last.message.parts[0].text


async def test_a_worker_killed_mid_task_loses_nothing(
    empty_postgres_url: str, tmp_path: Path, mock: MockProviderServer
) -> None:
    """The answer's model call is held until the worker making it is SIGKILLed: the other
    worker drives the task to the end; the answer is taken once, the model asked again."""
    mock.responder = model
    with deployment(empty_postgres_url, tmp_path, workers=2, **mock.env()) as d:
        body = {"name": "finder", "description": "finds words", "model": MODEL, "tools": [LOOKUP]}
        assert d.client.post("/v1/agents", json=body).status_code == 201
        async with connect(str(d.client.base_url), "JSONRPC", streaming=False) as client:
            task = await send(client, text("look up pear"))
            mock.hold()
            await send(client, answer(task, "a fruit"), return_immediately=True)
            await asyncio.to_thread(mock.wait_held, 1)
            run = d.client.get(f"/v1/runs/{task.id}").json()
            holder = run["waiting_reason"]["worker"]
            (victim,) = [w for w in d.workers if holder.endswith(f":{w.pid}")]
            d.kill(victim)
            mock.release()

            def completed() -> bool:
                return bool(d.client.get(f"/v1/runs/{task.id}").json()["status"] == "completed")

            await asyncio.to_thread(wait_until, completed, 60, "the task to complete")
            read = await client.get_task(GetTaskRequest(id=task.id))
            assert read.status.state == TaskState.TASK_STATE_COMPLETED
            assert read.artifacts[0].parts[0].text == "found a fruit"
            log = d.client.get(f"/v1/runs/{task.id}/events").json()["data"]
            counted = Counter(e["type"] for e in log)
            assert counted["tool_result.received"] == 1 and counted["run.lease_lost"] == 1, counted
            assert counted["run.completed"] == 1 and counted["run.requires_action"] == 1, counted
            asked = [
                r for r in mock.requests if any(m["role"] == "tool" for m in r.body["messages"])
            ]
            assert len(asked) == 2  # (the victim's call, and the survivor's)
