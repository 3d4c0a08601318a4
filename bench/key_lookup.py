"""Key lookup benchmark, beside bench/http_api.py: what a database API key adds to a
request, against a key of AGENTRUN_API_KEYS (the issue's bound: 50 µs at the median).

1. In process: `DbKeys.authenticate` per call, for an env key, a database key while the
   process's cache holds it (the steady state: one read per key per half second), and a
   database key read every time (cache off: what one request in a half second pays).
2. Over HTTP: one `agentrun api` process on PostgreSQL; one client asks
   `GET /v1/runs/{id}` of a stored run, alternating blocks of the env key and a database
   key; the medians of both and their difference.

Run: `.venv/bin/python bench/key_lookup.py [--calls 20000] [--requests 4000]`.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import aiohttp
import httpx
import uvloop

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from app.clock import SYSTEM_CLOCK  # noqa: E402
from app.service.runs import RunService  # noqa: E402
from app.settings import Settings  # noqa: E402
from app.store.backend.engines import create_engine  # noqa: E402
from app.store.runs import RunStore  # noqa: E402
from app.tenancy.identities import Identities  # noqa: E402
from app.tenancy.keys import DbKeys, KeyAdmin  # noqa: E402
from bench.common import (  # noqa: E402
    AGENTRUN,
    drop_database,
    fresh_database,
    server_argument,
    wait_ready,
)
from tests.helpers import run_body  # noqa: E402
from tests.ports import free_port  # noqa: E402

ENV_KEY = "bench-env-key-" + "e" * 30


async def per_call(db: DbKeys, secret: str, calls: int) -> float:
    """Median µs of one `authenticate`."""
    samples = []
    for _ in range(calls):
        t0 = time.perf_counter_ns()
        found = await db.authenticate(secret)
        samples.append(time.perf_counter_ns() - t0)
        assert found is not None
    return statistics.median(samples) / 1000


async def in_process(store: RunStore, secret: str, calls: int) -> dict[str, float]:
    identities = Identities(store.backend)
    cached = DbKeys(identities, [ENV_KEY], clock=SYSTEM_CLOCK)
    uncached = DbKeys(identities, [ENV_KEY], cache_seconds=0, clock=SYSTEM_CLOCK)
    return {
        "env": await per_call(cached, ENV_KEY, calls),
        "db_cached": await per_call(cached, secret, calls),
        "db_uncached": await per_call(uncached, secret, max(calls // 20, 200)),
    }


async def over_http(
    url: str, run_id: str, secret: str, requests: int, logdir: Path
) -> dict[str, float]:
    port = free_port()
    env = {**os.environ, "AGENTRUN_DATABASE_URL": url, "AGENTRUN_API_KEYS": ENV_KEY}
    api = subprocess.Popen(
        [AGENTRUN, "api", "--port", str(port)],
        env=env,
        stdout=(logdir / "key_lookup_api.log").open("wb"),
        stderr=subprocess.STDOUT,
    )
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as probe:
            await wait_ready(probe)
        timings: dict[str, list[float]] = {"env": [], "db": []}
        async with aiohttp.ClientSession(
            base_url=f"http://127.0.0.1:{port}",
            connector=aiohttp.TCPConnector(limit=1),
            timeout=aiohttp.ClientTimeout(total=30),
        ) as client:
            block = 100  # alternating blocks: drift hits both keys alike
            for i in range(0, 2 * requests, block):
                name, key = ("env", ENV_KEY) if (i // block) % 2 == 0 else ("db", secret)
                headers = {"Authorization": f"Bearer {key}"}
                for _ in range(block):
                    t0 = time.perf_counter_ns()
                    async with client.get(f"/v1/runs/{run_id}", headers=headers) as response:
                        await response.read()
                    timings[name].append((time.perf_counter_ns() - t0) / 1000)
                    assert response.status == 200, response.status
        warm = {k: v[block:] for k, v in timings.items()}  # (connections, caches)
        return {k: statistics.median(v) for k, v in warm.items()}
    finally:
        api.terminate()
        api.wait(30)


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=20_000)
    parser.add_argument("--requests", type=int, default=4_000)
    parser.add_argument("--repeat", type=int, default=3)
    server_argument(parser)
    args = parser.parse_args()
    admin, url = fresh_database(args.server)
    logdir = Path(os.environ.get("TMPDIR", "/tmp")) / "agentrun-bench"
    logdir.mkdir(exist_ok=True)
    try:
        store = RunStore(create_engine(url, pool_size=4))
        issued = await KeyAdmin(Identities(store.backend), clock=SYSTEM_CLOCK).create(
            "default", "viewer", "bench"
        )
        view, _ = await RunService(store, Settings(database_url=url)).create_run(run_body())
        local, http = [], []
        for _ in range(args.repeat):
            local.append(await in_process(store, issued.secret, args.calls))
            http.append(await over_http(url, view.record.id, issued.secret, args.requests, logdir))
        await store.aclose()

        def med(samples: list[dict[str, float]], key: str) -> float:
            return statistics.median(s[key] for s in samples)

        print(
            f"median of {args.repeat} samples "
            f"({args.calls} calls, {args.requests} requests per key)"
        )
        print()
        print("| measured | env key | database key | added by the database key |")
        print("|---|---|---|---|")
        env, cached, uncached = (
            med(local, "env"),
            med(local, "db_cached"),
            med(local, "db_uncached"),
        )
        print(
            f"| `DbKeys.authenticate`, in process | {env:.1f} µs | {cached:.1f} µs (cached), "
            f"{uncached:.0f} µs (read every time) | {cached - env:+.1f} µs |"
        )
        e, d = med(http, "env"), med(http, "db")
        print(
            f"| `GET /v1/runs/{{id}}` p50, 1 API process "
            f"| {e:.0f} µs | {d:.0f} µs | {d - e:+.0f} µs |"
        )
    finally:
        drop_database(admin, url)


if __name__ == "__main__":
    uvloop.run(main())
