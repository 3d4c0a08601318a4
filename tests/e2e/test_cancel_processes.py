"""A cancel stops the work: `agentrun api` + `agentrun worker` processes, on both
databases, a provider that holds its answer 60 s (blocking and streamed; the OpenAI Chat,
OpenAI Responses and Anthropic wires); the provider sees the worker close its connection
within a second of the cancel's response (measured on the provider's side), the aborted
call is on the ledger with the usage reported before it, and the run's webhook receives
`run.cancelled`.

The lease is 30 s: without the stop signal the worker would notice at its next
heartbeat, 10 s after the call started.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.store.migrate import upgrade_to_head
from tests.conftest import BACKENDS, fresh_database
from tests.e2e.processes import api_ready, spawn, stop, wait_until
from tests.mocks.holding import INPUT_TOKENS, HoldingProvider, holding_provider
from tests.mocks.receiver import SECRET, Receiver, webhook_receiver
from tests.ports import free_port

KEY = "cancel-e2e-key"
#: Cancel's response to the provider's side of the connection closing.
WITHIN = 1.0


@dataclass
class Deployment:
    client: httpx.Client
    provider: HoldingProvider
    receiver: Receiver
    backend: str


@pytest.fixture(scope="module", params=BACKENDS)
def deployment(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Deployment]:
    tmp = tmp_path_factory.mktemp(f"cancel-{request.param}")
    with (
        _database(request, tmp) as url,
        holding_provider(hold=60) as provider,
        webhook_receiver() as receiver,
    ):
        port = free_port()
        env = {
            "AGENTRUN_API_KEYS": KEY,
            "AGENTRUN_PUBLIC_URL": f"http://127.0.0.1:{port}",
            "AGENTRUN_LEASE_SECONDS": "30",  # (a heartbeat every 10 s)
            "AGENTRUN_REAP_INTERVAL": "1",
            "AGENTRUN_WEBHOOK_SECRET": SECRET,
            "AGENTRUN_WEBHOOK_ALLOW_PRIVATE": "true",
            **provider.env(),
        }
        api = spawn(["api", "--port", str(port)], url, tmp / "api.log", **env)
        worker = spawn(["worker", "--concurrency", "4"], url, tmp / "worker.log", **env)
        client = httpx.Client(
            base_url=f"http://127.0.0.1:{port}",
            headers={"Authorization": f"Bearer {KEY}"},
            timeout=30,
        )

        def ready() -> bool:
            assert api.poll() is None, (tmp / "api.log").read_text()
            return api_ready(client)

        try:
            wait_until(ready, 30, "the API to become ready")
            wait_until(lambda: "worker started" in (tmp / "worker.log").read_text(), 30, "worker")
            yield Deployment(client, provider, receiver, request.param)
        finally:
            client.close()
            codes = [stop(worker), stop(api)]
        assert codes == [0, 0], (tmp / "worker.log").read_text()


def _database(request: pytest.FixtureRequest, tmp: Path) -> contextlib.AbstractContextManager[str]:
    """A fresh database of the backend, migrated: a SQLite file, or a PostgreSQL database
    of its own on the test server."""
    if request.param == "sqlite":
        url = f"sqlite:///{tmp}/agentrun.db"
        upgrade_to_head(url)
        return contextlib.nullcontext(url)
    server = request.getfixturevalue("postgres_server")
    return fresh_database(server)


def usage(client: httpx.Client) -> dict[str, Any]:
    response = client.get("/v1/usage")
    assert response.status_code == 200, response.text
    totals: dict[str, Any] = response.json()
    return totals


def events_of(client: httpx.Client, run_id: str) -> list[dict[str, Any]]:
    response = client.get(f"/v1/runs/{run_id}/events")
    assert response.status_code == 200, response.text
    data: list[dict[str, Any]] = response.json()["data"]
    return data


@pytest.mark.parametrize("streamed", [False, True], ids=["blocking", "streamed"])
@pytest.mark.parametrize("wire", ["openai", "openai_responses", "anthropic"])
def test_a_cancel_closes_the_model_connection_within_a_second(
    deployment: Deployment, wire: str, streamed: bool
) -> None:
    client, provider = deployment.client, deployment.provider
    before = len(provider.connections)
    body = {
        "prompt": "take your time",
        "model": {"provider": wire, "name": "held-model"},
        "tools": [],
        "stream": streamed,
        "webhook": {"url": deployment.receiver.url},
    }
    created = client.post("/v1/runs", json=body)
    assert created.status_code == 201, created.text
    run_id = created.json()["id"]
    held = provider.wait_for(before + 1, 30)[before]
    assert held.streamed is streamed and held.closed_at is None
    if streamed:  # the first text arrived: the stream is really under way
        wait_until(
            lambda: any(e["type"] == "model.delta" for e in events_of(client, run_id)),
            10,
            "the first delta",
        )
    billed = usage(client)
    cancelled = client.post(f"/v1/runs/{run_id}/cancel")
    answered = time.monotonic()
    assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled"
    assert held.closed.wait(10), "the model connection stayed open"
    assert held.closed_at is not None
    delay = held.closed_at - answered
    assert delay < WITHIN, f"the connection closed {delay:.3f} s after the cancel's response"

    # The aborted call is on the run's log and the ledger, after the cancel.
    def aborted() -> dict[str, Any] | None:
        return next((e for e in events_of(client, run_id) if e["type"] == "model.aborted"), None)

    wait_until(lambda: aborted() is not None, 10, "model.aborted")
    event = aborted()
    assert event is not None
    types = [e["type"] for e in events_of(client, run_id)]
    assert types.index("run.cancelled") < types.index("model.aborted")
    assert "model.called" not in types
    reported = event["data"]["usage"]
    if wire == "anthropic" and streamed:  # message_start reported the input tokens
        assert event["data"]["usage_reported"] is True
        assert reported["input_tokens"] == INPUT_TOKENS and reported["output_tokens"] == 1
    else:  # (no usage before the end of the answer)
        assert event["data"]["usage_reported"] is False and reported["total_tokens"] == 0
    assert event["data"]["stream"] is True if streamed else "stream" not in event["data"]
    # On the usage ledger: one more call, not a failed one, with those tokens.
    now = usage(client)
    assert (now["calls"] - billed["calls"], now["failed_calls"] - billed["failed_calls"]) == (1, 0)
    assert now["input_tokens"] - billed["input_tokens"] == reported["input_tokens"]

    # The run's webhook executor is told.
    def told() -> bool:
        return any(
            r.payload["data"]["run_id"] == run_id
            for r in deployment.receiver.of_type("run.cancelled")
        )

    wait_until(told, 15, "run.cancelled at the webhook receiver")
