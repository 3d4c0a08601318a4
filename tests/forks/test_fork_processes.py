"""Forks and replays against real processes (`agentrun api` and two `agentrun worker`s on
a database of their own, the model over the OpenAI wire to the mock provider, whose
answers are the SDK's own types): a replay reaches the model zero times and reproduces
the run; a fork's first request carries the original's conversation as the original's
own request carried it, byte for byte on the wire, but the patched result."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.conftest import fresh_database
from tests.e2e.model_wire import MODEL
from tests.e2e.processes import wait_until
from tests.e2e.trees import Deployment, deployment
from tests.mocks.replies import MockToolCall, Reply
from tests.mocks.server import MockProviderServer

STEP = {"name": "step", "description": "takes a step", "parameters": {"type": "object"}}
STEPS = 3


def model(body: Any) -> Reply:
    """One `step` call per turn until three results came back, then `done` and the sum of
    the results."""
    results = [m["content"] for m in body["messages"] if m["role"] == "tool"]
    if len(results) < STEPS:
        return Reply(tool_calls=[MockToolCall("step", json.dumps({"i": len(results) + 1}))])
    return Reply(text=f"done {sum(int(r) for r in results)}")


@pytest.fixture(scope="module")
def deployed(
    postgres_server: str, mock_server: MockProviderServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Deployment]:
    logs = tmp_path_factory.mktemp("forks")
    with (
        fresh_database(postgres_server) as url,
        deployment(url, logs, workers=2, **mock_server.env()) as d,
    ):
        yield d


@pytest.fixture
def server(deployed: Deployment, mock: MockProviderServer) -> Iterator[httpx.Client]:
    mock.responder = model
    yield deployed.client


def settled(client: httpx.Client, run_id: str) -> dict[str, Any]:
    """The run once it waits for its executor or has ended."""
    found: dict[str, Any] = {}

    def done() -> bool:
        found.update(client.get(f"/v1/runs/{run_id}").json())
        return found["status"] in ("requires_action", "completed", "failed")

    wait_until(done, 30, f"run {run_id} to settle")
    return found


def answer_to_the_end(client: httpx.Client, run_id: str) -> dict[str, Any]:
    """Act as the executor: each `step` call gets `10 * i`."""
    while (run := settled(client, run_id))["status"] == "requires_action":
        calls = run["required_action"]["tool_calls"]
        results = [
            {"tool_call_id": c["id"], "output": str(10 * c["arguments"]["i"])} for c in calls
        ]
        sent = client.post(f"/v1/runs/{run_id}/tool-results", json={"results": results})
        assert sent.status_code == 200, sent.text
    return run


def messages(client: httpx.Client, run_id: str) -> list[dict[str, Any]]:
    got = client.get(f"/v1/runs/{run_id}/messages", params={"limit": 100})
    return [e["message"] for e in got.json()["data"]]


def original(client: httpx.Client) -> dict[str, Any]:
    made = client.post(
        "/v1/runs",
        json={"prompt": "take three steps", "model": MODEL, "tools": [STEP], "max_turns": 8},
    )
    assert made.status_code == 201, made.text
    run = answer_to_the_end(client, made.json()["id"])
    assert run["status"] == "completed" and run["output"] == "done 60", run
    return run


def test_a_replay_reaches_the_model_zero_times(
    server: httpx.Client, mock: MockProviderServer
) -> None:
    run = original(server)
    calls_before = len(mock.requests)
    assert calls_before == STEPS + 1
    replay = server.post(f"/v1/runs/{run['id']}/fork", json={"mode": "replay"})
    assert replay.status_code == 201, replay.text
    done = settled(server, replay.json()["id"])
    assert done["status"] == "completed" and done["output"] == run["output"]
    assert len(mock.requests) == calls_before  # (not one request reached the model)
    assert messages(server, done["id"]) == messages(server, run["id"])


def test_a_forks_request_is_the_originals_on_the_wire_but_the_patch(
    server: httpx.Client, mock: MockProviderServer
) -> None:
    run = original(server)
    sent = [r.body for r in mock.requests]
    checkpoints = server.get(f"/v1/runs/{run['id']}/checkpoints").json()["data"]
    after_round_two = [c for c in checkpoints if c["kind"] == "tool_results"][1]
    assert after_round_two["turn"] == 2
    history = messages(server, run["id"])
    second_call = history[3]["content"][0]["id"]
    patch = {"tool_results": [{"tool_call_id": second_call, "output": "25"}]}
    request = {"at": after_round_two["seq"], "patch": patch}
    fork = server.post(f"/v1/runs/{run['id']}/fork", json=request)
    assert fork.status_code == 201, fork.text
    done = answer_to_the_end(server, fork.json()["id"])
    assert done["status"] == "completed" and done["output"] == "done 65"  # 10 + 25 + 30
    first = mock.requests[len(sent)].body  # (the fork's first model call)
    recorded = sent[2]  # (the original's third: the same place in its conversation)
    assert first["messages"][:4] == recorded["messages"][:4]
    assert first["messages"][4]["content"] == "25" and recorded["messages"][4]["content"] == "20"
    assert first["messages"][5:] == recorded["messages"][5:]
    assert first["tools"] == recorded["tools"] and first["model"] == recorded["model"]
    assert messages(server, run["id"]) == history  # the original is unchanged
