"""HTTP benchmark: the same lifecycle as bench/lifecycle.py, driven over HTTP only.

`agentrun api` (one process) and 2 `agentrun worker` processes on PostgreSQL; a bounded
concurrent client on 127.0.0.1 creates runs, polls for suspended ones and posts their
results. Reports lifecycles/s and p50/p99 latency of `POST /v1/runs` and of
`POST .../tool-results`, beside the service-layer throughput measured in the same run.

Run: `.venv/bin/python bench/http_api.py [--runs 2000] [--repeat 3]`.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiohttp
import httpx
import orjson
import uvloop

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from app.service.runs import RunService  # noqa: E402
from app.settings import Settings  # noqa: E402
from app.store.backend.engines import create_engine  # noqa: E402
from app.store.runs import RunStore  # noqa: E402
from bench.common import (  # noqa: E402
    AGENTRUN,
    SEEDED,
    completed_since,
    drop_database,
    fresh_database,
    pct,
    seed,
    server_argument,
    summary,
    wait_ready,
    workers_listening,
)
from bench.lifecycle import (  # noqa: E402
    service_run,
)
from tests.helpers import run_body  # noqa: E402
from tests.ports import free_port  # noqa: E402

KEY = "bench-key"


async def http_run(
    url: str, lifecycles: int, logdir: Path, concurrency: int, workers: int
) -> dict[str, float]:
    port = free_port()
    env = {
        **os.environ,
        "AGENTRUN_DATABASE_URL": url,
        "AGENTRUN_API_KEYS": KEY,
        "AGENTRUN_PUBLIC_URL": f"http://127.0.0.1:{port}",
    }
    procs = [
        subprocess.Popen(
            [AGENTRUN, "api", "--port", str(port)],
            env=env,
            stdout=(logdir / "http_api.log").open("wb"),
            stderr=subprocess.STDOUT,
        )
    ] + [
        subprocess.Popen(
            [AGENTRUN, "worker", "--concurrency", "8"],
            env=env,
            stdout=(logdir / f"http_w{i}.log").open("wb"),
            stderr=subprocess.STDOUT,
        )
        for i in range(workers)
    ]
    body = orjson.dumps(run_body().model_dump(mode="json", exclude_none=True))
    engine = create_engine(url)
    store = RunStore(engine)
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as probe:
        await wait_ready(probe)
    # The load generator is aiohttp: on two shared cores its CPU is taken from the service,
    # and httpx's connection pool cost the client more CPU per request than the API spent
    # serving it (profiled), which measured httpx rather than this service.
    async with aiohttp.ClientSession(
        base_url=f"http://127.0.0.1:{port}",
        headers={"Authorization": f"Bearer {KEY}", "Content-Type": "application/json"},
        connector=aiohttp.TCPConnector(limit=concurrency),
        timeout=aiohttp.ClientTimeout(total=30),
    ) as client:
        await asyncio.to_thread(workers_listening, url, workers, 1.0 * min(1.0, lifecycles / 2000))
        create_ms: list[float] = []
        submit_ms: list[float] = []
        created = 0
        done = 0
        since = datetime.now(UTC)
        started = time.perf_counter()

        async def creator() -> None:
            nonlocal created
            while created < lifecycles:
                created += 1
                t0 = time.perf_counter()
                async with client.post("/v1/runs", data=body) as response:
                    text = await response.read()
                create_ms.append((time.perf_counter() - t0) * 1000)
                assert response.status == 201, text

        async def submit(run: dict[str, Any]) -> None:
            action = run["required_action"]
            results = [
                {"tool_call_id": c["id"], "output": str(sum(c["arguments"].values()))}
                for c in action["tool_calls"]
            ]
            t0 = time.perf_counter()
            path = f"/v1/runs/{run['id']}/tool-results"
            async with client.post(path, data=orjson.dumps({"results": results})) as response:
                text = await response.read()
            submit_ms.append((time.perf_counter() - t0) * 1000)
            assert response.status in (200, 409), text

        async def executor() -> None:
            nonlocal done
            while done < lifecycles:
                query = {"status": "requires_action", "limit": "100"}
                async with client.get("/v1/runs", params=query) as page:
                    waiting = orjson.loads(await page.read())["data"]
                await asyncio.gather(*[submit(r) for r in waiting])
                # Bookkeeping straight from the database, as in bench/lifecycle.py (a page
                # of completed runs would miss runs that finish in bursts).
                done = await completed_since(store, since)
                if not waiting:
                    await asyncio.sleep(0.01)

        await asyncio.gather(*[creator() for _ in range(concurrency // 2)], executor())
        elapsed = time.perf_counter() - started
    for p in procs:
        p.terminate()
    for p in procs:
        p.wait(30)
    await store.aclose()
    return {
        "per_second": lifecycles / elapsed,
        "create_p50": statistics.median(create_ms),
        "create_p99": pct(create_ms, 0.99),
        "submit_p50": statistics.median(submit_ms),
        "submit_p99": pct(submit_ms, 0.99),
    }


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--workers", type=int, default=2, help="worker processes")
    server_argument(parser)
    args = parser.parse_args()
    admin, url = fresh_database(args.server)
    logdir = Path(os.environ.get("TMPDIR", "/tmp")) / "agentrun-bench"
    logdir.mkdir(exist_ok=True)
    try:
        seed(url, SEEDED)
        store = RunStore(create_engine(url, pool_size=16))
        service = RunService(store, Settings(database_url=url))
        layer, http = [], []
        for _ in range(args.repeat):  # interleaved, so drift hits both paths alike
            layer.append(await service_run(service, args.runs, args.workers, logdir))
            http.append(await http_run(url, args.runs, logdir, args.concurrency, args.workers))
        await store.aclose()
        share = statistics.median(h["per_second"] for h in http) / statistics.median(
            s["per_second"] for s in layer
        )
        print(
            f"{args.runs} lifecycles per sample, median (range) of {args.repeat} samples; "
            "latencies: median of the samples' percentiles"
        )
        print()
        print(
            f"| path ({args.workers} worker processes) | lifecycles/s | POST /v1/runs p50 / p99 | "
            "POST tool-results p50 / p99 |"
        )
        print("|---|---|---|---|")
        print(f"| service layer (in-process client) | {summary(layer, 'per_second')} | | |")

        def ms(key: str) -> str:
            return f"{statistics.median(h[key] for h in http):.1f}"

        print(
            f"| HTTP, 1 API process, {args.concurrency} connections "
            f"| {summary(http, 'per_second')} ({100 * share:.0f} % of the service layer) "
            f"| {ms('create_p50')} / {ms('create_p99')} ms "
            f"| {ms('submit_p50')} / {ms('submit_p99')} ms |"
        )
    finally:
        drop_database(admin, url)


if __name__ == "__main__":
    uvloop.run(main())
