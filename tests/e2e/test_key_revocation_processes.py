"""Two `agentrun api` processes on one PostgreSQL database, each serving a database key
without pause (its cache warm: the worst case); the key is revoked from the command line
(`agentrun keys revoke`), and both refuse it within a second of the revocation — measured
from the `revoked_at` the revocation stored to each process's first 401."""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from datetime import datetime
from pathlib import Path

import httpx

from tests.e2e.processes import AGENTRUN, spawn, stop, wait_until
from tests.ports import free_port

ENV_KEY = "e2e-env-key"  # keeps both processes out of open mode once the key is revoked
BOUND = 1.0  # seconds: the issue's


def cli(database_url: str, *args: str) -> str:
    env = {**os.environ, "AGENTRUN_DATABASE_URL": database_url}
    done = subprocess.run(
        [AGENTRUN, *args], env=env, capture_output=True, text=True, timeout=60, check=True
    )
    return done.stdout


def test_a_key_revoked_from_the_cli_is_refused_by_every_api_process_within_a_second(
    clean_postgres: str, tmp_path: Path
) -> None:
    made = cli(clean_postgres, "keys", "create", "--role", "viewer", "--name", "revoke-me")
    secret = made.strip().splitlines()[-1]
    assert secret.startswith("ark_")
    key_id = secret.split("_")[1]
    ports = [free_port(), free_port()]
    env = {"AGENTRUN_API_KEYS": ENV_KEY, "AGENTRUN_AUTH_FAILURE_LIMIT": "0"}
    apis = [
        spawn(["api", "--port", str(port)], clean_postgres, tmp_path / f"api{i}.log", **env)
        for i, port in enumerate(ports)
    ]
    clients = [
        httpx.Client(
            base_url=f"http://127.0.0.1:{port}", headers={"Authorization": f"Bearer {secret}"}
        )
        for port in ports
    ]
    try:
        for client in clients:

            def serves(client: httpx.Client = client) -> bool:
                try:
                    return client.get("/v1/runs").status_code == 200
                except httpx.TransportError:
                    return False

            wait_until(serves, 30, "an API process to serve the key")
        refused_at: list[float | None] = [None, None]
        served_after: list[list[float]] = [[], []]
        stop_polling = threading.Event()

        def poll(i: int) -> None:
            while not stop_polling.is_set():
                status = clients[i].get("/v1/runs").status_code
                now = time.time()
                if status == 401:
                    refused_at[i] = now
                    return
                assert status == 200, status
                served_after[i].append(now)

        pollers = [threading.Thread(target=poll, args=(i,)) for i in range(2)]
        for thread in pollers:
            thread.start()
        try:
            cli(clean_postgres, "keys", "revoke", key_id)
            (row,) = [
                json.loads(line)
                for line in cli(clean_postgres, "keys", "list", "--json").splitlines()
                if json.loads(line)["id"] == key_id
            ]
            revoked_at = datetime.fromisoformat(
                row["revoked_at"].replace("Z", "+00:00")
            ).timestamp()
            for thread in pollers:  # each ends at its process's first 401
                thread.join(10)
        finally:
            stop_polling.set()
            for thread in pollers:
                thread.join(10)
        delays = [None if t is None else t - revoked_at for t in refused_at]
        print(f"refused by the two processes {delays} s after the revocation")
        assert all(d is not None and d < BOUND for d in delays), delays
        # Never served past the bound, and still served by both right up to the revocation.
        assert all(t < revoked_at + BOUND for ts in served_after for t in ts)
        assert all(ts for ts in served_after)
        for client in clients:
            assert client.get("/v1/runs").status_code == 401
            env_ok = client.get("/v1/runs", headers={"Authorization": f"Bearer {ENV_KEY}"})
            assert env_ok.status_code == 200
    finally:
        for client in clients:
            client.close()
        for api in apis:
            assert stop(api) == 0
