"""Lifecycle benchmark on PostgreSQL: the service beside the database's own ceiling.

One lifecycle = create → model call → suspend (one parallel tool round) → submit results
→ model call → completed, with the scripted provider. The client (this process) creates
runs and answers suspended ones through the service layer; 1, 2 and 4 `agentrun worker`
processes do the rest. In the same run, the SQL lifecycle of docs/performance-notes is
issued directly with psycopg (the ceiling), so the ratio holds on any machine.

Run: `.venv/bin/python bench/lifecycle.py [--runs 1000] [--server postgresql://...]`.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import secrets
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402
import psycopg  # noqa: E402
import uvloop  # noqa: E402
from sqlalchemy.engine import make_url  # noqa: E402

from app.core import AgentRun, AssistantMessage, Text, ToolCall, ToolResult, UserMessage  # noqa: E402
from app.core.lifecycle import RunStatus  # noqa: E402
from app.service.runs import RunService  # noqa: E402
from app.settings import Settings  # noqa: E402
from app.store.db import create_engine  # noqa: E402
from app.store.migrate import upgrade_to_head  # noqa: E402
from app.store.records import NewEvent  # noqa: E402
from app.store.runs import RunStore  # noqa: E402
from tests.helpers import results_for, run_body  # noqa: E402

AGENTRUN = str(Path(sys.executable).parent / "agentrun")
STATE = "x" * 2000  # a 2 KB state document for the direct-SQL ceiling


def fresh_database(server: str) -> tuple[str, str]:
    name = f"agentrun_bench_{secrets.token_hex(4)}"
    admin = make_url(server).set(drivername="postgresql")
    dsn = admin.render_as_string(hide_password=False)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return dsn, admin.set(database=name).render_as_string(hide_password=False)


def drop_database(admin_dsn: str, url: str) -> None:
    name = make_url(url).database
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def seed(url: str, rows: int) -> None:
    """≥10k finished runs and fresh statistics, so claim plans are realistic."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            """
            INSERT INTO runs (id, status, state, schema_version, version, available_at,
                              config, metadata, max_turns, created_at, updated_at)
            SELECT 'seed_' || g, 'completed', '{}', 1, 1, now(), '{}', '{}', 1, now(), now()
            FROM generate_series(1, %s) g
            """,
            (rows,),
        )
        conn.execute(
            """
            CREATE TABLE bench_runs (id bigserial PRIMARY KEY, status text NOT NULL,
              state jsonb, worker_id text, attempt int NOT NULL DEFAULT 0,
              tool_results jsonb, updated_at timestamptz)
            """
        )
        conn.execute("CREATE INDEX ON bench_runs (status, id)")
        conn.execute(
            "INSERT INTO bench_runs (status) SELECT 'completed' FROM generate_series(1, %s)",
            (rows,),
        )
        conn.execute("VACUUM ANALYZE")


async def direct_sql(url: str, lifecycles: int, clients: int) -> float:
    """The notes' six-commit lifecycle, issued directly; lifecycles per second."""
    state = f'{{"s": "{STATE}"}}'
    remaining = lifecycles

    async def client() -> None:
        nonlocal remaining
        async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
            while remaining > 0:
                remaining -= 1
                await conn.execute(
                    "INSERT INTO bench_runs (status, state) VALUES ('queued', %s)", (state,)
                )
                for final in ("requires_action", "completed"):
                    cur = await conn.execute(
                        """UPDATE bench_runs SET status='running', worker_id='w',
                             attempt=attempt+1, updated_at=now()
                           WHERE id = (SELECT id FROM bench_runs WHERE status='queued'
                             ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED) RETURNING id"""
                    )
                    row = await cur.fetchone()
                    if row is None:
                        continue
                    await conn.execute(
                        "UPDATE bench_runs SET status=%s, state=%s, worker_id=NULL WHERE id=%s",
                        (final, state, row[0]),
                    )
                    if final == "requires_action":
                        await conn.execute(
                            """UPDATE bench_runs SET status='queued', tool_results=%s
                               WHERE id=%s AND status='requires_action'""",
                            ('{"r": "3"}', row[0]),
                        )

    started = time.perf_counter()
    await asyncio.gather(*[client() for _ in range(clients)])
    return lifecycles / (time.perf_counter() - started)


