"""The connection budget with real processes (README, "Connection budget"): 2 `agentrun api`
and 8 `agentrun worker --concurrency 8` processes against a private PostgreSQL started with
max_connections=50, under load (600 runs created concurrently through both APIs). Before
one pool per process this completed 27 of 600 runs ("too many clients"). Then the same
through PgBouncer in transaction mode, LISTEN on the server directly."""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

from tests.e2e import pgbouncer as bouncer
from tests.e2e.private_postgres import SYSTEM_USER, PrivatePostgres, available, private_postgres
from tests.e2e.processes import AGENTRUN, spawn, stop, wait_until
from tests.ports import free_port

pytestmark = pytest.mark.skipif(not available(), reason="needs PostgreSQL's initdb/pg_ctl")

KEY = "budget-key"
APIS, WORKERS, SLOTS = 2, 8, 8
RUNS = 600
MAX_CONNECTIONS = 50
RESERVED = 3  # superuser_reserved_connections
#: The README's rule: (max_connections − reserved − spare) // processes − 1 (the LISTEN);
#: the spare leaves room for `agentrun migrate`, psql and this test's observer.
POOL = (MAX_CONNECTIONS - RESERVED - 5) // (APIS + WORKERS) - 1
BOUNCER_SERVER_POOL = 20  # PgBouncer's server connections; the service's pools are clients

#: What a process logs when it could not get or keep a connection, or when a statement
#: met a server session it was not prepared on.
CONNECTION_ERRORS = re.compile(
    r"too many clients|remaining connection slots|TooManyConnections|QueuePool limit"
    r"|connection was closed|ConnectionDoesNotExist|service-unavailable"
    r"|prepared statement .* (does not exist|already exists)|unsupported startup parameter",
    re.IGNORECASE,
)


def run_request(i: int) -> dict[str, Any]:
    # A model call of 20 ms: a slot waiting on it holds no connection.
    script = [{"text": f"done {i}"}]
    return {
        "prompt": f"run {i}",
        "model": {"provider": "scripted", "name": "demo", "delay_ms": 20, "script": script},
        "max_turns": 2,
    }


@contextmanager
def observed(pg: PrivatePostgres) -> Iterator[list[int]]:
    """Samples (in a thread) how many server connections the service holds; a superuser
    connection over the socket, so it never takes one of the service's slots."""
    import threading

    samples: list[int] = []
    done = threading.Event()
    dsn = f"host={pg.sockets} port={pg.port} user={SYSTEM_USER} dbname=postgres"

    def sample() -> None:
        with psycopg.connect(dsn, autocommit=True) as conn:
            while not done.wait(0.05):
                row = conn.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE usename = 'agentrun'"
                ).fetchone()
                samples.append(int(row[0]) if row else 0)

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    try:
        yield samples
    finally:
        done.set()
        thread.join(10)


async def create_all(ports: list[int]) -> list[str]:
    """RUNS creates, 48 in flight at a time, spread over the API processes."""
    clients = [
        httpx.AsyncClient(
            base_url=f"http://127.0.0.1:{port}",
            headers={"Authorization": f"Bearer {KEY}"},
            timeout=30,
            # Idle connections dropped before uvicorn's keep-alive (5 s) drops them.
            limits=httpx.Limits(max_connections=24, keepalive_expiry=2),
        )
        for port in ports
    ]
    gate = asyncio.Semaphore(48)

    async def create(i: int) -> str:
        # As a client should: an Idempotency-Key, and a retry when the connection broke
        # (on a loaded machine a keep-alive connection may still close under a request).
        headers = {"Idempotency-Key": f"budget-{i}"}
        for attempt in range(3):
            try:
                async with gate:
                    response = await clients[i % len(clients)].post(
                        "/v1/runs", json=run_request(i), headers=headers
                    )
                break
            except httpx.TransportError:
                if attempt == 2:
                    raise
        assert response.status_code in (200, 201), (response.status_code, response.text)
        return str(response.json()["id"])

    try:
        return list(await asyncio.gather(*(create(i) for i in range(RUNS))))
    finally:
        for client in clients:
            await client.aclose()


def completed(client: httpx.Client) -> int:
    text = client.get("/metrics").text
    match = re.search(r'^agentrun_runs\{status="completed"\} (\S+)$', text, re.MULTILINE)
    return int(float(match.group(1))) if match else 0


