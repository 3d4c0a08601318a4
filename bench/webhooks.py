"""Webhook and live-stream benchmark on PostgreSQL.

1. Webhook fan-out: N runs with a webhook URL, 2 `agentrun worker` processes, a loopback
   receiver in this process: deliveries per second, and the time from the suspend commit
   (the `run.requires_action` event) to the receiver having the signed request (p50/p99),
   over `--paced` runs created 10 a second.
2. SSE fan-out: 100 concurrent subscribers of one run on one `agentrun api` process;
   the time from each event's commit to its arrival at every subscriber (p50/p99).

Run: `.venv/bin/python bench/webhooks.py [--runs 500] [--paced 100] [--subscribers 100]`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from app.service.runs import RunService  # noqa: E402
from app.settings import Settings  # noqa: E402
from app.store.backend.engines import create_engine  # noqa: E402
from app.store.runs import RunStore  # noqa: E402
from bench.common import (  # noqa: E402
    AGENTRUN,
    drop_database,
    fresh_database,
    pct,
    server_argument,
    wait_ready,
    workers_listening,
)
from tests.helpers import run_body  # noqa: E402
from tests.mocks.receiver import SECRET, webhook_receiver  # noqa: E402
from tests.ports import free_port  # noqa: E402


def workers(url: str, n: int, env: dict[str, str], logdir: Path) -> list[subprocess.Popen[bytes]]:
    return [
        subprocess.Popen(
            [AGENTRUN, "worker", "--concurrency", "8"],
            env={**os.environ, "AGENTRUN_DATABASE_URL": url, **env},
            stdout=(logdir / f"hook_w{i}.log").open("wb"),
            stderr=subprocess.STDOUT,
        )
        for i in range(n)
    ]


async def webhook_fanout(
    url: str, runs: int, paced_runs: int, logdir: Path, n_workers: int
) -> dict[str, float]:
    engine = create_engine(url)
    store = RunStore(engine)
    # (The receiver is on loopback: creates accept its URL only when private ones are.)
    service = RunService(store, Settings(database_url=url, webhook_allow_private=True))
    arrivals: dict[str, datetime] = {}
    with webhook_receiver() as receiver:
        receiver.on_event = lambda p: arrivals.setdefault(p["data"]["run_id"], datetime.now(UTC))
        procs = workers(
            url,
            n_workers,
            {"AGENTRUN_WEBHOOK_SECRET": SECRET, "AGENTRUN_WEBHOOK_ALLOW_PRIVATE": "true"},
            logdir,
        )
        await asyncio.to_thread(workers_listening, url, n_workers, 1.5 * min(1.0, runs / 500))
        body = run_body(webhook={"url": receiver.url})
        # Throughput: a burst of runs, as fast as they can be created.
        started = time.perf_counter()
        burst = [(await service.create_run(body))[0].record.id for _ in range(runs)]
        while len(arrivals) < runs:
            await asyncio.sleep(0.01)
        elapsed = time.perf_counter() - started
        # Latency: a paced stream of runs (10/s), so no queue stands in between.
        paced = []
        for _ in range(paced_runs):
            paced.append((await service.create_run(body))[0].record.id)
            await asyncio.sleep(0.1)
        while len(arrivals) < runs + len(paced):
            await asyncio.sleep(0.01)
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait(30)
    assert len(burst) == runs
    latencies = []
    for run_id in paced:
        events = await store.events(run_id)
        suspended = next(e.created_at for e in events if e.type == "run.requires_action")
        latencies.append((arrivals[run_id] - suspended).total_seconds() * 1000)
    await store.aclose()
    return {
        "per_second": runs / elapsed,
        "p50": statistics.median(latencies),
        "p99": pct(latencies, 0.99),
    }


async def sse_fanout(url: str, subscribers: int, logdir: Path) -> dict[str, float]:
    port = free_port()
    env = {**os.environ, "AGENTRUN_DATABASE_URL": url, "AGENTRUN_API_KEYS": "k"}
    api = subprocess.Popen(
        [AGENTRUN, "api", "--port", str(port)],
        env=env,
        stdout=(logdir / "sse_api.log").open("wb"),
        stderr=subprocess.STDOUT,
    )
    procs = workers(url, 1, {}, logdir)
    delays: list[float] = []
    received = 0
    async with httpx.AsyncClient(
        base_url=f"http://127.0.0.1:{port}",
        headers={"Authorization": "Bearer k"},
        timeout=60,
        limits=httpx.Limits(max_connections=subscribers + 10),
    ) as client:
        await wait_ready(client)
        # A streamed run: many model.delta events while the subscribers watch.
        text = "word " * 400
        model = {"provider": "scripted", "name": "d", "delay_ms": 500, "script": [{"text": text}]}
        body = run_body(model=model, tools=[], stream=True).model_dump(
            mode="json", exclude_none=True
        )
        run_id = (await client.post("/v1/runs", json=body)).json()["id"]

        async def subscribe() -> None:
            nonlocal received
            async with client.stream(
                "GET", f"/v1/runs/{run_id}/events", headers={"Accept": "text/event-stream"}
            ) as r:
                async for line in r.aiter_lines():
                    if line.startswith("data:"):
                        event = json.loads(line[5:])
                        arrived = datetime.now(UTC)
                        committed = datetime.fromisoformat(event["created_at"])
                        delays.append((arrived - committed).total_seconds() * 1000)
                        received += 1

        await asyncio.gather(*[subscribe() for _ in range(subscribers)])
        events = len((await client.get(f"/v1/runs/{run_id}/events")).json()["data"])
    for p in [api, *procs]:
        p.terminate()
    for p in [api, *procs]:
        p.wait(30)
    return {
        "events": events,
        "received": received,
        "p50": statistics.median(delays),
        "p99": pct(delays, 0.99),
    }


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=500)
    parser.add_argument("--paced", type=int, default=100, help="runs for the latency, 10/s")
    parser.add_argument("--subscribers", type=int, default=100)
    parser.add_argument("--workers", type=int, default=2, help="for the webhook fan-out")
    server_argument(parser)
    args = parser.parse_args()
    admin, url = fresh_database(args.server)
    logdir = Path(os.environ.get("TMPDIR", "/tmp")) / "agentrun-bench"
    logdir.mkdir(exist_ok=True)
    try:
        hooks = await webhook_fanout(url, args.runs, args.paced, logdir, args.workers)
        sse = await sse_fanout(url, args.subscribers, logdir)
        print("| measurement | figure |")
        print("|---|---|")
        print(
            f"| webhook deliveries/s ({args.workers} workers, loopback receiver) "
            f"| {hooks['per_second']:.0f} |"
        )
        print(
            f"| suspend commit → executor has the webhook, p50 / p99 | "
            f"{hooks['p50']:.1f} / {hooks['p99']:.1f} ms |"
        )
        print(
            f"| SSE: {args.subscribers} subscribers of one run, {sse['events']:.0f} live events, "
            f"{sse['received']:.0f} deliveries; commit → subscriber p50 / p99 | "
            f"{sse['p50']:.1f} / {sse['p99']:.1f} ms |"
        )
    finally:
        drop_database(admin, url)


if __name__ == "__main__":
    asyncio.run(main())
