"""The AG-UI endpoint as AG-UI's own client sees it: `@ag-ui/client`'s HttpAgent in Node
(tests/protocols/agui/node, `node --test`) against real `agentrun api` and `agentrun
worker` processes on PostgreSQL, the agents' model over the Chat Completions wire (the
mock provider, streaming). The Node package is installed by `make test` and `.ci/run`
(`npm ci`); without it this test fails, it is never skipped."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

from tests.e2e.model_wire import MODEL
from tests.e2e.trees import KEY, deployment
from tests.mocks.replies import MockToolCall, Reply
from tests.mocks.server import MockProviderServer

NODE_TESTS = Path(__file__).parent / "node"
#: What the frontend tools' calls are asked with (the model's first answer).
ARGUMENTS = {"get_weather": {"city": "Paris"}, "pay": {"amount": 500}}
#: What the model calls each tool's kind in its answer after the results.
KINDS = {"get_weather": "weather", "pay": "payment"}


def frontend_model(body: Any) -> Reply:
    """Calls the first tool it is offered; once it has results, answers
    `The <kind>: <result>` (the result as the wire carries it: an error starts `Error: `)."""
    messages = body["messages"]
    results = [m["content"] for m in messages if m["role"] == "tool"]
    if results:
        calls = [c for m in messages if m["role"] == "assistant" for c in m.get("tool_calls") or ()]
        name = calls[-1]["function"]["name"]
        return Reply(text=f"The {KINDS[name]}: {results[-1]}")
    name = body["tools"][0]["function"]["name"]
    return Reply(tool_calls=[MockToolCall(name, json.dumps(ARGUMENTS[name]))])


def test_http_agent_runs_frontend_tools_and_approvals(
    empty_postgres_url: str, tmp_path: Path, mock: MockProviderServer
) -> None:
    node_modules = NODE_TESTS / "node_modules" / "@ag-ui" / "client"
    assert node_modules.is_dir(), (
        f"{NODE_TESTS}/node_modules is missing: run `npm ci --prefix {NODE_TESTS}` "
        "(`make test` does)"
    )
    node = shutil.which("node")
    assert node is not None, "node (20 or later) is needed for the AG-UI client's tests"
    mock.responder = frontend_model
    with deployment(empty_postgres_url, tmp_path, workers=1, **mock.env()) as d:
        for name, fields in (("weather", {}), ("payer", {"approval": "always"})):
            body = {"name": name, "description": name, "model": MODEL, **fields}
            response = d.client.post("/v1/agents", json=body)
            assert response.status_code == 201, response.text
        env = {**os.environ, "AGUI_BASE_URL": str(d.client.base_url), "AGUI_KEY": KEY}
        done = subprocess.run(
            [node, "--test", "--test-reporter=spec", "agui.test.mjs"],
            cwd=NODE_TESTS,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        runs = d.client.get("/v1/runs", params={"limit": 100}).json()["data"]
        # The endpoint's runs stream: the answers' text came as the model wrote it.
        deltas = d.client.get(f"/v1/runs/{runs[0]['id']}/events").json()["data"]
        assert "model.delta" in {e["type"] for e in deltas}
    origins = {r["origin"]["thread_id"].split("-")[1] for r in runs}
    assert origins == {"weather", "payer", "reject"}, runs
    assert all(r["origin"]["protocol"] == "ag-ui" for r in runs)
    assert {r["status"] for r in runs} == {"completed"}
