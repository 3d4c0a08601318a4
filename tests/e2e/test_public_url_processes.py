"""Callback URLs with `agentrun api --port P` and a separate `agentrun worker` and no
AGENTRUN_PUBLIC_URL: the run as the API shows it and its `run.requires_action` event (the
webhook's payload, made by the worker) name the same URL, and both processes say at start
that the setting is missing. (Before, the API showed port P and the worker port 8000.)"""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tests.e2e.processes import spawn, stop, wait_until
from tests.ports import free_port

KEY = "public-url-e2e"
BODY = {
    "prompt": "add",
    "model": {
        "provider": "scripted",
        "name": "demo",
        "script": [{"tool_calls": [{"name": "add", "arguments": {"a": 1, "b": 2}}]}, {"text": "3"}],
    },
    "tools": [{"name": "add", "parameters": {"type": "object"}}],
}


def test_callback_urls_agree_and_a_missing_public_url_is_told_at_start(
    clean_postgres: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AGENTRUN_PUBLIC_URL", raising=False)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = {"AGENTRUN_API_KEYS": KEY}
    api = spawn(["api", "--port", str(port)], clean_postgres, tmp_path / "api.log", **env)
    worker = spawn(["worker"], clean_postgres, tmp_path / "worker.log", **env)
    client = httpx.Client(base_url=base, headers={"Authorization": f"Bearer {KEY}"})

    def ready() -> bool:
        try:
            return client.get("/readyz").status_code == 200
        except httpx.TransportError:
            return False

    try:
        wait_until(ready, 30, "the API to start")
        run_id = client.post("/v1/runs", json=BODY).json()["id"]
        run = client.get(f"/v1/runs/{run_id}/wait", params={"timeout": 30}).json()
        assert run["status"] == "requires_action", run
        shown = run["required_action"]["callback_url"]
        events = client.get(f"/v1/runs/{run_id}/events").json()["data"]
        (suspended,) = [e for e in events if e["type"] == "run.requires_action"]
        assert suspended["data"]["callback_url"] == shown
        assert shown.startswith("http://127.0.0.1:8000/v1/callbacks/"), shown
    finally:
        client.close()
        stop(worker)
        stop(api)
    for log in ("api.log", "worker.log"):
        text = (tmp_path / log).read_text()
        assert "public_url_unset" in text and "AGENTRUN_PUBLIC_URL is not set" in text, log
