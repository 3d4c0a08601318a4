"""Flow-control bench: worker processes sharing a provider's quota through the database.

A quota-enforcing OpenAI-shaped mock (`tests/mocks/quota.py`: R requests and T tokens per
minute, 429 beyond) on 127.0.0.1; `--workers` worker processes × `--slots` slots, each
with an `openai` profile pointed at the mock and limited to `factor` × the quota; `--runs`
one-call runs created up front. Three scenarios, each on a fresh PostgreSQL database:
the limit equal to the quota (expect zero 429s, the quota's throughput), above it
(`--over`: the first 429 teaches every worker the quota) and none configured at all
(`--only none`: the first 429 and its headers teach every worker the quota; `--burst 1`
makes the mock's buckets hold a second's worth, as a provider counting per second does).
Reported per scenario: the
mock's 429s (total and per minute), the steady throughput (answers after the first
minute's burst, per minute) against the quota, the wall time, and how the runs ended.

Run: `.venv/bin/python bench/flow_control.py [--runs 1000] [--rpm 600] [--server URL]`;
issue 34's figure: `--only none --runs 160 --rpm 480 --tpm 1000000 --burst 1`.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


from app import features  # noqa: E402
from app.clock import SYSTEM_CLOCK  # noqa: E402
from app.core.lifecycle import TERMINAL, RunStatus  # noqa: E402
from app.core.scope import Scope  # noqa: E402
from app.limits.shared import shared  # noqa: E402
from app.providers.profiles import Profile, Profiles, RateLimits  # noqa: E402
from app.service.runs import RunService  # noqa: E402
from app.service.schemas import RunCreate  # noqa: E402
from app.settings import Settings  # noqa: E402
from app.store.backend.engines import engine_for  # noqa: E402
from app.store.runs import RunStore  # noqa: E402
from app.worker.worker import Worker  # noqa: E402
from bench.common import drop_database, fresh_database, server_argument  # noqa: E402
from tests.mocks.quota import quota_server  # noqa: E402


def settings_for(url: str, base_url: str) -> Settings:
    return Settings(
        database_url=url,
        openai_base_url=base_url,
        openai_api_key="sk-bench",
        provider_max_attempts=50,
        provider_max_backoff_seconds=600.0,
        provider_backoff_base_seconds=0.2,
        default_max_output_tokens=16,  # (what a call reserves for its output)
    )  # type: ignore[call-arg]


async def work(url: str, base_url: str, slots: int, rpm: int, tpm: int) -> None:
    """One worker process: an `openai` profile limited to (rpm, tpm) (0: nothing
    configured), until SIGTERM."""
    import signal

    settings = settings_for(url, base_url)
    store = features.install(RunStore(engine_for(settings, pool_size=slots + 2)), settings)
    limits = RateLimits(requests_per_minute=rpm or None, tokens_per_minute=tpm or None)
    profiles = Profiles({"openai": Profile("openai", "openai_chat", limits=limits)})
    worker = Worker(store, settings, concurrency=slots, profiles=profiles, clock=SYSTEM_CLOCK)
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, worker.stop)
    try:
        await worker.run(grace=5.0)
    finally:
        await store.aclose()


async def create_runs(store: RunStore, settings: Settings, n: int) -> None:
    service = RunService(store, settings)
    body = RunCreate.model_validate({"prompt": "hi", "model": {"provider": "openai", "name": "m"}})
    for _ in range(n):
        await service.create_run(body)


async def ended(store: RunStore) -> dict[str, int]:
    counts = await store.count_by_status(scope=Scope.ALL)
    return {str(k): int(v) for k, v in counts.items()}


async def scenario(args: argparse.Namespace, factor: float | None) -> dict[str, object]:
    """One scenario: the profile limited to `factor` × the quota (None: no limit)."""
    admin, url = fresh_database(args.server)
    try:
        return await _scenario(args, factor, url)
    finally:
        drop_database(admin, url)


async def _scenario(args: argparse.Namespace, factor: float | None, url: str) -> dict[str, object]:
    rpm, tpm = (0, 0) if factor is None else (int(args.rpm * factor), int(args.tpm * factor))
    with quota_server(args.rpm, args.tpm, args.burst) as mock:
        settings = settings_for(url, mock.base_url)
        store = RunStore(engine_for(settings, pool_size=4))
        await create_runs(store, settings, args.runs)
        start = time.monotonic()
        procs = [
            subprocess.Popen(
                [sys.executable, __file__, "--worker", url, mock.base_url]
                + [str(args.slots), str(rpm), str(tpm)],
                env={**os.environ, "AGENTRUN_LOG_LEVEL": "warning"},
            )
            for _ in range(args.workers)
        ]
        try:
            while True:
                counts = await ended(store)
                done = sum(v for k, v in counts.items() if RunStatus(k) in TERMINAL)
                if done >= args.runs or time.monotonic() - start > args.timeout:
                    break
                await asyncio.sleep(0.5)
            learned = await shared(store).flow.slow_rates()
        finally:
            for p in procs:
                p.terminate()
            for p in procs:
                p.wait(30)
            await store.aclose()
        wall = time.monotonic() - start
        answers = sorted(mock.answered_at)
        ideal = args.runs / (args.rpm / 60)  # (the runs at the quota's rate, no burst)
        # The steady rate: answers after the first minute (past the burst), per minute.
        steady = None
        if answers and answers[-1] - answers[0] > 90:
            after = [a for a in answers if a >= answers[0] + 60]
            steady = len(after) / (answers[-1] - answers[0] - 60) * 60
        return {
            "limit_rpm": rpm,
            "limit_tpm": tpm,
            "quota_rpm": args.rpm,
            "quota_tpm": args.tpm,
            "runs": counts,
            "answers": mock.answered,
            "429s": len(mock.rejected),
            "429s_per_minute": mock.per_minute_429s(start),
            "429_at_seconds": [round(t - start, 1) for t in mock.rejected[:20]],
            "steady_rpm": None if steady is None else round(steady, 1),
            "steady_vs_quota": None if steady is None else round(steady / args.rpm, 3),
            "wall_seconds": round(wall, 1),
            "ideal_seconds": round(ideal, 1),
            # (from the mock's first request to its last answer: the wall less start-up)
            "served_seconds": round(answers[-1] - min([answers[0], *mock.rejected[:1]]), 1)
            if answers
            else None,
            "learned_rpm": learned,
        }


async def acquire_cpu(server: str, n: int) -> dict[str, float]:
    """The database CPU of one acquire (a profile and a model key), measured on the
    server process of a one-connection pool (/proc: the server must be local)."""
    import sqlalchemy as sa

    from app.limits.rates_sql import Demand
    from bench.common import (
        process_cpu,
    )

    admin, url = fresh_database(server)
    try:
        settings = Settings(database_url=url)  # type: ignore[call-arg]
        store = RunStore(engine_for(settings, pool_size=1))
        row = await store.backend.fetch_one(sa.select(sa.func.pg_backend_pid()), {})
        assert row is not None
        stat = Path(f"/proc/{next(iter(row.values()))}/stat")
        demands = [Demand("profile:p", 10**6, 10**8, 100), Demand("model:p/m", 10**6, None)]
        now = time.time()
        for i in range(200):  # (warm: statements prepared, rows there)
            await shared(store).flow.acquire(demands, now + i * 0.001)
        before, wall = (process_cpu(stat) or ("", 0.0))[1], time.perf_counter()
        for i in range(n):
            await shared(store).flow.acquire(demands, now + 1 + i * 0.001)
        cpu = (process_cpu(stat) or ("", 0.0))[1] - before
        wall = time.perf_counter() - wall
        await store.aclose()
        return {"acquires": n, "db_cpu_ms": cpu * 1000 / n, "wall_ms": wall * 1000 / n}
    finally:
        drop_database(admin, url)


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        url, base, slots, rpm, tpm = sys.argv[2:7]
        asyncio.run(work(url, base, int(slots), int(rpm), int(tpm)))
        return
    parser = argparse.ArgumentParser()
    server_argument(parser)
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--slots", type=int, default=8)
    parser.add_argument("--rpm", type=int, default=300, help="the mock's quota")
    parser.add_argument("--tpm", type=int, default=30000)
    parser.add_argument("--over", type=float, default=2.0, help="limit / quota, 2nd scenario")
    parser.add_argument("--timeout", type=float, default=900.0)
    parser.add_argument("--burst", type=float, default=60.0, help="the mock's bucket, s")
    parser.add_argument("--only", choices=["equal", "over", "none"], default=None)
    parser.add_argument("--acquire-cpu", type=int, default=0, help="measure N acquires only")
    args = parser.parse_args()
    if args.acquire_cpu:
        print("acquire", asyncio.run(acquire_cpu(args.server, args.acquire_cpu)))
        return
    scenarios: dict[str, tuple[str, float | None]] = {
        "equal": ("limit = quota", 1.0),
        "over": (f"limit = {args.over} × quota", args.over),
        "none": ("no limit configured", None),
    }
    for only, (name, factor) in scenarios.items():
        if args.only != only and (args.only is not None or factor is None):
            continue
        result = asyncio.run(scenario(args, factor))
        print(name, result, flush=True)


if __name__ == "__main__":
    main()