async def service_run(url: str, lifecycles: int, workers: int, logdir: Path) -> dict[str, float]:
    env = {
        **os.environ,
        "AGENTRUN_DATABASE_URL": url,
        "AGENTRUN_LEASE_SECONDS": "30",
    }
    procs = [
        subprocess.Popen(
            [AGENTRUN, "worker", "--concurrency", "8"],
            env=env,
            stdout=(logdir / f"w{workers}_{i}.log").open("wb"),
            stderr=subprocess.STDOUT,
        )
        for i in range(workers)
    ]
    engine = create_engine(url, pool_size=16)
    service = RunService(RunStore(engine), Settings(database_url=url))
    await asyncio.sleep(1.5)  # workers connect and LISTEN
    body = run_body()
    ids: list[str] = []
    done = 0
    since = datetime.now(UTC)
    started = time.perf_counter()

    async def creator() -> None:
        while len(ids) < lifecycles:
            ids.append("")
            view, _ = await service.create_run(body)
            ids[ids.index("")] = view.record.id

    async def executor() -> None:
        nonlocal done
        while done < lifecycles:
            waiting, _ = await service.list_runs(
                status=RunStatus.REQUIRES_ACTION, limit=200, cursor=None
            )
            await asyncio.gather(
                *[service.submit_tool_results(results_for(v), run_id=v.record.id) for v in waiting]
            )
            done = await completed_since(service.store, since)
            if not waiting:
                await asyncio.sleep(0.01)

    children_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    self_before = resource.getrusage(resource.RUSAGE_SELF)
    await asyncio.gather(*[creator() for _ in range(4)], executor())
    elapsed = time.perf_counter() - started
    self_after = resource.getrusage(resource.RUSAGE_SELF)
    for p in procs:
        p.terminate()
    for p in procs:
        p.wait(30)
    children_after = resource.getrusage(resource.RUSAGE_CHILDREN)
    worker_cpu = (children_after.ru_utime + children_after.ru_stime) - (
        children_before.ru_utime + children_before.ru_stime
    )
    client_cpu = (self_after.ru_utime + self_after.ru_stime) - (
        self_before.ru_utime + self_before.ru_stime
    )
    # Resume latency at low load: results committed (run.resumed) → claimed again for the
    # next model call, one run at a time, so no queue stands in between.
    procs = [
        subprocess.Popen(
            [AGENTRUN, "worker", "--concurrency", "8"],
            env=env,
            stdout=(logdir / f"latency{workers}_{i}.log").open("wb"),
            stderr=subprocess.STDOUT,
        )
        for i in range(workers)
    ]
    await asyncio.sleep(1.5)
    latencies = []
    for _ in range(60):
        view, _ = await service.create_run(body)
        while (await service.get_run(view.record.id)).record.status != RunStatus.REQUIRES_ACTION:
            await asyncio.sleep(0.002)
        suspended = await service.get_run(view.record.id)
        await service.submit_tool_results(results_for(suspended), run_id=view.record.id)
        while (await service.get_run(view.record.id)).record.status != RunStatus.COMPLETED:
            await asyncio.sleep(0.002)
        events = await service.store.events(view.record.id)
        resumed = [e.created_at for e in events if e.type == "run.resumed"]
        claims = [e.created_at for e in events if e.type == "run.claimed"]
        latencies.append((claims[1] - resumed[0]).total_seconds() * 1000)
    for p in procs:
        p.terminate()
    for p in procs:
        p.wait(30)
    async with engine.begin() as conn:
        await conn.exec_driver_sql("DELETE FROM runs WHERE id NOT LIKE 'seed_%%'")
    await service.store.aclose()
    return {
        "worker_cpu_ms": worker_cpu * 1000 / lifecycles,
        "client_cpu_ms": client_cpu * 1000 / lifecycles,
        "per_second": lifecycles / elapsed,
        "resume_p50_ms": statistics.median(latencies) if latencies else float("nan"),
    }


