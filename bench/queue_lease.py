"""The tool-call queue on PostgreSQL: how fast leases and leased answers go, and how soon
a waiting lease request hears of new calls.

1. `runs` suspended runs with two calls each on queue `q`; `executors` concurrent tasks
   lease (`limit` at a time) and answer every call through `QueueService` (the API's code
   path without HTTP) until all runs have resumed: calls per second, and the median
   latency of one lease statement and of one answer.
2. Wake-up: a lease request waits on an empty queue (holding no connection); a run
   suspends with calls of the queue; the time from the suspension's commit to the lease
   request's answer (NOTIFY after the commit, then one lease statement), `samples` times.

Run: `.venv/bin/python bench/queue_lease.py [--runs 300] [--executors 8] [--limit 4]
[--samples 30] [--server URL]`
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from app.clock import SYSTEM_CLOCK  # noqa: E402
from app.core.lifecycle import RunStatus  # noqa: E402
from app.service.live import EventHub  # noqa: E402
from app.service.principals import DEFAULT_TENANT  # noqa: E402
from app.service.runs import RunService  # noqa: E402
from app.service.schemas import LeasedResultIn, LeaseIn  # noqa: E402
from app.store.backend.engines import create_engine  # noqa: E402
from app.store.backend.leases import bell_of  # noqa: E402
from app.store.runs import RunStore  # noqa: E402
from app.toolqueue.service import QueueService  # noqa: E402
from bench.common import (  # noqa: E402
    drop_database,
    fresh_database,
    server_argument,
)
from tests.conftest import make_settings  # noqa: E402
from tests.helpers import drive_once, suspended_run  # noqa: E402


def ms(values: list[float]) -> str:
    values = sorted(values)
    p95 = values[int(0.95 * (len(values) - 1))]
    return f"median {statistics.median(values) * 1000:.1f} ms, p95 {p95 * 1000:.1f} ms"


async def throughput(queues: QueueService, runs: int, executors: int, limit: int) -> None:
    service = queues.service
    for _ in range(runs):
        await suspended_run(service, tool_queue="q")
    leases: list[float] = []
    answers: list[float] = []
    resumed = 0

    async def executor(i: int) -> None:
        nonlocal resumed
        body = LeaseIn(executor=f"bench-{i}", limit=limit, wait=0)
        while True:
            started = time.perf_counter()
            calls = await queues.lease("q", body, None)
            leases.append(time.perf_counter() - started)
            if not calls:
                return
            for call in calls:
                started = time.perf_counter()
                outcome = await queues.submit(
                    "q", queues.token(call), LeasedResultIn(output="1"), None
                )
                answers.append(time.perf_counter() - started)
                resumed += outcome.resumed

    started = time.perf_counter()
    await asyncio.gather(*[executor(i) for i in range(executors)])
    elapsed = time.perf_counter() - started
    assert resumed == runs, (resumed, runs)
    for _ in range(runs):  # (the resumed runs complete, so the next part claims its own)
        assert await drive_once(service.store, service.settings) == RunStatus.COMPLETED
    print(
        f"{2 * runs} calls of {runs} runs leased and answered by {executors} executors "
        f"(limit {limit}) in {elapsed:.2f} s: {2 * runs / elapsed:.0f} calls/s; "
        f"lease {ms(leases)}; answer {ms(answers)}"
    )


async def wake_up(queues: QueueService, samples: int) -> None:
    service = queues.service
    latencies: list[float] = []
    for _ in range(samples):
        waiting = asyncio.ensure_future(queues.lease("w", LeaseIn(limit=2, wait=30), None))
        deadline = time.monotonic() + 30
        while not queues.bell.waiting(bell_of(DEFAULT_TENANT, "w")):  # (a tenant's queue)
            if waiting.done() or time.monotonic() > deadline:
                raise RuntimeError("the lease request never waited on the queue's bell")
            await asyncio.sleep(0.001)
        await asyncio.sleep(0.01)  # (its first look has found nothing)
        view = await suspended_run(service, tool_queue="w")
        committed = time.perf_counter()
        calls = await waiting
        latencies.append(time.perf_counter() - committed)
        assert view.record.status == RunStatus.REQUIRES_ACTION and len(calls) == 2
    print(
        f"a waiting lease answered after a suspension's commit: {ms(latencies)} ({samples} samples)"
    )


async def main(args: argparse.Namespace) -> None:
    admin, url = fresh_database(args.server)
    try:
        settings = make_settings(url)
        store = RunStore(create_engine(url))
        hub = EventHub(store, url, settings.poll_interval, clock=SYSTEM_CLOCK)
        queues = QueueService(RunService(store, settings), hub)
        try:
            await throughput(queues, args.runs, args.executors, args.limit)
            await wake_up(queues, args.samples)
        finally:
            await hub.close()
            await store.aclose()
    finally:
        drop_database(admin, url)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--executors", type=int, default=8)
    parser.add_argument("--limit", type=int, default=4)
    parser.add_argument("--samples", type=int, default=30)
    server_argument(parser)
    asyncio.run(main(parser.parse_args()))
