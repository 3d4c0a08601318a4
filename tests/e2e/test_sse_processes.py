"""Two `agentrun api` processes serve the same run's live stream (NOTIFY fan-out): the
run's first model call is held at the mock provider until both streams are open."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import httpx

from tests.api.sse_client import read_events
from tests.e2e.model_wire import MODEL, RUN_BODY
from tests.e2e.processes import spawn, stop, wait_until
from tests.helpers import run_body
from tests.mocks.server import MockProviderServer
from tests.ports import free_port

KEY = "sse-e2e"


def test_two_api_processes_stream_the_same_run(
    clean_postgres: str, tmp_path: Path, mock: MockProviderServer
) -> None:
    mock.responder = RUN_BODY
    mock.hold()
    ports = [free_port(), free_port()]
    env = {"AGENTRUN_API_KEYS": KEY, **mock.env()}
    apis = [
        spawn(["api", "--port", str(p)], clean_postgres, tmp_path / f"api{p}.log", **env)
        for p in ports
    ]
    worker = spawn(["worker", "--concurrency", "2"], clean_postgres, tmp_path / "w.log", **env)
    headers = {"Authorization": f"Bearer {KEY}"}
    clients = [
        httpx.Client(base_url=f"http://127.0.0.1:{p}", headers=headers, timeout=30) for p in ports
    ]

    def ready(client: httpx.Client) -> bool:
        try:
            return client.get("/readyz").status_code == 200
        except httpx.TransportError:
            return False

    streams: list[list[dict[str, Any]]] = [[], []]
    try:
        for client in clients:
            wait_until(lambda c=client: ready(c), 30, "API ready")
        body = run_body(model=MODEL).model_dump(mode="json", exclude_none=True)
        run_id = clients[0].post("/v1/runs", json=body).json()["id"]

        def follow(i: int) -> None:
            with clients[i].stream(
                "GET", f"/v1/runs/{run_id}/events", headers={"Accept": "text/event-stream"}
            ) as r:
                for event in read_events(r):
                    streams[i].append(event)

        threads = [threading.Thread(target=follow, args=(i,)) for i in range(2)]
        for t in threads:
            t.start()
        # Both streams open (what was logged replayed) while the model call is held: the
        # rest reaches them live.
        mock.wait_held(1, 30)
        wait_until(lambda: all(streams), 30, "both streams to open")
        mock.release()
        wait_until(
            lambda: clients[1].get(f"/v1/runs/{run_id}").json()["status"] == "requires_action",
            30,
            "suspension",
        )
        run = clients[1].get(f"/v1/runs/{run_id}").json()
        results = [
            {"tool_call_id": c["id"], "output": "x"} for c in run["required_action"]["tool_calls"]
        ]
        assert (
            clients[1]
            .post(f"/v1/runs/{run_id}/tool-results", json={"results": results})
            .status_code
            == 200
        )
        for t in threads:
            t.join(60)
        log = clients[0].get(f"/v1/runs/{run_id}/events").json()["data"]
    finally:
        for client in clients:
            client.close()
        assert stop(worker) == 0
        assert [stop(a) for a in apis] == [0, 0]
    expected = [e["seq"] for e in log]
    assert log[-1]["type"] == "run.completed"
    assert [e["id"] for e in streams[0]] == expected
    assert [e["id"] for e in streams[1]] == expected
