"""Client CPU per statement: the one-pool asyncpg layout beside the previous two pools.

Before (up to bcf8e5d) a process kept SQLAlchemy on psycopg and, for the lifecycle's hot
statements, a separate asyncpg pool; now SQLAlchemy runs on asyncpg and the hot path
borrows raw connections from its pool (app.store.backend.pg_direct). This issues the same statements
sequentially both ways on one connection and reports the client's CPU (process time) and
wall time per statement: a run read on the hot path, a read through SQLAlchemy in
autocommit (the runs counted by status: a run's events, measured here before, moved to the
hot path since), and a small SQLAlchemy transaction (a live-stream watch). The
hot path is also measured on an engine made for PgBouncer (unnamed statements), talking
to the server directly, and on a pool of two, where it keeps its connection between
statements (app.store.backend.pg_direct) instead of borrowing it from the pool for each.

Run: `.venv/bin/python bench/statement_cpu.py [--n 3000] [--repeat 5] [--server URL]`
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import asyncpg  # type: ignore[import-untyped]  # noqa: E402
import orjson  # noqa: E402
import uvloop  # noqa: E402
from sqlalchemy.engine import make_url  # noqa: E402
from sqlalchemy.ext.asyncio import create_async_engine  # noqa: E402

from app.core.scope import Scope  # noqa: E402
from app.service.runs import RunService  # noqa: E402
from app.store.backend.engines import JSON_OPTIONS, create_engine  # noqa: E402
from app.store.backend.pg_direct import SESSION_SETTINGS, Compiled, DirectPool  # noqa: E402
from app.store.runs import RunStore  # noqa: E402
from bench.common import (  # noqa: E402
    drop_database,
    fresh_database,
    server_argument,
)
from tests.conftest import make_settings  # noqa: E402
from tests.helpers import run_body  # noqa: E402


class PreviousDirectPool:
    """The hot path as it was: its own asyncpg pool, session settings at connect."""

    def __init__(self, dsn: str) -> None:
        self.dsn = dsn
        self.pool: Any = None

    async def start(self) -> None:
        async def init(conn: Any) -> None:
            for name in ("json", "jsonb"):
                await conn.set_type_codec(
                    name, encoder=str, decoder=orjson.loads, schema="pg_catalog"
                )

        async def keep(conn: Any) -> None:
            pass

        self.pool = await asyncpg.create_pool(
            self.dsn,
            min_size=1,
            max_size=1,
            init=init,
            reset=keep,
            server_settings=SESSION_SETTINGS,
        )

    async def fetchone(self, compiled: Compiled, values: Any) -> Any:
        async with self.pool.acquire() as conn:
            row = await conn.fetchrow(compiled.sql, *compiled.params(values))
        return tuple(row) if row is not None else None


async def per_statement(n: int, call: Callable[[], Awaitable[Any]]) -> tuple[float, float]:
    """(client CPU µs, wall µs) per call, over n calls after a warm-up."""
    for _ in range(50):
        await call()
    cpu, wall = time.process_time(), time.perf_counter()
    for _ in range(n):
        await call()
    return (
        (time.process_time() - cpu) / n * 1e6,
        (time.perf_counter() - wall) / n * 1e6,
    )


async def measure(url: str, n: int, repeat: int) -> dict[str, list[tuple[float, float]]]:
    new = RunStore(create_engine(url, pool_size=1))
    bouncer = RunStore(create_engine(url, pool_size=1, pgbouncer=True))
    direct, direct_bouncer = DirectPool(new.engine), DirectPool(bouncer.engine)
    # With a second connection free in its pool the hot path keeps the one it took.
    roomy = RunStore(create_engine(url, pool_size=2))
    kept = DirectPool(roomy.engine)
    psycopg_url = make_url(url).set(drivername="postgresql+psycopg")
    old = RunStore(create_async_engine(psycopg_url, pool_size=1, **JSON_OPTIONS))
    previous = PreviousDirectPool(make_url(url).render_as_string(hide_password=False))
    await previous.start()

    view, _ = await RunService(new, make_settings(url)).create_run(run_body())
    run_id = view.record.id
    sent: list[tuple[Compiled, dict[str, Any]]] = []
    fetchone = DirectPool.fetchone

    async def recording(self: DirectPool, compiled: Compiled, values: Any) -> Any:
        sent.append((compiled, dict(values)))
        return await fetchone(self, compiled, values)

    DirectPool.fetchone = recording  # type: ignore[method-assign]
    await new.get(run_id, scope=Scope.ALL)
    DirectPool.fetchone = fetchone  # type: ignore[method-assign]
    get_compiled, get_values = sent[-1]

    paths: dict[str, Callable[[], Awaitable[Any]]] = {
        "hot read, before (own asyncpg pool)": lambda: previous.fetchone(get_compiled, get_values),
        "hot read, now (borrowed from the engine)": lambda: direct.fetchone(
            get_compiled, get_values
        ),
        "hot read, now, kept between statements": lambda: kept.fetchone(get_compiled, get_values),
        "hot read, now, pgbouncer engine (unnamed)": lambda: direct_bouncer.fetchone(
            get_compiled, get_values
        ),
        "SQLAlchemy read, before (psycopg)": lambda: old.count_by_status(scope=Scope.ALL),
        "SQLAlchemy read, now (asyncpg)": lambda: new.count_by_status(scope=Scope.ALL),
        "SQLAlchemy transaction, before (psycopg)": lambda: old.watch("bench", [run_id], 60),
        "SQLAlchemy transaction, now (asyncpg)": lambda: new.watch("bench", [run_id], 60),
    }
    results: dict[str, list[tuple[float, float]]] = {name: [] for name in paths}
    try:
        for _ in range(repeat):  # interleaved, so drift hits every path alike
            for name, call in paths.items():
                results[name].append(await per_statement(n, call))
    finally:
        await previous.pool.close()
        await kept.aclose()
        for store in (new, bouncer, old, roomy):
            await store.aclose()
    return results


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=3000)
    parser.add_argument("--repeat", type=int, default=5)
    server_argument(parser)
    args = parser.parse_args()
    admin, url = fresh_database(args.server)
    try:
        results = uvloop.run(measure(url, args.n, args.repeat))
    finally:
        drop_database(admin, url)
    print(f"{args.n} statements per sample, median (min–max) of {args.repeat} samples")
    print(f"{'path':<44} {'client CPU µs':>22} {'wall µs':>22}")
    for name, samples in results.items():
        cells = []
        for i in (0, 1):
            values = [s[i] for s in samples]
            med, lo, hi = statistics.median(values), min(values), max(values)
            cells.append(f"{med:6.0f} ({lo:4.0f}–{hi:4.0f})")
        print(f"{name:<44} {cells[0]:>22} {cells[1]:>22}")


if __name__ == "__main__":
    main()
