"""Fair share on PostgreSQL: a small tenant queued behind a large one's backlog.

Tenant A queues `--a` runs (5,000), `--workers` `agentrun worker` processes (8 slots each)
start on them; once A's runs finish at a steady rate X (runs/s, from the database's
completion times after the first `--warmup`, `--window` seconds on), tenant B queues `--b`
runs (50). Each run is one scripted model call
of `--delay-ms` and its completion.

The prediction (docs/reference.md, "Priority and fair share"): within a priority the claim
takes one run of each fair key with queued runs in turn (start-time fair queuing), so
while both tenants have a backlog B gets half the claims. B's k-th run is about the 2k-th
claim after B queued, so B's last run finishes after

    T_fair = max(2·n_B / X, s) + d

where d is a run's own duration (claim to completion, median, measured) and s the time
B's creates take (B cannot finish before it is queued). In arrival order (the claim
before revision 0017) it would wait for A's whole backlog: T_fifo = (queued_A + n_B) / X
+ d. Reported: T_B measured (B's first create to its last completion, database clock),
T_fair with X measured before B queued (X0) and while B drained (X1: every completion in
that stretch, A's and B's, over T_B; the creates compete with the workers for the CPU),
T_fifo, B's share of the completions while it drained (the runs A had in flight when B
queued finish in that stretch too), and B's share of the claims from its first claim to
its last (1/2 predicted).

Run: `.venv/bin/python bench/fair_share.py [--a 5000] [--b 50] [--workers 2] [--server ...]`
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import psycopg  # noqa: E402
import uvloop  # noqa: E402

from app.service.runs import RunService  # noqa: E402
from app.service.schemas import RunCreate  # noqa: E402
from app.settings import Settings  # noqa: E402
from app.store.backend.engines import create_engine  # noqa: E402
from app.store.runs import RunStore  # noqa: E402
from bench.common import (  # noqa: E402
    drop_database,
    fresh_database,
    server_argument,
    start_workers,
    stop_workers,
)

DONE = "SELECT count(*) FROM runs WHERE tenant_id = %s AND status = 'completed'"
QUEUED = "SELECT count(*) FROM runs WHERE tenant_id = %s AND status = 'queued'"


async def queue_runs(service: RunService, tenant: str, n: int, delay_ms: int) -> None:
    """`n` runs of `tenant`, created 50 at a time (in creation order per batch)."""
    model = {"provider": "scripted", "name": "echo", "delay_ms": delay_ms}
    body = RunCreate.model_validate({"prompt": f"hello from {tenant}", "model": model})
    for start in range(0, n, 50):
        batch = [service.create_run(body, tenant=tenant) for _ in range(min(50, n - start))]
        await asyncio.gather(*batch)


def scalar(conn: psycopg.Connection[Any], sql: str, *args: Any) -> Any:
    row = conn.execute(sql, args).fetchone()
    assert row is not None
    return row[0]


def finish_rate(conn: psycopg.Connection[Any], skip: int) -> float:
    """A's runs/s from the database's own times: its completions after the first `skip`
    (start-up), from the first of them to the last so far. (Not this process's clock: on a
    loaded machine this process may look late, after A's backlog is gone.)"""
    row = conn.execute(
        "SELECT count(*), extract(epoch FROM max(updated_at) - min(updated_at)) FROM"
        " (SELECT updated_at FROM runs WHERE tenant_id = 'a' AND status = 'completed'"
        "  ORDER BY updated_at OFFSET %s) s",
        (max(0, skip - 1),),
    ).fetchone()
    count, span = (row or (0, None))[0], (row or (0, None))[1]
    if count < 2 or not span:
        raise SystemExit("A finished too few runs to measure a rate: queue more (--a)")
    return (count - 1) / float(span)


async def measure(args: argparse.Namespace, url: str) -> dict[str, float]:
    store = RunStore(create_engine(url, pool_size=8))
    service = RunService(store, Settings(database_url=url))
    logdir = Path("/tmp/agentrun-bench")
    logdir.mkdir(exist_ok=True)
    await queue_runs(service, "a", args.a, args.delay_ms)
    procs = start_workers(url, args.workers, logdir, "fair")
    dsn = url.replace("postgresql+psycopg://", "postgresql://")
    try:
        with psycopg.connect(dsn, autocommit=True) as conn:
            while scalar(conn, DONE, "a") < args.warmup:  # (start-up, first claims)
                await asyncio.sleep(0.1)
            before = scalar(conn, DONE, "a")
            await asyncio.sleep(args.window)
            # (A loaded machine may finish none in the window: wait for one, if any is left.)
            while scalar(conn, DONE, "a") == before < args.a:
                await asyncio.sleep(0.05)
            rate = finish_rate(conn, args.warmup)
            queued_a = scalar(conn, QUEUED, "a")
            await queue_runs(service, "b", args.b, args.delay_ms)
            while scalar(conn, DONE, "b") < args.b:
                await asyncio.sleep(0.05)
            t_b, span = conn.execute(
                "SELECT extract(epoch FROM max(updated_at) - min(created_at)),"
                " extract(epoch FROM max(created_at) - min(created_at)) FROM runs"
                " WHERE tenant_id = 'b'",
            ).fetchone() or (0, 0)
            a_during = scalar(
                conn,
                "SELECT count(*) FROM runs WHERE tenant_id = 'a' AND status = 'completed'"
                " AND updated_at BETWEEN (SELECT min(created_at) FROM runs WHERE tenant_id = 'b')"
                " AND (SELECT max(updated_at) FROM runs WHERE tenant_id = 'b')",
            )
            # Claims, in order, from B's first to its last: B's share of them.
            claims = conn.execute(
                "WITH c AS (SELECT r.tenant_id AS t, e.created_at AS at FROM run_events e"
                " JOIN runs r ON r.id = e.run_id WHERE e.type = 'run.claimed'),"
                " b AS (SELECT min(at) AS lo, max(at) AS hi FROM c WHERE t = 'b')"
                " SELECT count(*) FILTER (WHERE t = 'a'), count(*) FILTER (WHERE t = 'b')"
                " FROM c, b WHERE at BETWEEN b.lo AND b.hi"
            ).fetchone() or (0, 0)
            durations = conn.execute(
                "SELECT extract(epoch FROM r.updated_at - e.created_at) FROM runs r"
                " JOIN run_events e ON e.run_id = r.id AND e.type = 'run.claimed'"
                " WHERE r.tenant_id = 'b'"
            ).fetchall()
    finally:
        stop_workers(procs)
        await store.aclose()
    d = statistics.median(float(row[0]) for row in durations)
    t_b, span = float(t_b), float(span)
    during = (a_during + args.b) / t_b
    return {
        "rate": rate,
        "rate_during": during,
        "queued_a": float(queued_a),
        "t_b": t_b,
        "span": span,
        "d": d,
        "t_fair": max(2 * args.b / rate, span) + d,
        "t_fair_during": max(2 * args.b / during, span) + d,
        "t_fifo": (queued_a + args.b) / rate + d,
        "share": args.b / (a_during + args.b),
        "claim_share": claims[1] / (claims[0] + claims[1]),
    }


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--a", type=int, default=5000, help="tenant A's runs, queued first")
    parser.add_argument("--b", type=int, default=50, help="tenant B's runs, queued after")
    parser.add_argument("--workers", type=int, default=2, help="worker processes, 8 slots each")
    parser.add_argument("--delay-ms", type=int, default=20, help="each model call's duration")
    parser.add_argument("--warmup", type=int, default=300, help="A's runs done before X")
    parser.add_argument("--window", type=float, default=5.0, help="seconds X is measured over")
    server_argument(parser)
    args = parser.parse_args()
    admin, url = fresh_database(args.server)
    try:
        m = await measure(args, url)
    finally:
        drop_database(admin, url)
    print(f"A: {args.a} runs queued first; B: {args.b} queued after; {args.workers} workers x 8")
    print(f"X0 (runs/s finished before B queued)      {m['rate']:8.1f}")
    print(f"X1 (runs/s finished while B drained)      {m['rate_during']:8.1f}")
    print(f"A still queued when B queued              {m['queued_a']:8.0f}")
    print(f"s (B's creates, first to last)            {m['span']:8.3f} s")
    print(f"d (a run's claim to completion, median)   {m['d']:8.3f} s")
    print(f"T_B measured                              {m['t_b']:8.2f} s")
    print(f"T_fair = max(2 n_B / X0, s) + d           {m['t_fair']:8.2f} s")
    print(f"T_fair with X1                            {m['t_fair_during']:8.2f} s")
    print(f"T_fifo = (queued_A + n_B) / X0 + d        {m['t_fifo']:8.2f} s")
    print(f"T_B / T_fair (X0), (X1)                   {m['t_b'] / m['t_fair']:8.2f}"
          f" {m['t_b'] / m['t_fair_during']:.2f}")  # fmt: skip
    print(f"B's share of completions while it drained {m['share']:8.2f}")
    print(f"B's share of claims, its first to last    {m['claim_share']:8.2f} (fair: 0.50)")


if __name__ == "__main__":
    uvloop.run(main())
