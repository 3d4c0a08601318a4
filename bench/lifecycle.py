"""Lifecycle benchmark on PostgreSQL: the service beside the database's own ceiling.

One lifecycle = create → model call → suspend (one parallel tool round) → submit results
→ model call → completed, with the scripted provider. The client (this process) creates
runs and answers suspended ones through the service layer; 1, 2 and 4 `agentrun worker`
processes do the rest. In the same run, the SQL lifecycle of the performance notes is
issued directly with psycopg (the ceiling), so the ratio holds on any machine. Each
configuration is sampled `--repeat` times (median and range); besides throughput it
reports CPU per lifecycle of the database, the workers and the client, and WAL bytes per
lifecycle (counters that barely depend on the machine: good regression guards).

Run: `.venv/bin/python bench/lifecycle.py [--runs 2000] [--repeat 3] [--server postgresql://...]`
(`--service-only --workers 2`: the service rows alone; with `AGENTRUN_TRACING=true` and
`OTEL_EXPORTER_OTLP_ENDPOINT` set, traced).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import resource
import secrets
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402
import psycopg  # noqa: E402
import uvloop  # noqa: E402
from sqlalchemy.engine import make_url  # noqa: E402

from app import tracing  # noqa: E402
from app.core import (  # noqa: E402
    AgentRun,
    AssistantMessage,
    CallTools,
    ModelTurn,
    Text,
    ToolCall,
    ToolResult,
    Usage,
    UserMessage,
    stored,
)
from app.core.lifecycle import RunStatus  # noqa: E402
from app.core.serde import message_to_dict  # noqa: E402
from app.service.runs import RunService, RunView  # noqa: E402
from app.settings import Settings  # noqa: E402
from app.store import changes  # noqa: E402
from app.store.backend.direct import Compiled, DirectPool  # noqa: E402
from app.store.backend.engines import create_engine  # noqa: E402
from app.store.migrate import upgrade_to_head  # noqa: E402
from app.store.records import NewToolCall  # noqa: E402
from app.store.runs import RunStore  # noqa: E402
from tests.helpers import drive_once, results_for, run_body  # noqa: E402

AGENTRUN = str(Path(sys.executable).parent / "agentrun")


def server_argument(parser: argparse.ArgumentParser) -> None:
    """`--server`: the PostgreSQL server whose fresh databases the benchmark uses (the
    tests' AGENTRUN_TEST_DATABASE_URL, else the local one)."""
    parser.add_argument(
        "--server",
        default=os.environ.get(
            "AGENTRUN_TEST_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/postgres"
        ),
    )


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
    created = datetime.now(UTC)  # (one creation time in both tables, as the service writes)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            """
            INSERT INTO runs (id, status, state, schema_version, version, available_at,
                              max_turns, created_at, updated_at)
            SELECT 'seed_' || g, 'completed', '{}', 1, 1, %s, 1, %s, %s
            FROM generate_series(1, %s) g
            """,
            (created, created, created, rows),
        )
        conn.execute(
            """
            INSERT INTO run_configs (run_id, config, metadata, created_at)
            SELECT 'seed_' || g, '{}', '{}', %s FROM generate_series(1, %s) g
            """,
            (created, rows),
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


def process_cpu(stat: Path) -> tuple[str, float] | None:
    """(command name, CPU seconds used so far) of one process, from its /proc stat file."""
    try:
        name, _, rest = stat.read_text().partition(") ")
    except OSError:
        return None
    fields = rest.split()
    return name, (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def postgres_cpu() -> dict[int, float]:
    """CPU seconds used so far by each of this machine's PostgreSQL processes (Linux
    /proc)."""
    out = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        used = process_cpu(stat)
        if used is not None and used[0].endswith("(postgres"):
            out[int(stat.parent.name)] = used[1]
    return out


def workers_cpu(procs: list[subprocess.Popen[bytes]]) -> float:
    """CPU seconds the worker processes have used so far (start-up included, so read it
    at both ends of the measured stretch)."""
    return sum((process_cpu(Path(f"/proc/{p.pid}/stat")) or ("", 0.0))[1] for p in procs)


def postgres_cpu_since(before: dict[int, float]) -> float:
    """Database CPU since `before`: processes that started since count whole; those that
    exited meanwhile (an autovacuum worker, say) take their share with them, so this is
    a slight undercount, never a negative one."""
    return sum(t - before.get(pid, 0.0) for pid, t in postgres_cpu().items())


def wal_position(url: str) -> int:
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute("SELECT pg_current_wal_lsn() - '0/0'::pg_lsn").fetchone()
    assert row is not None
    return int(row[0])


def own_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


class Meter:
    """Wall time, database CPU, WAL bytes and this process's CPU from its creation on."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.wal = wal_position(url)
        self.db = postgres_cpu()
        self.own = own_cpu()
        self.started = time.perf_counter()

    def stop(self, lifecycles: int) -> dict[str, float]:
        """Per-lifecycle figures, taken before any client disconnects."""
        elapsed = time.perf_counter() - self.started
        return {
            "per_second": lifecycles / elapsed,
            "db_cpu_ms": postgres_cpu_since(self.db) * 1000 / lifecycles,
            "client_cpu_ms": (own_cpu() - self.own) * 1000 / lifecycles,
            "wal_kb": (wal_position(self.url) - self.wal) / 1024 / lifecycles,
        }


