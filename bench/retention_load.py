"""Retention under load: the API's latency while a sweep deletes a large day of runs.

A fresh PostgreSQL database is seeded with `--kept` finished runs spread over the last
29 days, `--day` finished runs created 31 days ago (the day the sweep deletes),
`--suspended` (5,000) suspended and `--queued` (1,000) queued runs, each finished run
with its configuration, 4 events, 2 log batches, 2 tool calls, 2 ledger rows, a webhook
delivery and its attempt (INSERT ... SELECT generate_series, then ANALYZE), and folded as
workers fold. `agentrun api` (one process) then serves a sequential client (`--clients`
of them) that cycles through a run, its events, lists (all runs, one status) and the
usage report: warming up for `--warm` seconds, idle for `--idle` seconds, then while
this process sweeps the day as a worker does (`purge_batch` of `--batch` runs, 50 ms
apart). Prints p50/p95 of both phases and the sweep's pace.

Run: `.venv/bin/python bench/retention_load.py [--kept 200000] [--day 20000] [--idle 20]`.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import psycopg

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from app.store.backend.engines import create_engine  # noqa: E402
from app.store.fold import fold  # noqa: E402
from app.store.retention import purge_batch  # noqa: E402
from bench.common import (  # noqa: E402
    AGENTRUN,
    drop_database,
    fresh_database,
    pct,
    server_argument,
    wait_ready,
)
from tests.ports import free_port  # noqa: E402

KEY = "bench-key"


def seed_sql(kept: int, day: int, now: datetime, suspended: int, queued: int) -> str:
    """Runs numbered 1..kept (finished, the last 29 days), then `day` finished runs of
    31 days ago, then `suspended` and `queued` ones (created in the last day). Every row a
    run owns, as the service writes them (constraints hold: unique keys, one creation
    time in `runs` and `run_configs`; each finished run noted for the fold, as the write
    that ends a run notes it)."""
    total = kept + day + suspended + queued
    n = f"timestamptz '{now.isoformat()}'"
    created = (
        f"CASE WHEN g <= {kept} THEN {n} - interval '29 days' * g / {kept}"
        f" WHEN g <= {kept + day} THEN {n} - interval '31 days' - interval '1 day'"
        f" * (g - {kept}) / {day}"
        f" ELSE {n} - interval '1 day' * (g - {kept + day}) / {max(1, suspended + queued)} END"
    )
    status = (
        f"CASE WHEN g <= {kept + day} THEN (CASE WHEN g % 50 = 0 THEN 'failed'"
        f" ELSE 'completed' END) WHEN g <= {kept + day + suspended} THEN 'requires_action'"
        " ELSE 'queued' END"
    )
    return f"""
    INSERT INTO runs (id, status, state, schema_version, version, available_at, max_turns,
                      created_at, updated_at, last_event_seq, usage)
    SELECT 'run_' || lpad(g::text, 21, '0'), {status},
           '{{"v": 2, "status": "done", "turn": 2}}', 2, 6, c, 10, c, c + interval '30 s',
           4, '{{"input_tokens": 300, "output_tokens": 60}}'
    FROM generate_series(1, {total}) g, LATERAL (SELECT {created} AS c) t;
    INSERT INTO unfolded_runs (run_id, tenant_id, status, ended_at, counts)
    SELECT id, tenant_id, status, updated_at, true FROM runs
    WHERE status IN ('completed', 'failed');
    INSERT INTO run_configs (run_id, config, metadata, created_at)
    SELECT id, '{{"model": {{"provider": "scripted", "name": "demo"}},
                  "tools": [{{"name": "add"}}]}}', '{{"team": "a"}}', created_at FROM runs;
    INSERT INTO run_events (run_id, seq, type, data, actor, created_at)
    SELECT id, s, (ARRAY['run.created', 'run.claimed', 'run.requires_action',
                         'run.completed'])[s], '{{}}', 'worker', created_at + s * interval '5 s'
    FROM runs, generate_series(1, 4) s;
    INSERT INTO run_messages (run_id, seq, body)
    SELECT id, s, '{{"m": [{{"role": "user", "content": "What is 1+2?"}}]}}'
    FROM runs, generate_series(1, 2) s;
    INSERT INTO tool_calls (run_id, round, position, call_id, name, arguments, result,
                            result_hash, submitted_at)
    SELECT id, 1, p, 'call_' || p, 'add', '{{"a": 1}}', '"3"', md5(id || p), created_at
    FROM runs, generate_series(0, 1) p WHERE status <> 'queued';
    INSERT INTO model_calls (run_id, turn, provider, model, outcome, input_tokens,
                             output_tokens, total_tokens, cost_usd, latency_ms, created_at)
    SELECT id, t, 'scripted', 'demo', 'ok', 150, 30, 180, 0.0012, 250,
           created_at + t * interval '3 s'
    FROM runs, generate_series(1, 2) t
    WHERE status <> 'queued' AND (status <> 'requires_action' OR t = 1);
    INSERT INTO webhook_outbox (run_id, event_seq, event_type, webhook_id, url, payload,
                                status, attempts, next_attempt_at, created_at, delivered_at)
    SELECT id, 4, 'run.completed', 'msg_' || id || '_4', 'http://127.0.0.1:9/hook', '{{}}',
           'delivered', 1, updated_at, updated_at, updated_at
    FROM runs WHERE status IN ('completed', 'failed');
    INSERT INTO webhook_attempts (outbox_id, attempt, status_code, latency_ms, worker,
                                  created_at)
    SELECT id, 1, 200, 12, 'w', created_at FROM webhook_outbox;
    """


def seed(url: str, args: argparse.Namespace, now: datetime) -> float:
    started = time.perf_counter()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(seed_sql(args.kept, args.day, now, args.suspended, args.queued))
        conn.execute("VACUUM ANALYZE")
    return time.perf_counter() - started


async def client_loop(
    base: str, ids: list[str], stop: asyncio.Event, phase: list[str], out: dict[str, list[float]]
) -> None:
    paths = [
        lambda: f"/v1/runs/{random.choice(ids)}",
        lambda: f"/v1/runs/{random.choice(ids)}/events",
        lambda: "/v1/runs?limit=50",
        lambda: "/v1/runs?status=requires_action&limit=50",
        lambda: "/v1/usage",
    ]
    headers = {"Authorization": f"Bearer {KEY}"}
    async with httpx.AsyncClient(base_url=base, headers=headers, timeout=30) as client:
        i = 0
        while not stop.is_set():
            path = paths[i % len(paths)]()
            i += 1
            started = time.perf_counter()
            response = await client.get(path)
            elapsed = (time.perf_counter() - started) * 1000
            assert response.status_code == 200, (path, response.status_code, response.text)
            out.setdefault(phase[0], []).append(elapsed)


async def sweep(url: str, cutoff: datetime, batch: int) -> tuple[int, int, float]:
    engine = create_engine(url)
    deleted = batches = 0
    started = time.perf_counter()
    try:
        while True:
            n = await purge_batch(engine, cutoff, batch)
            deleted += n
            batches += 1
            if n < batch:
                break
            await asyncio.sleep(0.05)  # (the worker's pause between batches)
    finally:
        await engine.dispose()
    return deleted, batches, time.perf_counter() - started


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--kept", type=int, default=200_000)
    parser.add_argument("--day", type=int, default=20_000)
    parser.add_argument("--batch", type=int, default=200)
    parser.add_argument("--suspended", type=int, default=5_000)
    parser.add_argument("--queued", type=int, default=1_000)
    parser.add_argument("--warm", type=float, default=3.0, help="seconds before the idle phase")
    parser.add_argument("--idle", type=float, default=20.0)
    parser.add_argument("--clients", type=int, default=1)
    server_argument(parser)
    args = parser.parse_args()
    admin, url = fresh_database(args.server)
    logdir = Path(tempfile.mkdtemp(prefix="retention_load_"))
    try:
        now = datetime.now(UTC)
        seconds = seed(url, args, now)
        engine = create_engine(url)
        started = time.perf_counter()
        folded = await fold(engine)
        fold_seconds = time.perf_counter() - started
        await engine.dispose()
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("VACUUM ANALYZE")
        print(
            f"seeded {args.kept + args.day + args.suspended + args.queued} runs"
            f" in {seconds:.0f} s;"
            f" folded {folded} in {fold_seconds:.1f} s ({folded / fold_seconds:.0f}/s)"
        )
        sample = random.sample(range(1, args.kept + 1), min(500, args.kept))
        ids = [f"run_{g:021d}" for g in sample]
        port = free_port()
        env = {**os.environ, "AGENTRUN_DATABASE_URL": url, "AGENTRUN_API_KEYS": KEY}
        api = subprocess.Popen(
            [AGENTRUN, "api", "--port", str(port)],
            env=env,
            stdout=(logdir / "api.log").open("wb"),
            stderr=subprocess.STDOUT,
        )
        try:
            base = f"http://127.0.0.1:{port}"
            async with httpx.AsyncClient(base_url=base) as probe:
                await wait_ready(probe)
            out: dict[str, list[float]] = {}
            phase, stop = ["warm"], asyncio.Event()
            clients = [
                asyncio.create_task(client_loop(base, ids, stop, phase, out))
                for _ in range(args.clients)
            ]
            await asyncio.sleep(args.warm)
            phase[0] = "idle"
            await asyncio.sleep(args.idle)
            phase[0] = "sweep"
            deleted, batches, took = await sweep(url, now - timedelta(days=30), args.batch)
            phase[0] = "after"
            stop.set()
            await asyncio.gather(*clients)
        finally:
            api.terminate()
            api.wait(timeout=10)
        print(
            f"swept {deleted} runs in {batches} batches of {args.batch}: {took:.1f} s"
            f" ({deleted / took:.0f} runs/s)"
        )
        print(f"{'phase':<6} {'requests':>8} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8}")
        for name in ("idle", "sweep"):
            values = out.get(name, [])
            if not values:  # (a sweep shorter than one request)
                print(f"{name:<6} {0:>8} {'-':>8} {'-':>8} {'-':>8}")
                continue
            print(
                f"{name:<6} {len(values):>8} {pct(values, 0.5):>8.1f} {pct(values, 0.95):>8.1f}"
                f" {pct(values, 0.99):>8.1f}"
            )
        if out.get("sweep") and out.get("idle"):
            ratio = pct(out["sweep"], 0.95) / pct(out["idle"], 0.95)
            print(f"p95 during the sweep / idle: {ratio:.2f}")
        else:
            print("p95 during the sweep / idle: - (a phase without a request)")
    finally:
        drop_database(admin, url)


if __name__ == "__main__":
    asyncio.run(main())
