"""What the benchmarks share: fresh databases, the seeded finished runs, CPU and WAL
meters, worker processes, and the summaries they print."""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import os
import random
import resource
import secrets
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402
import psycopg  # noqa: E402
from sqlalchemy.engine import make_url  # noqa: E402

from app.core import (  # noqa: E402
    AgentRun,
    AssistantMessage,
    Text,
    ToolCall,
    ToolResult,
    UserMessage,
)
from app.core.lifecycle import RunStatus  # noqa: E402
from app.store.runs import RunStore  # noqa: E402

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
    """(the server's admin DSN, the URL of a new database at the Alembic head): a copy of
    `migrated_template`, the same schema and rows as a migration makes (cheaper: an
    upgrade from nothing costs seconds of CPU)."""
    name = f"agentrun_bench_{secrets.token_hex(4)}"
    admin = make_url(server).set(drivername="postgresql")
    dsn = admin.render_as_string(hide_password=False)
    template = migrated_template(dsn)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template}"')
    return dsn, admin.set(database=name).render_as_string(hide_password=False)


def migrations_key() -> str:
    """The newest revision and a digest of every migration (and the environment that runs
    them): a new or edited migration names a new template."""
    folder = ROOT / "alembic"
    files = sorted([folder / "env.py", *(folder / "versions").glob("*.py")])
    digest = hashlib.sha256(b"".join(f.name.encode() + f.read_bytes() for f in files))
    return f"{files[-1].name[:4]}_{digest.hexdigest()[:10]}"


def migrated_template(admin_dsn: str) -> str:
    """The name of a database upgraded to the head, made once per `migrations_key` under an
    advisory lock (parallel benchmarks and test workers wait for the first), under a
    temporary name renamed when complete: a template that exists is whole. Nothing
    connects to it after, so `CREATE DATABASE … TEMPLATE` may copy it at any time."""
    from app.store.migrate import upgrade_to_head

    name = f"agentrun_bench_template_{migrations_key()}"
    exists = "SELECT 1 FROM pg_database WHERE datname = %s"
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        if conn.execute(exists, (name,)).fetchone():
            return name
        conn.execute("SELECT pg_advisory_lock(hashtext(%s))", (name,))
        try:
            if conn.execute(exists, (name,)).fetchone():
                return name
            building = f"{name}_building"  # (left by a run that died: remade)
            conn.execute(f'DROP DATABASE IF EXISTS "{building}" WITH (FORCE)')
            conn.execute(f'CREATE DATABASE "{building}"')
            url = make_url(admin_dsn).set(database=building)
            upgrade_to_head(url.render_as_string(hide_password=False))
            conn.execute(f'ALTER DATABASE "{building}" RENAME TO "{name}"')
        finally:
            conn.execute("SELECT pg_advisory_unlock(hashtext(%s))", (name,))
    return name


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


def workers_listening(url: str, workers: int, settle: float, timeout: float = 60.0) -> None:
    """Block until `workers` worker processes LISTEN on `url`'s database (started,
    connected, woken to look at the queue: what a fixed sleep used to guess at), then
    `settle` seconds more, so their start-up has spent its CPU before anything is measured
    (callers scale it with the size measured: the full pause only at full size)."""
    from app.limits.rates_sql import FLOW_CHANNEL  # (a worker's last LISTEN: no API listens to it)

    dsn = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
    deadline = time.monotonic() + timeout
    with psycopg.connect(dsn, autocommit=True) as conn:
        while True:
            row = conn.execute(
                "SELECT count(*) FROM pg_stat_activity"
                " WHERE datname = current_database() AND query = %s",
                (f"LISTEN {FLOW_CHANNEL}",),
            ).fetchone()
            if row is not None and row[0] >= workers:
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"{workers} workers did not start listening")
            time.sleep(0.02)
    time.sleep(settle)


def stop_workers(procs: list[subprocess.Popen[bytes]]) -> None:
    for p in procs:
        p.terminate()
    for p in procs:
        p.wait(30)


SEEDED = 10_000


def pct(values: list[float], q: float) -> float:
    """The q-quantile (nearest rank) of a sample."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def wait_ready(client: httpx.AsyncClient, timeout: float = 60.0) -> None:
    """Wait until an API process answers /readyz (a start-up takes seconds on a busy
    machine)."""
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