def outputs(client: httpx.Client) -> dict[str, str]:
    """Every completed run's output, by id (the list, page by page)."""
    found: dict[str, str] = {}
    cursor = None
    while True:
        params: dict[str, Any] = {"status": "completed", "limit": 100}
        if cursor:
            params["cursor"] = cursor
        page = client.get("/v1/runs", params=params).json()
        found.update({run["id"]: run["output"] for run in page["data"]})
        cursor = page["next_cursor"]
        if not cursor:
            return found


@pytest.mark.parametrize("through", ["postgres", "pgbouncer"])
async def test_ten_processes_complete_every_run_within_fifty_connections(
    through: str, tmp_path: Path
) -> None:
    if through == "pgbouncer" and not bouncer.available():
        pytest.skip("PgBouncer is not installed (apt-get install pgbouncer; CI installs it)")
    with private_postgres({"max_connections": str(MAX_CONNECTIONS)}) as pg:
        migrate = subprocess.run(
            [AGENTRUN, "migrate"],
            env={**os.environ, "AGENTRUN_DATABASE_URL": pg.url},
            capture_output=True,
            timeout=120,
        )
        assert migrate.returncode == 0, migrate.stderr.decode()
        with (
            bouncer.pgbouncer(pg, server_pool=BOUNCER_SERVER_POOL)
            if through == "pgbouncer"
            else _nothing()
        ) as proxy:
            env = {"AGENTRUN_API_KEYS": KEY, "AGENTRUN_LEASE_SECONDS": "30"}
            if proxy is None:
                url = pg.url
                env["AGENTRUN_DATABASE_POOL_SIZE"] = str(POOL)
                budget = (APIS + WORKERS) * (POOL + 1)
            else:  # default pool size: the pools are PgBouncer's clients, not the server's
                url = proxy.url
                env["AGENTRUN_DATABASE_LISTEN_URL"] = pg.url
                env["AGENTRUN_DATABASE_PGBOUNCER"] = "true"
                budget = BOUNCER_SERVER_POOL + APIS + WORKERS
            with observed(pg) as samples:
                logs = await _drive(url, env, tmp_path)
            pgbouncer_log = proxy.log.read_text() if proxy is not None else ""
    assert budget <= MAX_CONNECTIONS - RESERVED
    assert samples and max(samples) <= budget, (max(samples), budget)
    for name, text in logs.items():
        bad = [line for line in text.splitlines() if CONNECTION_ERRORS.search(line)]
        assert not bad, (name, bad[:5])
    if through == "pgbouncer":
        assert "login attempt" in pgbouncer_log  # the pools did connect through it
        bad = [line for line in pgbouncer_log.splitlines() if CONNECTION_ERRORS.search(line)]
        assert not bad, bad[:5]


@contextmanager
def _nothing() -> Iterator[None]:
    yield None


async def _drive(url: str, env: dict[str, str], tmp_path: Path) -> dict[str, str]:
    """Start the processes, create RUNS runs, wait until all completed, stop everything;
    the processes' logs by file name."""
    ports = [free_port() for _ in range(APIS)]
    env = {**env, "AGENTRUN_PUBLIC_URL": f"http://127.0.0.1:{ports[0]}"}
    procs = [
        spawn(["api", "--port", str(port)], url, tmp_path / f"api{i}.log", **env)
        for i, port in enumerate(ports)
    ] + [
        spawn(["worker", "--concurrency", str(SLOTS)], url, tmp_path / f"w{i}.log", **env)
        for i in range(WORKERS)
    ]
    clients = [
        httpx.Client(
            base_url=f"http://127.0.0.1:{port}", headers={"Authorization": f"Bearer {KEY}"}
        )
        for port in ports
    ]
    try:
        for client in clients:
            wait_until(lambda c=client: _ready(c), 60, "the API processes to become ready")
        ids = await create_all(ports)
        start = time.monotonic()
        while completed(clients[0]) < RUNS:
            assert time.monotonic() - start < 60, f"{completed(clients[0])} of {RUNS} completed"
            await asyncio.sleep(0.2)
        done = outputs(clients[1])
        assert sorted(done) == sorted(ids)
        assert all(done[run_id] == f"done {i}" for i, run_id in enumerate(ids))
    finally:
        for client in clients:
            client.close()
        codes = [stop(proc) for proc in procs]
    logs = {path.name: path.read_text() for path in sorted(tmp_path.glob("*.log"))}
    names = [f"api{i}.log" for i in range(APIS)] + [f"w{i}.log" for i in range(WORKERS)]
    failed = {name: logs[name][-2000:] for name, code in zip(names, codes, strict=True) if code}
    assert not failed, (codes, failed)
    return logs


def _ready(client: httpx.Client) -> bool:
    try:
        return client.get("/readyz").status_code == 200
    except httpx.TransportError:
        return False
