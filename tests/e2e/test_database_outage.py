"""A PostgreSQL outage under load, with real processes: a private cluster is stopped while
`agentrun api` and two `agentrun worker` processes are driving runs, every route is asked
during the outage (each answers 503 problem+json with Retry-After, on a connection that
stays usable), then the cluster comes back and every run completes well before the
leases of the interrupted drives would have lapsed (the workers give them back). The
model calls in flight are held at the mock provider until the database is down, so
their drives' writes meet the outage."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.model_wire import MODEL, agent
from tests.e2e.private_postgres import available, private_postgres
from tests.e2e.processes import AGENTRUN, spawn, stop, wait_until
from tests.mocks.server import MockProviderServer
from tests.ports import free_port

pytestmark = pytest.mark.skipif(not available(), reason="needs PostgreSQL's initdb/pg_ctl")

KEY = "outage-key"
RUNS = 30
LEASE = 60  # far longer than the test may take: runs must come back by the give-back


#: Model calls in flight when the database goes (as many as the shared limits allow).
IN_FLIGHT = 3
INTERRUPTED = "drive interrupted by a database outage"


def _run(i: int) -> dict[str, Any]:
    return {
        "prompt": f"run {i}",
        "model": MODEL,
        "tools": [{"name": "add", "parameters": {"type": "object"}}],
        "max_turns": 3,
    }


def _index(prompt: str) -> int:
    return int(prompt.rsplit(" ", 1)[1])


#: What the model answers run i: add(i, 1), then "done i".
RESPONDER = agent(
    lambda prompt: [{"name": "add", "arguments": {"a": _index(prompt), "b": 1}}],
    lambda prompt: f"done {_index(prompt)}",
)


def _routes(run_id: str) -> list[tuple[str, str, dict[str, Any] | None, dict[str, str]]]:
    sse = {"accept": "text/event-stream"}
    results = {"results": [{"tool_call_id": "call_x", "output": "1"}]}
    return [
        ("POST", "/v1/runs", _run(999), {}),
        ("GET", "/v1/runs", None, {}),
        ("GET", f"/v1/runs/{run_id}", None, {}),
        ("POST", f"/v1/runs/{run_id}/tool-results", results, {}),
        ("POST", "/v1/callbacks/" + "A" * 43 + "/tool-results", results, {}),
        ("POST", f"/v1/runs/{run_id}/resolution", {"action": "fail"}, {}),
        ("POST", f"/v1/runs/{run_id}/cancel", None, {}),
        ("GET", f"/v1/runs/{run_id}/events", None, {}),
        ("GET", f"/v1/runs/{run_id}/events", None, sse),
        ("GET", "/v1/usage", None, {}),
        ("GET", "/metrics", None, {}),
        ("GET", "/readyz", None, {}),
    ]


#: Shared limits on every call (a rate far above the traffic, three calls in flight at once
#: over both workers): an outage must not leave the key's slots held for their lifetime.
LIMITS = json.dumps(
    {"profiles": {"openai": {"limits": {"requests_per_minute": 100000, "max_concurrent": 3}}}}
)


@pytest.mark.parametrize("limits", [None, LIMITS], ids=["no-limits", "shared-limits"])
def test_an_outage_answers_503_everywhere_and_loses_no_run(
    tmp_path: Path, limits: str | None, mock: MockProviderServer
) -> None:
    """With shared limits too: a slot whose release failed in the outage is released once
    the database is back, and no run waits for a slot that is free."""
    with private_postgres() as pg:
        env = {
            "AGENTRUN_DATABASE_URL": pg.url,
            "AGENTRUN_API_KEYS": KEY,
            "AGENTRUN_LEASE_SECONDS": str(LEASE),
            **mock.env(),
        }
        if limits is not None:
            env["AGENTRUN_PROVIDERS"] = limits
        import os

        migrate = subprocess.run(
            [AGENTRUN, "migrate"], env={**os.environ, **env}, capture_output=True, timeout=120
        )
        assert migrate.returncode == 0, migrate.stderr.decode()
        port = free_port()
        env["AGENTRUN_PUBLIC_URL"] = f"http://127.0.0.1:{port}"
        api = spawn(["api", "--port", str(port)], pg.url, tmp_path / "api.log", **env)
        workers = [
            spawn(["worker", "--concurrency", "4"], pg.url, tmp_path / f"w{i}.log", **env)
            for i in range(2)
        ]
        client = httpx.Client(
            base_url=f"http://127.0.0.1:{port}",
            headers={"Authorization": f"Bearer {KEY}"},
            timeout=10,
        )
        try:
            wait_until(lambda: _get(client, "/readyz") == 200, 30, "the API to become ready")
            mock.responder = RESPONDER
            mock.hold()
            ids = []
            for i in range(RUNS):
                created = client.post("/v1/runs", json=_run(i))
                assert created.status_code == 201, created.text
                ids.append(created.json()["id"])

            mock.wait_held(IN_FLIGHT, 30)  # model calls in flight to interrupt
            pg.stop()
            for method, path, body, headers in _routes(ids[0]):
                response = client.request(method, path, json=body, headers=headers)
                where = f"{method} {path} {headers}"
                assert response.status_code == 503, (where, response.status_code, response.text)
                assert response.headers["content-type"] == "application/problem+json", where
                assert response.json()["type"] == "/problems/service-unavailable", where
                assert int(response.headers["retry-after"]) > 0, where
                assert response.headers.get("connection") != "close", where
            mock.release()  # the answers come: the drives' writes fail against the stopped server
            wait_until(lambda: INTERRUPTED in _logs(tmp_path), 30, "a drive to meet the outage")
            pg.start()

            restarted = time.monotonic()
            answered: set[str] = set()
            done: set[str] = set()
            while len(done) < RUNS:
                runs = _list(client)
                open_ = [
                    (r["status"], r.get("waiting_reason")) for r in runs if r["id"] not in done
                ]
                assert time.monotonic() - restarted < LEASE / 2, (
                    f"{RUNS - len(done)} runs still open (interrupted drives not given back, "
                    f"or slots or waiters lost): {open_}"
                )
                for run in runs:
                    if run["id"] not in ids:
                        continue
                    if run["status"] == "completed":
                        done.add(run["id"])
                    elif run["status"] == "requires_action" and run["id"] not in answered:
                        call = run["required_action"]["tool_calls"][0]
                        posted = client.post(
                            f"/v1/runs/{run['id']}/tool-results",
                            json={"results": [{"tool_call_id": call["id"], "output": "1"}]},
                        )
                        if posted.status_code == 200:
                            answered.add(run["id"])
                    else:
                        assert run["status"] not in ("failed", "cancelled", "expired"), run
                time.sleep(0.1)
            for run_id in ids:
                run = client.get(f"/v1/runs/{run_id}").json()
                assert run["output"] == f"done {ids.index(run_id)}", run
        finally:
            client.close()
            stop(api)
            for worker in workers:
                stop(worker)
        assert INTERRUPTED in _logs(tmp_path)  # the give-back path ran


def _logs(tmp_path: Path) -> str:
    return "".join((tmp_path / name).read_text() for name in ("w0.log", "w1.log"))


def _get(client: httpx.Client, path: str) -> int:
    try:
        return client.get(path).status_code
    except httpx.TransportError:
        return 0


def _list(client: httpx.Client) -> list[dict[str, Any]]:
    try:
        response = client.get("/v1/runs", params={"limit": 100})
    except httpx.TransportError:
        return []
    return response.json()["data"] if response.status_code == 200 else []
