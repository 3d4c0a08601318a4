"""`agentrun api` + two `agentrun worker` processes on PostgreSQL, driven over HTTP only,
with one worker killed by SIGKILL while model calls are in flight (held at the mock
provider until every slot of both workers is in one, released after the kill)."""

from __future__ import annotations

import signal
import time
from pathlib import Path
from typing import Any

import httpx

from tests.e2e.model_wire import MODEL, agent
from tests.e2e.processes import spawn, stop, wait_until
from tests.mocks.server import MockProviderServer
from tests.ports import free_port

KEY = "e2e-key"
RUNS = 60
SLOTS = 4


def run_request(i: int) -> dict[str, Any]:
    return {
        "prompt": f"add for run {i}",
        "model": MODEL,
        "tools": [{"name": "add", "parameters": {"type": "object"}}],
        "max_turns": 3,
        "metadata": {"i": i},
    }


def _index(prompt: str) -> int:
    return int(prompt.rsplit(" ", 1)[1])


def _adds(prompt: str) -> list[dict[str, Any]]:
    i = _index(prompt)
    return [{"name": "add", "arguments": {"a": i, "b": b}} for b in (1, 2)]


def test_http_only_lifecycle_survives_a_killed_worker(
    clean_postgres: str, tmp_path: Path, mock: MockProviderServer
) -> None:
    mock.responder = agent(_adds, lambda prompt: f"done {_index(prompt)}")
    mock.hold()
    port = free_port()
    env = {
        "AGENTRUN_API_KEYS": KEY,
        "AGENTRUN_PUBLIC_URL": f"http://127.0.0.1:{port}",
        **mock.env(),
    }
    api = spawn(["api", "--port", str(port)], clean_postgres, tmp_path / "api.log", **env)
    workers = [
        spawn(
            ["worker", "--concurrency", str(SLOTS)], clean_postgres, tmp_path / f"w{i}.log", **env
        )
        for i in range(2)
    ]
    client = httpx.Client(
        base_url=f"http://127.0.0.1:{port}", headers={"Authorization": f"Bearer {KEY}"}
    )

    def ready() -> bool:
        try:
            return client.get("/readyz").status_code == 200
        except httpx.TransportError:
            return False

    try:
        wait_until(ready, 30, "the API to become ready")
        ids = []
        for i in range(RUNS):
            response = client.post(
                "/v1/runs", json=run_request(i), headers={"Idempotency-Key": f"r{i}"}
            )
            assert response.status_code == 201, response.text
            ids.append(response.json()["id"])
        # Every slot of both workers in a held call: the victim's are provably in flight.
        mock.wait_held(2 * SLOTS, 60)
        running = client.get("/v1/runs", params={"status": "running"}).json()["data"]
        holders = {r["waiting_reason"]["worker"].rsplit(":", 1)[-1] for r in running}
        assert str(workers[1].pid) in holders, holders
        workers[1].send_signal(signal.SIGKILL)
        workers[1].wait(10)
        mock.release()
        deadline = time.monotonic() + 120
        completed: set[str] = set()
        while len(completed) < RUNS:
            assert time.monotonic() < deadline, f"only {len(completed)} of {RUNS} completed"
            page = client.get(
                "/v1/runs", params={"status": "requires_action", "limit": 100}
            ).json()["data"]
            for run in page:
                calls = run["required_action"]["tool_calls"]
                # the executor answers through the callback URL, with no API key
                response = httpx.post(
                    run["required_action"]["callback_url"],
                    json={
                        "results": [
                            {"tool_call_id": c["id"], "output": str(sum(c["arguments"].values()))}
                            for c in calls
                        ]
                    },
                )
                assert response.status_code in (200, 404, 409), response.text
            done = client.get("/v1/runs", params={"status": "completed", "limit": 100}).json()
            completed = {r["id"] for r in done["data"]}
            time.sleep(0.05)
        assert completed == set(ids)
        for i, run_id in enumerate(ids):
            run = client.get(f"/v1/runs/{run_id}").json()
            assert run["output"] == f"done {i}" and run["turn"] == 2, run
            types = [e["type"] for e in client.get(f"/v1/runs/{run_id}/events").json()["data"]]
            assert types.count("run.completed") == 1
            # turn == 2 above: the durable history holds each model turn once (a call repeated
            # after a lost lease is still on the usage ledger, so events may show it twice)
            assert types.count("model.called") >= 2, types
    finally:
        client.close()
        stop(workers[1], signal.SIGKILL)  # the victim (already dead once killed)
        worker_code = stop(workers[0])
        api_code = stop(api)
    for log in tmp_path.glob("*.log"):  # AGENTRUN_PUBLIC_URL is set: nothing to warn about
        assert "public_url_unset" not in log.read_text(), log.name
    assert worker_code == 0 and api_code == 0
