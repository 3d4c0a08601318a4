"""A deployment of real processes for the end-to-end tests of trees of runs (`agentrun api`
and `agentrun worker`s on a database of their own), its agents' model over the wire (the
mock provider), and the reads those tests make of a tree."""

from __future__ import annotations

import json
import signal
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from subprocess import Popen
from typing import Any

import httpx

from tests.e2e.model_wire import MODEL
from tests.e2e.processes import api_ready, spawn, stop, wait_until
from tests.mocks.replies import MockToolCall, Reply
from tests.ports import free_port

KEY = "tree-e2e-key"


@dataclass
class Deployment:
    client: httpx.Client
    database_url: str
    api: Popen[bytes]
    workers: list[Popen[bytes]]
    killed: list[Popen[bytes]] = field(default_factory=list)

    def kill(self, worker: Popen[bytes]) -> None:
        """SIGKILL `worker`, mid-whatever it does; once it is gone."""
        worker.send_signal(signal.SIGKILL)
        worker.wait(10)
        self.killed.append(worker)


@contextmanager
def deployment(database_url: str, logs: Path, *, workers: int, **env: str) -> Iterator[Deployment]:
    """`agentrun api` and `workers` worker processes of one slot each (a held model call
    keeps its worker busy: the other takes the next run), all ready; stopped at the end,
    each required to stop cleanly but a worker the test killed. The lease is 4 s: a killed
    worker's run is back that soon, and a busy machine's late heartbeat loses no lease (a
    lost lease may repeat a model call: the counts the tests assert would not hold)."""
    port = free_port()
    env = {
        "AGENTRUN_API_KEYS": KEY,
        "AGENTRUN_PUBLIC_URL": f"http://127.0.0.1:{port}",
        "AGENTRUN_LEASE_SECONDS": "4",
        **env,
    }
    api = spawn(["api", "--port", str(port)], database_url, logs / "api.log", **env)
    procs = [
        spawn(["worker", "--concurrency", "1"], database_url, logs / f"w{i}.log", **env)
        for i in range(workers)
    ]
    client = httpx.Client(
        base_url=f"http://127.0.0.1:{port}",
        headers={"Authorization": f"Bearer {KEY}"},
        timeout=30,
    )
    deployed = Deployment(client, database_url, api, procs)
    try:

        def ready() -> bool:
            assert api.poll() is None, (logs / "api.log").read_text()
            return api_ready(client)

        wait_until(ready, 60, "the API to become ready")
        for i in range(workers):
            log = logs / f"w{i}.log"
            wait_until(lambda log=log: "worker started" in log.read_text(), 60, log.name)
        yield deployed
    finally:
        client.close()
        codes = [stop(w) for w in procs if w not in deployed.killed] + [stop(api)]
    assert codes == [0] * len(codes), "SIGTERM must end every process cleanly"


def tree_model(body: Any) -> Reply:
    """The model of every agent of these tests, answering from each request: its first call
    calls each tool it is offered once, with `{"input": <the tool's name>}`; its call after
    their results answers `done[<the results, in call order>]`; with no tool, it answers
    `answer to <prompt>`."""
    messages = body["messages"]
    results = [m["content"] for m in messages if m["role"] == "tool"]
    if results:
        return Reply(text=f"done[{'; '.join(results)}]")
    tools = [t["function"]["name"] for t in body.get("tools") or ()]
    if not tools:
        return Reply(text=f"answer to {prompt_of(body)}")
    return Reply(tool_calls=[MockToolCall(n, json.dumps({"input": n})) for n in tools])


def prompt_of(body: Any) -> str:
    """The user prompt of a model request."""
    return str(next(m["content"] for m in body["messages"] if m["role"] == "user"))


def make_agent(client: httpx.Client, name: str, *tools: dict[str, Any]) -> None:
    """A named agent of `tree_model` (over the wire) with `tools`."""
    body = {"name": name, "description": f"the {name}", "model": MODEL, "tools": list(tools)}
    response = client.post("/v1/agents", json=body)
    assert response.status_code == 201, response.text


def start_root(client: httpx.Client, agent: str, **fields: Any) -> str:
    response = client.post("/v1/runs", json={"agent": agent, "prompt": "go", **fields})
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


def tree(client: httpx.Client, root: str) -> dict[str, dict[str, Any]]:
    """Every run of `root`'s tree (the root too), by agent name."""
    response = client.get("/v1/runs", params={"root_run_id": root})
    assert response.status_code == 200, response.text
    return {r["agent"]["name"]: r for r in response.json()["data"]}


def events(client: httpx.Client, run_id: str) -> list[dict[str, Any]]:
    response = client.get(f"/v1/runs/{run_id}/events")
    assert response.status_code == 200, response.text
    data: list[dict[str, Any]] = response.json()["data"]
    return data


def types(client: httpx.Client, run_id: str) -> Counter[str]:
    """How many events of each type `run_id`'s log holds."""
    return Counter(e["type"] for e in events(client, run_id))


def wait_for_tree(
    client: httpx.Client, root: str, statuses: dict[str, str], timeout: float = 30
) -> dict[str, dict[str, Any]]:
    """Once each named node of `root`'s tree has its status (and the tree no other node)."""
    seen: dict[str, dict[str, Any]] = {}

    def reached() -> bool:
        nonlocal seen
        seen = tree(client, root)
        return {n: r["status"] for n, r in seen.items()} == statuses

    try:
        wait_until(reached, timeout, f"the tree {statuses}")
    except AssertionError:
        raise AssertionError(
            {n: (r["status"], r["error"]) for n, r in seen.items()}, statuses
        ) from None
    return seen
