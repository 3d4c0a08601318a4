"""WAL per lifecycle by relation: which table or index each byte of a lifecycle's WAL
goes to (the figures in docs/benchmarks.md).

Drives `--runs` lifecycles one at a time in this process (create → the worker's drive →
results submitted → the worker's drive to completion, as `bench/lifecycle.py` does, with no
other traffic), then reads the WAL they wrote with `pg_walinspect` (PostgreSQL 15+, a
contrib extension; the benchmark creates it in its own database) and sums the records by
the relation they touch and their kind. Full-page images are left out of the sums (they
depend on when the last checkpoint was, not on the lifecycle) and reported apart.

Run: `.venv/bin/python bench/wal_by_relation.py [--runs 20] [--server postgresql://...]`
"""

from __future__ import annotations

import argparse
import asyncio
import re
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import psycopg  # noqa: E402

from app.core.scope import Scope  # noqa: E402
from app.service.runs import RunService  # noqa: E402
from app.settings import Settings  # noqa: E402
from app.store.backend.engines import create_engine  # noqa: E402
from app.store.runs import RunStore  # noqa: E402
from bench.common import (  # noqa: E402
    drop_database,
    fresh_database,
    server_argument,
)
from tests.helpers import drive_once, results_for, run_body  # noqa: E402

BLOCK = re.compile(r"rel \d+/\d+/(\d+)")


async def lifecycle(service: RunService) -> str:
    view, _ = await service.create_run(run_body())
    await drive_once(service.store, service.settings)
    suspended = await service.get_run(view.record.id, scope=Scope.ALL)
    await service.submit_tool_results(
        results_for(suspended), run_id=view.record.id, scope=Scope.ALL
    )
    await drive_once(service.store, service.settings)
    return view.record.id


async def measure(url: str, runs: int) -> None:
    dsn = url
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS pg_walinspect")
    store = RunStore(create_engine(url))
    service = RunService(store, Settings(database_url=url))
    try:
        for _ in range(3):  # statements prepared, pages in place
            await lifecycle(service)
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("CHECKPOINT")
            start = conn.execute("SELECT pg_current_wal_insert_lsn()").fetchone()
        for _ in range(runs):
            await lifecycle(service)
        await store.flush_wakeups()
    finally:
        await store.aclose()
    with psycopg.connect(dsn, autocommit=True) as conn:
        end = conn.execute("SELECT pg_current_wal_insert_lsn()").fetchone()
        assert start is not None and end is not None
        # Records are read up to the flushed WAL only: another database's unflushed
        # writes (asynchronous commits) may lie before `end`; the WAL writer flushes them.
        flushed = "SELECT pg_current_wal_flush_lsn() >= %s"
        deadline = time.monotonic() + 30
        while not conn.execute(flushed, (end[0],)).fetchone()[0]:  # type: ignore[index]
            if time.monotonic() > deadline:
                raise RuntimeError("the WAL up to the last lifecycle was not flushed in 30 s")
            time.sleep(0.05)
        names = dict(
            conn.execute(
                "SELECT pg_relation_filenode(oid)::text, relname FROM pg_class"
                " WHERE pg_relation_filenode(oid) IS NOT NULL"
            ).fetchall()
        )
        records = conn.execute(
            "SELECT resource_manager, record_type, record_length, fpi_length, block_ref"
            " FROM pg_get_wal_records_info(%s, %s)",
            (start[0], end[0]),
        ).fetchall()
    size: Counter[str] = Counter()
    count: Counter[str] = Counter()
    images = 0
    for manager, kind, length, image, blocks in records:
        images += image
        found = BLOCK.search(blocks or "")
        relation = names.get(found.group(1), found.group(1)) if found else "-"
        key = f"{relation} {manager}/{kind.split()[0]}"
        size[key] += length - image
        count[key] += 1
    total = sum(size.values())
    print(
        f"{runs} lifecycles: {total / runs:.0f} B of WAL per lifecycle without full-page "
        f"images ({images / runs:.0f} B of those)"
    )
    print()
    print("| relation and record | bytes per lifecycle | records per lifecycle |")
    print("|---|---|---|")
    for key, value in size.most_common():
        print(f"| {key} | {value / runs:.0f} | {count[key] / runs:.1f} |")


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=20)
    server_argument(parser)
    args = parser.parse_args()
    admin, url = fresh_database(args.server)
    try:
        await measure(url, args.runs)
    finally:
        drop_database(admin, url)


if __name__ == "__main__":
    asyncio.run(main())