async def suspend_cost(url: str) -> list[tuple[int, float, int]]:
    """Serialize + write one suspended run, by history length (ms per suspend)."""
    engine = create_engine(url)
    store = RunStore(engine)
    service = RunService(store, Settings(database_url=url))
    out = []
    for n in (10, 100, 1000):
        history: list[AssistantMessage | UserMessage] = []
        for i in range(n // 2):
            call = ToolCall.from_wire(f"c{i}", "add", {"a": i, "b": i})
            history.append(AssistantMessage((Text(f"step {i}"), call), f"m{i}"))
            history.append(UserMessage([ToolResult(call.id, "add", (Text(str(2 * i)),))]))
        run = AgentRun("go", max_turns=3, history=history)
        view, _ = await service.create_run(run_body())
        times = []
        for _ in range(30):
            now = datetime.now(UTC)
            await store.transition(
                view.record.id,
                from_statuses=[RunStatus.QUEUED],
                values={"status": "running"},
                events=[],
                now=now,
            )
            t0 = time.perf_counter()
            state = run.to_json()
            await store.transition(
                view.record.id,
                from_statuses=[RunStatus.RUNNING],
                values={"status": "queued", "state": state, "expires_at": now + timedelta(1)},
                events=[NewEvent("run.requires_action", {})],
                now=now,
            )
            times.append((time.perf_counter() - t0) * 1000)
        out.append((n, statistics.median(times), len(state)))
    await store.aclose()
    return out


SEEDED = 10_000


def pct(values: list[float], q: float) -> float:
    """The q-quantile (nearest rank) of a sample."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def wait_ready(client: httpx.AsyncClient, timeout: float = 15.0) -> None:
    """Wait until an API process answers /readyz."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if (await client.get("/readyz")).status_code == 200:
                return
        except httpx.TransportError:
            pass
        await asyncio.sleep(0.05)
    raise RuntimeError("the API did not become ready")


async def completed_since(store: RunStore, since: datetime) -> int:
    import sqlalchemy as sa

    from app.store.schema import runs

    stmt = sa.select(sa.func.count()).where(
        runs.c.created_at >= since, runs.c.status == RunStatus.COMPLETED.value
    )
    async with store.engine.connect() as conn:
        return int((await conn.execute(stmt)).scalar_one())


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument(
        "--server",
        default=os.environ.get(
            "AGENTRUN_TEST_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/postgres"
        ),
    )
    parser.add_argument("--workers", default="1,2,4")
    args = parser.parse_args()
    admin, url = fresh_database(args.server)
    logdir = Path(os.environ.get("TMPDIR", "/tmp")) / "agentrun-bench"
    logdir.mkdir(exist_ok=True)
    try:
        upgrade_to_head(url)
        seed(url, SEEDED)
        ceiling = await direct_sql(url, args.runs, clients=8)
        print(
            "| configuration | lifecycles/s | % of direct SQL | resume p50 "
            "| worker CPU / lifecycle | client CPU / lifecycle |"
        )
        print("|---|---|---|---|---|---|")
        print(f"| direct SQL (6 commits, 8 clients) | {ceiling:.0f} | 100 % | | | |")
        for workers in [int(w) for w in args.workers.split(",")]:
            result = await service_run(url, args.runs, workers, logdir)
            print(
                f"| service, {workers} worker process(es) × 8 | {result['per_second']:.0f} | "
                f"{100 * result['per_second'] / ceiling:.0f} % | "
                f"{result['resume_p50_ms']:.1f} ms | {result['worker_cpu_ms']:.1f} ms | "
                f"{result['client_cpu_ms']:.1f} ms |"
            )
        print()
        print("| history messages | suspend (serialize + write) | state bytes |")
        print("|---|---|---|")
        for n, ms, size in await suspend_cost(url):
            print(f"| {n} | {ms:.2f} ms | {size} |")
    finally:
        drop_database(admin, url)


if __name__ == "__main__":
    uvloop.run(main())