async def direct_sql(url: str, lifecycles: int, clients: int) -> dict[str, float]:
    """The notes' six-commit lifecycle, issued directly with psycopg; per-lifecycle
    figures (every lifecycle counted has reached `completed`)."""
    # A real serialized run as the payload (10 messages, ≈ 2.3 kB, what the service's
    # suspended runs hold), not a string that compresses to nothing.
    state = run_with_history(10).to_json()
    remaining = lifecycles
    conns = [await psycopg.AsyncConnection.connect(url, autocommit=True) for _ in range(clients)]

    async def client(conn: psycopg.AsyncConnection[Any]) -> None:
        nonlocal remaining
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

    meter = Meter(url)
    await asyncio.gather(*[client(conn) for conn in conns])
    result = meter.stop(lifecycles)
    for conn in conns:
        await conn.close()
    return result


Statement = tuple[Compiled, dict[str, Any]]


async def record_statements(service: RunService) -> dict[str, Statement]:
    """The service's own statements for one lifecycle, as its direct pool sends them
    (text and values), by role: one run driven in this process, its statements recorded."""
    sent: list[tuple[str, Compiled, dict[str, Any]]] = []
    fetchone, fetchall = DirectPool.fetchone, DirectPool.fetchall

    async def one(self: DirectPool, compiled: Compiled, values: Any) -> Any:
        sent.append(("one", compiled, dict(values)))
        return await fetchone(self, compiled, values)

    async def many(self: DirectPool, compiled: Compiled, values: Any) -> Any:
        sent.append(("many", compiled, dict(values)))
        return await fetchall(self, compiled, values)

    DirectPool.fetchone, DirectPool.fetchall = one, many  # type: ignore[method-assign]
    try:
        view, _ = await service.create_run(run_body())
        await drive_once(service.store, service.settings)
        suspended = await service.get_run(view.record.id)
        await service.submit_tool_results(results_for(suspended), run_id=view.record.id)
        await drive_once(service.store, service.settings)
        await service.store.flush_wakeups()
    finally:
        DirectPool.fetchone, DirectPool.fetchall = fetchone, fetchall  # type: ignore[method-assign]
    text = [(kind, " ".join(c.sql.split()), c, v) for kind, c, v in sent]
    writes = [(c, v) for _, sql, c, v in text if sql.startswith("WITH changed AS (UPDATE")]
    claims = [(c, v) for kind, sql, c, v in text if kind == "many" and "SKIP LOCKED" in sql]
    moves = [w for w in writes if "SKIP LOCKED" not in w[0].sql]
    (create,) = [(c, v) for _, sql, c, v in text if "INSERT INTO runs " in sql]
    (read,) = [(c, v) for _, sql, c, v in text if "jsonb_agg" in sql]
    suspend, submit, complete = moves
    return {
        "create": create,
        "claim": claims[0],
        "suspend": suspend,
        "read": read,
        "submit": submit,
        "complete": complete,
    }


