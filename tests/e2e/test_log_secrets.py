"""No secret reaches a log: real `agentrun api` and `agentrun worker` processes, configured
with every kind of secret, take a run through a suspension, a PostgreSQL outage (a private
cluster, stopped and started again), failing webhook deliveries, a callback and a browser
token used in `?access_token=` (also refused: altered, on another route); then both logs
are read for each secret; a person made from the command line signs in on the
dashboard and acts, and their password and session are looked for too."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import httpx
import pytest
from itsdangerous import URLSafeTimedSerializer

from tests.dashboard.conftest import csrf_of
from tests.e2e.private_postgres import available, private_postgres
from tests.e2e.processes import AGENTRUN, spawn, stop, wait_until
from tests.ports import free_port

pytestmark = pytest.mark.skipif(not available(), reason="needs PostgreSQL's initdb/pg_ctl")

API_KEY = "key-" + "k3y" * 8
SECRETS = {
    "AGENTRUN_API_KEYS": API_KEY,
    "AGENTRUN_WEBHOOK_SECRET": "whsec_c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0",
    "OPENAI_API_KEY": "sk-proj-" + "o" * 40,
    "ANTHROPIC_API_KEY": "sk-ant-api03-" + "a" * 40,
}


def _script() -> dict[str, object]:
    return {
        "provider": "scripted",
        "name": "demo",
        "script": [
            {"tool_calls": [{"name": "lookup", "arguments": {"q": "x"}}]},
            {"text": "done"},
        ],
    }


def test_logs_hold_no_secret_after_an_outage_and_error_paths(tmp_path: Path) -> None:
    with private_postgres() as pg:
        env = {
            "AGENTRUN_DATABASE_URL": pg.url,
            "AGENTRUN_WEBHOOK_ALLOW_PRIVATE": "true",
            "AGENTRUN_WEBHOOK_TIMEOUT": "0.5",
            **SECRETS,
        }
        migrate = subprocess.run(
            [AGENTRUN, "migrate"], env={**_environ(), **env}, capture_output=True, timeout=120
        )
        assert migrate.returncode == 0, migrate.stderr.decode()
        made = subprocess.run(
            [AGENTRUN, "keys", "create", "--role", "viewer", "--name", "log-check"],
            env={**_environ(), **env},
            capture_output=True,
            timeout=120,
        )
        assert made.returncode == 0, made.stderr.decode()
        db_key = made.stdout.decode().strip().splitlines()[-1]
        assert db_key.startswith("ark_") and db_key.encode() not in made.stderr
        port = free_port()
        env["AGENTRUN_PUBLIC_URL"] = f"http://127.0.0.1:{port}"
        logs = [tmp_path / "api.log", tmp_path / "worker.log"]
        api = spawn(["api", "--port", str(port)], pg.url, logs[0], **env)
        worker = spawn(["worker", "--concurrency", "2"], pg.url, logs[1], **env)
        client = httpx.Client(
            base_url=f"http://127.0.0.1:{port}",
            headers={"Authorization": f"Bearer {API_KEY}"},
            timeout=10,
        )
        browser = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=10)  # no key
        browser_token = "not minted"
        try:
            wait_until(lambda: _ready(client), 30, "the API to become ready")
            closed = free_port()  # nothing listens there: every delivery fails
            created = client.post(
                "/v1/runs",
                json={
                    "prompt": "look it up",
                    "model": _script(),
                    "tools": [{"name": "lookup", "parameters": {"type": "object"}}],
                    "max_turns": 3,
                    "webhook": {"url": f"http://127.0.0.1:{closed}/hook?token=hook-secret"},
                },
            )
            assert created.status_code == 201, created.text
            run_id = created.json()["id"]
            wait_until(
                lambda: client.get(f"/v1/runs/{run_id}").json()["status"] == "requires_action",
                30,
                "the run to suspend",
            )
            # A database key: used, and used with a wrong secret (the 401 path).
            viewer = {"Authorization": f"Bearer {db_key}"}
            assert client.get(f"/v1/runs/{run_id}", headers=viewer).status_code == 200
            wrong = {"Authorization": f"Bearer {db_key[:-4]}AAAA"}
            assert client.get(f"/v1/runs/{run_id}", headers=wrong).status_code == 401
            action = client.get(f"/v1/runs/{run_id}").json()["required_action"]
            callback = action["callback_url"]
            token = callback.split("/callbacks/")[1].split("/")[0]
            call_id = action["tool_calls"][0]["id"]
            minted = client.post(f"/v1/runs/{run_id}/browser-tokens", json={})
            assert minted.status_code == 201, minted.text
            browser_token = minted.json()["token"]
            as_browser = f"/v1/runs/{run_id}/events?access_token={browser_token}"
            assert browser.get(as_browser).status_code == 200
            altered = browser.get(f"{as_browser[:-3]}xyz")
            assert altered.status_code == 401, altered.text
            elsewhere = browser.post(
                f"/v1/runs/{run_id}/cancel", headers={"Authorization": f"Bearer {browser_token}"}
            )
            assert elsewhere.status_code == 403, elsewhere.text

            pg.stop()
            for _ in range(3):  # requests during the outage take the error paths
                _request(client, "GET", f"/v1/runs/{run_id}")
                _request(client, "POST", "/v1/runs", json={"prompt": "x", "model": _script()})
                _request(
                    browser, "GET", f"/v1/runs/{run_id}/wait?timeout=0&access_token={browser_token}"
                )
            wait_until(lambda: b"Traceback" in logs[1].read_bytes(), 20, "the worker to log")
            pg.start()

            answered = _request(
                client,
                "POST",
                callback,
                json={"results": [{"tool_call_id": call_id, "output": "42"}]},
                retry_until_ok=True,
            )
            assert answered is not None and answered.status_code == 200, answered
            wait_until(
                lambda: client.get(f"/v1/runs/{run_id}").json()["status"] == "completed",
                60,
                "the run to complete after the outage",
            )
            people = _a_person_acts_on_the_dashboard(client, {**_environ(), **env})
        finally:
            client.close()
            browser.close()
            stop(api)
            stop(worker)

        text = "\n".join(p.read_text() for p in logs)
        assert "Traceback" in text, "the outage left no traceback: the check would prove nothing"
        leaked = {
            name: value
            for name, value in {
                **SECRETS,
                "database password": pg.password,
                "token": token,
                "browser token": browser_token,
                "browser token's signature": browser_token.rpartition(".")[2],
                **people,
                "database key": db_key.split("_", 2)[2],
            }.items()
            if value in text
        }
        assert not leaked, f"secrets in the logs: {sorted(leaked)}"
        assert "hook-secret" not in text
        for line in text.splitlines():
            if line.startswith("{"):
                json.loads(line)  # JSON lines off a terminal
        assert any(line.startswith("{") for line in text.splitlines())


DASHBOARD_PASSWORD = "pw-" + "p4ss" * 6


def _a_person_acts_on_the_dashboard(client: httpx.Client, env: dict[str, str]) -> dict[str, str]:
    """An account made from the command line signs in (after a wrong password), cancels a
    run and logs out; the secrets that went by: the password, the session's, the cookie."""
    made = subprocess.run(
        [AGENTRUN, "operators", "create", "--username", "alice", "--role", "operator"],
        input=DASHBOARD_PASSWORD + "\n",
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert made.returncode == 0, made.stderr
    tools = [{"name": "lookup", "parameters": {"type": "object"}}]
    body = {"prompt": "x", "model": _script(), "tools": tools, "max_turns": 3}
    run = client.post("/v1/runs", json=body)
    assert run.status_code == 201, run.text
    run_id = run.json()["id"]
    wait_until(
        lambda: client.get(f"/v1/runs/{run_id}").json()["status"] == "requires_action",
        30,
        "the dashboard's run to suspend",
    )
    with httpx.Client(base_url=client.base_url, timeout=10) as browser:
        csrf = csrf_of(browser.get("/admin/login").text)
        login = {"username": "alice", "csrf_token": csrf, "next": "/admin"}
        wrong = browser.post("/admin/login", data={**login, "password": DASHBOARD_PASSWORD[:-1]})
        assert wrong.status_code == 401
        signed = browser.post("/admin/login", data={**login, "password": DASHBOARD_PASSWORD})
        assert signed.status_code == 303, signed.text
        cookie = browser.cookies["agentrun_admin"]
        _, data = URLSafeTimedSerializer("any key").loads_unsafe(cookie)
        csrf = csrf_of(browser.get(f"/admin/runs/{run_id}").text)
        cancelled = browser.post(
            f"/admin/runs/{run_id}/cancel", data={"csrf_token": csrf, "confirmed": "yes"}
        )
        assert cancelled.status_code == 303, cancelled.text
        assert browser.post("/admin/logout", data={"csrf_token": csrf}).status_code == 303
    events = client.get(f"/v1/runs/{run_id}/events").json()["data"]
    assert events[-1]["type"] == "run.cancelled" and events[-1]["actor"] == "user:alice"
    return {
        "dashboard password": DASHBOARD_PASSWORD,
        "dashboard session secret": data["session"],
        "dashboard cookie": cookie,
    }


def _environ() -> dict[str, str]:
    import os

    return dict(os.environ)


def _ready(client: httpx.Client) -> bool:
    try:
        return client.get("/readyz").status_code == 200
    except httpx.TransportError:
        return False


def _request(
    client: httpx.Client,
    method: str,
    url: str,
    *,
    json: object = None,
    retry_until_ok: bool = False,
) -> httpx.Response | None:
    deadline = time.monotonic() + 30
    while True:
        try:
            response = client.request(method, url, json=json)
        except httpx.TransportError:
            response = None
        if not retry_until_ok or (response is not None and response.status_code < 500):
            return response
        if time.monotonic() > deadline:
            return response
        time.sleep(0.2)
