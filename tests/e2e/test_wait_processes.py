"""1,000 concurrent waits (`GET /v1/runs/{id}/wait`) on one `agentrun api` process hold
no database connection: the process's connections stay within its pools (far fewer than
1,000) and stay idle while the waits wait; a worker then completes the runs and every
wait answers, woken by the runs' NOTIFYs. And SIGTERM ends the waits at once, so they do
not hold up the graceful stop."""

from __future__ import annotations

import asyncio
import os
import signal
import statistics
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import aiohttp
import psycopg

from tests.e2e.processes import spawn, stop, wait_until
from tests.ports import free_port

KEY = "wait-e2e"
WAITS = 1000
#: The API process's pools (app.main: SQLAlchemy 10 + 10 overflow, the direct asyncpg
#: pool 10) and its LISTEN connection: what it may ever open, waits or not.
POOL_CEILING = 10 + 10 + 10 + 1
RUN = {
    "prompt": "say done",
    "model": {"provider": "scripted", "name": "demo", "script": [{"text": "done"}]},
}
HEADERS = {"Authorization": f"Bearer {KEY}"}


def connections(dsn: str) -> tuple[int, int]:
    """(all, busy) client connections to the test database other than this one."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*), count(*) FILTER (WHERE state <> 'idle') FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid() "
            "AND backend_type = 'client backend'"
        ).fetchone()
    assert row is not None
    return int(row[0]), int(row[1])


def watched(dsn: str) -> int:
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute("SELECT count(*) FROM run_watchers").fetchone()
    assert row is not None
    return int(row[0])


def ready(base: str) -> bool:
    import httpx

    try:
        return httpx.get(f"{base}/readyz", timeout=2).status_code == 200
    except httpx.TransportError:
        return False


async def create_runs(session: aiohttp.ClientSession, base: str, n: int) -> list[str]:
    gate = asyncio.Semaphore(32)

    async def one() -> str:
        async with gate, session.post(f"{base}/v1/runs", json=RUN) as r:
            assert r.status == 201, await r.text()
            return str((await r.json())["id"])

    return list(await asyncio.gather(*[one() for _ in range(n)]))


async def wait(
    session: aiohttp.ClientSession, base: str, run_id: str, **params: Any
) -> tuple[float, str, dict[str, Any]]:
    """(time answered, Wait-Outcome, run)."""
    async with session.get(f"{base}/v1/runs/{run_id}/wait", params=params) as r:
        body = await r.json()
        assert r.status == 200, body
        return time.time(), r.headers["Wait-Outcome"], body


def _at(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def test_a_thousand_waits_hold_no_connections_and_all_wake(
    empty_postgres_url: str, tmp_path: Path
) -> None:
    dsn = empty_postgres_url
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = {"AGENTRUN_API_KEYS": KEY}
    api = spawn(["api", "--port", str(port)], dsn, tmp_path / "api.log", **env)
    worker = None
    try:
        wait_until(lambda: ready(base), 30, "the API to start")

        async def scenario() -> dict[str, Any]:
            nonlocal worker
            timeout = aiohttp.ClientTimeout(total=120)
            connector = aiohttp.TCPConnector(limit=0)
            async with aiohttp.ClientSession(
                headers=HEADERS, timeout=timeout, connector=connector
            ) as session:
                ids = await create_runs(session, base, WAITS)
                # A first wait starts the process's LISTEN connection.
                await wait(session, base, ids[0], timeout=0.2)
                baseline = connections(dsn)[0]
                started = time.monotonic()
                waits = [asyncio.ensure_future(wait(session, base, i, timeout=60)) for i in ids]
                while watched(dsn) < WAITS:  # every wait has joined the hub
                    assert not any(w.done() for w in waits), "a wait answered early"
                    await asyncio.sleep(0.05)
                joined = time.monotonic() - started
                samples = []
                for _ in range(20):  # while all 1,000 wait
                    samples.append(connections(dsn))
                    await asyncio.sleep(0.05)
                assert not any(w.done() for w in waits), "a wait answered early"
                worker = spawn(
                    ["worker", "--concurrency", "8"], dsn, tmp_path / "worker.log", **env
                )
                answers = await asyncio.wait_for(asyncio.gather(*waits), 90)
                return {
                    "baseline": baseline,
                    "samples": samples,
                    "answers": answers,
                    "joined": joined,
                }

        result = asyncio.run(scenario())
    finally:
        if worker is not None:
            assert stop(worker) == 0
        assert stop(api) == 0
    samples: list[tuple[int, int]] = result["samples"]
    most = max(total for total, _ in samples)
    busy = [b for _, b in samples]
    answers = result["answers"]
    assert [o for _, o, _ in answers] == ["reached"] * WAITS
    assert {run["status"] for _, _, run in answers} == {"completed"}
    latencies = sorted(at - _at(run["updated_at"]) for at, _, run in answers)
    report = (
        f"{WAITS} waits joined in {result['joined']:.2f}s; connections: baseline "
        f"{result['baseline']}, at most {most} while waiting (busy per sample {busy}); "
        f"status change → answer: p50 {statistics.median(latencies) * 1000:.0f} ms, "
        f"p95 {latencies[int(0.95 * WAITS)] * 1000:.0f} ms, max {latencies[-1] * 1000:.0f} ms"
    )
    print(report)
    if os.environ.get("AGENTRUN_WAIT_REPORT"):
        Path(os.environ["AGENTRUN_WAIT_REPORT"]).write_text(report + "\n")
    # At most one more than before (a watch renewal may overlap the watch writer).
    assert most <= result["baseline"] + 1 and most <= POOL_CEILING, report
    # Nobody holds a connection while waiting: at most a stray read or watch renewal.
    assert statistics.median(busy) == 0, report
    log = (tmp_path / "api.log").read_text()
    assert "Traceback" not in log, log[-4000:]


def test_sigterm_ends_the_waits_at_once(clean_postgres: str, tmp_path: Path) -> None:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    api = spawn(["api", "--port", str(port)], clean_postgres, tmp_path / "api.log",
                AGENTRUN_API_KEYS=KEY)  # fmt: skip
    try:
        wait_until(lambda: ready(base), 30, "the API to start")

        async def scenario() -> tuple[float, list[tuple[float, str, dict[str, Any]]]]:
            async with aiohttp.ClientSession(headers=HEADERS) as session:
                ids = await create_runs(session, base, 3)
                waits = [asyncio.ensure_future(wait(session, base, i, timeout=60)) for i in ids]
                while watched(clean_postgres) < len(ids):
                    await asyncio.sleep(0.05)
                signalled = time.time()
                api.send_signal(signal.SIGTERM)
                return signalled, list(await asyncio.wait_for(asyncio.gather(*waits), 20))

        signalled, answers = asyncio.run(scenario())
        assert api.wait(20) == 0
    finally:
        stop(api)
    assert [(o, run["status"]) for _, o, run in answers] == [("timeout", "queued")] * 3
    assert max(at for at, _, _ in answers) - signalled < 5