async def own_statements(
    url: str, script: dict[str, Statement], lifecycles: int, clients: int
) -> dict[str, float]:
    """The service's own statements (recorded by `record_statements`) issued directly on a
    direct pool by `clients` concurrent clients: what the database does with this work
    when no Python service runs around it. Each client creates a run, then claims whatever
    is due and takes it one step: a new run suspends (its results are read and written at
    once), a resumed one completes."""
    engine = create_engine(url, pool_size=clients)
    pool = DirectPool(engine)
    target = created = completed = 0

    def statement(role: str, **values: Any) -> tuple[Compiled, dict[str, Any]]:
        compiled, recorded = script[role]
        if recorded.get("v_callback_token_hash"):  # unique per run
            values.setdefault("v_callback_token_hash", secrets.token_hex(32))
        now = datetime.now(UTC)  # as recorded, a resumed run would be due in the past
        times = {k: now for k in ("p_now", "v_available_at", "v_updated_at") if k in recorded}
        return compiled, {**recorded, **times, **values}

    async def write(role: str, **values: Any) -> Any:
        row = await pool.fetchone(*statement(role, **values))
        if row is None or row["id"] is None:
            raise RuntimeError(f"{role} was refused: the replay lost track of its run")
        return row

    async def client() -> None:
        nonlocal created, completed
        progress = time.monotonic()
        while completed < target:
            if created < target:
                created += 1
                await write("create", v_id=f"run_{secrets.token_hex(10)}")
            claimed = await pool.fetchall(*statement("claim"))
            if not claimed:
                if time.monotonic() - progress > 30:
                    raise RuntimeError("no run came due for 30 s: the replay is stuck")
                await asyncio.sleep(0.001)
                continue
            progress = time.monotonic()
            run_id, held = claimed[0]["id"], claimed[0]["version"]
            if claimed[0]["turn"] == 0:
                await write("suspend", p_id=run_id, p_version=held)
                row = await pool.fetchone(*statement("read", p_key=run_id))
                await write("submit", p_id=run_id, p_version=row["version"])
            else:
                await write("complete", p_id=run_id, p_version=held)
                completed += 1

    async def batch(n: int) -> None:
        nonlocal target, created, completed
        target, created, completed = n, 0, 0
        await asyncio.gather(*[client() for _ in range(clients)])

    await batch(lifecycles // 4)  # connect, warm up
    meter = Meter(url)
    await batch(lifecycles)
    result = meter.stop(completed)
    await pool.aclose()
    await engine.dispose()
    return result


#: Workers that sweep finished runs as soon as they are a second old, every second: the
#: retention sweep at its busiest, deleting while the lifecycle runs.
SWEEPING = {
    "AGENTRUN_RETENTION_DAYS": str(1 / 86400),
    "AGENTRUN_RETENTION_INTERVAL": "1",
    "AGENTRUN_RETENTION_BATCH": "200",
}


def start_workers(
    url: str, workers: int, logdir: Path, label: str, extra_env: dict[str, str] | None = None
) -> list[subprocess.Popen[bytes]]:
    env = {
        **os.environ,
        "AGENTRUN_DATABASE_URL": url,
        "AGENTRUN_LEASE_SECONDS": "30",
        **(extra_env or {}),
    }
    return [
        subprocess.Popen(
            [AGENTRUN, "worker", "--concurrency", "8"],
            env=env,
            stdout=(logdir / f"{label}_{i}.log").open("wb"),
            stderr=subprocess.STDOUT,
        )
        for i in range(workers)
    ]


def stop_workers(procs: list[subprocess.Popen[bytes]]) -> None:
    for p in procs:
        p.terminate()
    for p in procs:
        p.wait(30)


async def service_run(
    service: RunService,
    lifecycles: int,
    workers: int,
    logdir: Path,
    extra_env: dict[str, str] | None = None,
) -> dict[str, float]:
    """Closed loop: the client creates runs and answers suspended ones through the
    service layer while `workers` processes drive them."""
    url = service.settings.database_url
    sweeping = bool(extra_env) and "AGENTRUN_RETENTION_DAYS" in (extra_env or {})
    procs = start_workers(url, workers, logdir, f"w{workers}", extra_env)
    await asyncio.sleep(1.5)  # workers connect and LISTEN
    body = run_body()
    created = 0
    done = 0
    since = datetime.now(UTC)
    answering = asyncio.Semaphore(16)  # the client's pool size

    async def creator() -> None:
        nonlocal created
        while created < lifecycles:
            created += 1
            await service.create_run(body)

    async def answer(view: RunView) -> None:
        async with answering:
            await service.submit_tool_results(results_for(view), run_id=view.record.id)

    async def executor() -> None:
        nonlocal done
        while done < lifecycles:
            waiting, _ = await service.list_runs(
                status=RunStatus.REQUIRES_ACTION, limit=200, cursor=None
            )
            await asyncio.gather(*[answer(v) for v in waiting])
            if not waiting:  # count completions only when there is nothing to answer
                if sweeping:  # finished runs vanish: count what is no longer open (this
                    # counts up to 4 creates still in flight as done: < 0.5 % of a sample)
                    done = created - await open_since(service.store, since)
                else:
                    done = await completed_since(service.store, since)
                await asyncio.sleep(0.01)

    workers_before = workers_cpu(procs)
    meter = Meter(url)
    await asyncio.gather(*[creator() for _ in range(4)], executor())
    result = meter.stop(lifecycles)
    result["worker_cpu_ms"] = (workers_cpu(procs) - workers_before) * 1000 / lifecycles
    stop_workers(procs)
    return result


async def resume_latency(service: RunService, workers: int, logdir: Path) -> float:
    """Results committed (run.resumed) → claimed again for the next model call, p50 in
    ms, at low load: one run at a time, so no queue stands in between."""
    procs = start_workers(service.settings.database_url, workers, logdir, f"latency{workers}")
    await asyncio.sleep(1.5)
    body = run_body()
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
    stop_workers(procs)
    return statistics.median(latencies)


WORDS = [
    "the",
    "file",
    "contains",
    "a",
    "function",
    "that",
    "reads",
    "each",
    "row",
    "of",
    "the",
    "table",
    "and",
    "returns",
    "the",
    "total",
    "amount",
    "for",
    "every",
    "account",
    "listed",
    "in",
    "the",
    "report",
    "after",
    "applying",
    "the",
    "discount",
    "rules",
    "which",
    "depend",
    "on",
    "the",
    "customer",
    "region",
    "currency",
    "and",
    "the",
    "date",
    "of",
    "the",
    "last",
    "payment",
    "recorded",
    "by",
    "system",
    "when",
    "an",
    "error",
    "occurs",
    "it",
    "logs",
    "message",
    "retries",
    "request",
    "later",
]


def prose(seed: int, words: int = 60) -> str:
    """Text about as compressible as a real transcript's (shuffled English words, digits)."""
    rng = random.Random(seed)
    return " ".join(
        rng.choice(WORDS) if rng.random() > 0.1 else str(rng.randrange(10**6)) for _ in range(words)
    )


def run_with_history(n: int, *, long: bool = False) -> AgentRun:
    """A run whose history holds `n` messages (tool rounds of the `add` tool); `long`:
    each message a paragraph of `prose` (else a few words, the ceiling's 2.3 kB run)."""
    history: list[AssistantMessage | UserMessage] = []
    for i in range(n // 2):
        call = ToolCall.from_wire(f"c{i}", "add", {"a": i, "b": i})
        said = prose(2 * i) if long else f"step {i}"
        got = prose(2 * i + 1) if long else str(2 * i)
        history.append(AssistantMessage((Text(said), call), f"m{i}"))
        history.append(UserMessage([ToolResult(call.id, "add", (Text(got),))]))
    return AgentRun("go", max_turns=10_000, history=history)


ROUND_SIZES = (10, 100, 1000)


async def tool_round_cost(url: str, rounds: int = 60) -> list[tuple[int, float, float, float, int]]:
    """A tool round of a run whose conversation holds n messages, as the worker and the
    service make it: claim (with the log), load, the model's answer, suspend (snapshot +
    write: timed), the results submitted (resumed). The three runs take turns, so the
    machine's drift falls on each alike. Per n: suspend ms (median), of which the
    snapshot (µs, median), WAL per round (kB, mean), control document bytes."""
    engine = create_engine(url)
    store = RunStore(engine)
    service = RunService(store, Settings(database_url=url))
    ids = {}
    for n in ROUND_SIZES:
        history = [message_to_dict(m) for m in run_with_history(n, long=True).full_history()]
        view, _ = await service.create_run(run_body(history=history, max_turns=1000))
        ids[n] = view.record.id
    times: dict[int, list[float]] = {n: [] for n in ROUND_SIZES}
    snaps: dict[int, list[float]] = {n: [] for n in ROUND_SIZES}
    wal: dict[int, list[float]] = {n: [] for n in ROUND_SIZES}
    size: dict[int, int] = {}
    for r in range(rounds):
        for n in ROUND_SIZES:
            start = wal_position(url)
            now = datetime.now(UTC)
            claimed, _ = await store.apply(
                ids[n], changes.claim("bench", now + timedelta(seconds=60)), now
            )
            record = await store.get(ids[n], with_log=True)
            assert claimed is not None and record is not None
            loaded = stored.load(record.state, record.log)
            run = loaded.run
            run.next_step()
            call = ToolCall.from_wire(f"r{r}", "add", {"a": r, "b": r})
            answer = ModelTurn(
                choice=(Text(prose(10_000 + r)), call),
                usage=Usage(input_tokens=100, output_tokens=20, total_tokens=120),
                executable_tool_names=frozenset({"add"}),
                allowed_tool_names=frozenset({"add"}),
                message_id=f"msg{r}",
            )
            run.model_response(answer)
            assert isinstance(run.next_step(), CallTools)
            t0 = time.perf_counter()
            snapshot = stored.snapshot(loaded)
            t1 = time.perf_counter()
            pending = [NewToolCall(0, call.id, call.name, call.arguments)]
            change = changes.suspend_for_tools(
                record.version,
                snapshot,
                run.turn(),
                pending,
                f"h{r}{n}",
                now + timedelta(days=1),
                [],
                None,
                {"round": run.turn()},
                now,
            )
            suspended, _ = await store.apply(record.id, change, now)
            times[n].append((time.perf_counter() - t0) * 1000)
            snaps[n].append((t1 - t0) * 1e6)
            assert suspended is not None
            view = await service.get_run(record.id)
            await service.submit_tool_results(results_for(view), run_id=record.id)
            wal[n].append((wal_position(url) - start) / 1024)
            size[n] = len(snapshot.control)
    await store.aclose()
    return [
        (
            n,
            statistics.median(times[n]),
            statistics.median(snaps[n]),
            statistics.mean(wal[n]),
            size[n],
        )
        for n in ROUND_SIZES
    ]


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


async def count_since(store: RunStore, since: datetime, condition: Any) -> int:
    """Runs created since `since` (through the creation index) that meet `condition`."""
    import sqlalchemy as sa

    from app.store.schema import run_configs, runs

    stmt = (
        sa.select(sa.func.count())
        .select_from(runs.join(run_configs, run_configs.c.run_id == runs.c.id))
        .where(run_configs.c.created_at >= since, condition)
    )
    async with store.engine.connect() as conn:
        return int((await conn.execute(stmt)).scalar_one())


async def completed_since(store: RunStore, since: datetime) -> int:
    from app.store.schema import runs

    return await count_since(store, since, runs.c.status == RunStatus.COMPLETED.value)


async def open_since(store: RunStore, since: datetime) -> int:
    from app.core.lifecycle import TERMINAL
    from app.store.schema import runs

    return await count_since(store, since, runs.c.status.not_in([s.value for s in TERMINAL]))


def summary(samples: list[dict[str, float]], key: str, fmt: str = ".0f") -> str:
    """Median (and range, when repeated) of one figure."""
    values = sorted(sample[key] for sample in samples)
    median = statistics.median(values)
    if len(values) == 1:
        return f"{median:{fmt}}"
    return f"{median:{fmt}} ({values[0]:{fmt}}–{values[-1]:{fmt}})"


async def service_rows(service: RunService, args: argparse.Namespace, logdir: Path) -> None:
    """`--service-only`: the service rows alone (e.g. one build against another)."""
    print(f"{args.runs} lifecycles per sample, median (range) of {args.repeat} samples")
    print()
    print("| configuration | lifecycles/s | database CPU | worker CPU | client CPU | WAL |")
    print("|---|---|---|---|---|---|")
    configurations = [(int(w), None) for w in args.workers.split(",")]
    if args.retention:
        configurations.append((2, SWEEPING))
    for workers, env in configurations:
        await service_run(service, args.runs // 4, workers, logdir, env)  # warm-up
        samples = [
            await service_run(service, args.runs, workers, logdir, env) for _ in range(args.repeat)
        ]
        label = f"service, {workers} worker process(es) × 8" + (
            ", retention sweeping every second" if env else ""
        )
        print(
            f"| {label} | {summary(samples, 'per_second')} "
            f"| {summary(samples, 'db_cpu_ms', '.1f')} ms "
            f"| {summary(samples, 'worker_cpu_ms', '.1f')} ms "
            f"| {summary(samples, 'client_cpu_ms', '.1f')} ms "
            f"| {summary(samples, 'wal_kb', '.1f')} kB |"
        )


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=3)
    server_argument(parser)
    parser.add_argument("--workers", default="1,2,4")
    parser.add_argument(
        "--service-only",
        action="store_true",
        help="only the service rows: no reference rows, resume latency or suspend cost",
    )
    parser.add_argument(
        "--retention",
        action="store_true",
        help="add a row with the workers' retention sweep deleting finished runs throughout",
    )
    args = parser.parse_args()
    admin, url = fresh_database(args.server)
    logdir = Path(os.environ.get("TMPDIR", "/tmp")) / "agentrun-bench"
    logdir.mkdir(exist_ok=True)
    try:
        upgrade_to_head(url)
        seed(url, SEEDED)
        store = RunStore(create_engine(url, pool_size=16))
        settings = Settings(database_url=url)
        # Tracing as the environment asks (AGENTRUN_TRACING, OTEL_*): this process creates
        # and answers runs; the workers it starts read the same environment.
        tracing.configure(settings, "bench")
        service = RunService(store, settings)
        if args.service_only:
            await service_rows(service, args, logdir)
            await store.aclose()
            return
        await direct_sql(url, args.runs // 4, clients=8)  # warm-up
        ceiling = [await direct_sql(url, args.runs, clients=8) for _ in range(args.repeat)]
        rows = [("direct SQL (6 commits, 8 clients)", ceiling, None)]
        script = await record_statements(service)
        own = [await own_statements(url, script, args.runs, 8) for _ in range(args.repeat)]
        rows.append(("the service's own statements, issued directly (8 clients)", own, None))
        for workers in [int(w) for w in args.workers.split(",")]:
            samples = [
                await service_run(service, args.runs, workers, logdir) for _ in range(args.repeat)
            ]
            rows.append((f"service, {workers} worker process(es) × 8", samples, workers))
        if args.retention:  # last: the sweep deletes the seeded runs too
            samples = [
                await service_run(service, args.runs, 2, logdir, SWEEPING)
                for _ in range(args.repeat)
            ]
            rows.append(("service, 2 × 8, retention sweeping every second", samples, 2))
        top = statistics.median(sample["per_second"] for sample in ceiling)
        print(
            f"{args.runs} lifecycles per sample, median (range) of {args.repeat} samples; "
            "CPU and WAL per lifecycle"
        )
        print()
        print(
            "| configuration | lifecycles/s | % of direct SQL | % of own statements "
            "| resume p50 | database CPU | worker CPU | client CPU | WAL |"
        )
        print("|---|---|---|---|---|---|---|---|---|")
        own_top = statistics.median(sample["per_second"] for sample in own)
        for label, samples, workers in rows:
            rate = statistics.median(sample["per_second"] for sample in samples)
            of_own = f"{100 * rate / own_top:.0f} %" if workers else ""
            latency = f"{await resume_latency(service, workers, logdir):.1f} ms" if workers else ""
            worker_cpu = f"{summary(samples, 'worker_cpu_ms', '.1f')} ms" if workers else ""
            print(
                f"| {label} | {summary(samples, 'per_second')} | {100 * rate / top:.0f} % "
                f"| {of_own} | {latency} | {summary(samples, 'db_cpu_ms', '.1f')} ms "
                f"| {worker_cpu} "
                f"| {summary(samples, 'client_cpu_ms', '.1f')} ms "
                f"| {summary(samples, 'wal_kb', '.1f')} kB |"
            )
        await store.aclose()
        print()
        print(
            "| history messages | suspend (snapshot + write) | of which snapshot "
            "| WAL per tool round | control document |"
        )
        print("|---|---|---|---|---|")
        for n, ms, us, kb, size in await tool_round_cost(url):
            print(f"| {n} | {ms:.2f} ms | {us:.0f} µs | {kb:.1f} kB | {size} B |")
    finally:
        drop_database(admin, url)


if __name__ == "__main__":
    uvloop.run(main())
