"""What moves the database's CPU per lifecycle: the service's own statements, replayed
as `bench/lifecycle.py`'s "own statements" row does, against variants of them.

A lab, not a build: the variants edit the recorded statements' SQL text or the database
(an index dropped, synchronous commit off) to ask what a redesign would save before it is
built. Each variant is measured alternately with the unedited statements, `--repeat`
times, `--lifecycles` (1000) each (median). Then each write statement is issued refused (its
compare-and-set finds no run at that version, so nothing is written) on one connection,
with `SELECT 1` and a refused one-table UPDATE beside it: the fixed cost of a statement on
the server, read from its backend's CPU time (the figures in docs/benchmarks.md).

Run: `.venv/bin/python bench/statement_lab.py [--repeat 3] [--lifecycles 1000]
[--executions 3000] [--server postgresql://...]` (`--executions`: of each statement on
one connection, for its fixed cost)
"""

from __future__ import annotations

import argparse
import asyncio
import re
import statistics
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import asyncpg  # type: ignore[import-untyped]  # noqa: E402
import psycopg  # noqa: E402

from app.service.runs import RunService  # noqa: E402
from app.settings import Settings  # noqa: E402
from app.store.backend.engines import create_engine  # noqa: E402
from app.store.backend.pg_direct import SESSION_SETTINGS, Compiled  # noqa: E402
from app.store.runs import RunStore  # noqa: E402
from bench.common import (  # noqa: E402
    SEEDED,
    drop_database,
    fresh_database,
    process_cpu,
    seed,
    server_argument,
)
from bench.reference_sql import (  # noqa: E402
    Statement,
    own_statements,
    record_statements,
)

EVENTS = re.compile(
    r"appended AS \n\(INSERT INTO run_events \(run_id, seq, type, data, actor, created_at\) "
    r"(SELECT .*?)\), \n",
    re.S,
)


def events_in_one_row(sql: str) -> str:
    """A transition's events as one row: the first event's row, its data an array that
    also holds every other event's values (each parameter stays, typed as before)."""
    found = EVENTS.search(sql)
    if found is None or " UNION ALL " not in found.group(1):
        return sql
    branches = found.group(1).split(" UNION ALL ")

    def values(branch: str) -> list[str]:
        body = branch[len("SELECT ") : branch.rindex("FROM changed")].strip()
        return [re.sub(r" AS anon_\w+$", "", v.strip()) for v in body.split(", ")]

    first = values(branches[0])
    rest = [v for branch in branches[1:] for v in values(branch)[1:5]]
    first[3] = "jsonb_build_array(" + ", ".join([first[3], *rest]) + ")"
    one = "SELECT " + ", ".join(first) + " \nFROM changed"
    return sql[: found.start(1)] + one + sql[found.end(1) :]


def no_ledger(sql: str) -> str:
    """The usage-ledger rows not written (their CTE selects the values instead)."""
    return re.sub(r"ledgered AS \n\(INSERT INTO model_calls \([^)]*\) ", "ledgered AS \n(", sql)


def no_watch_lookup(sql: str) -> str:
    """No lookup of the run's live-stream watchers (so no NOTIFY either)."""
    return sql.replace(
        "WHERE EXISTS (SELECT * \nFROM run_watchers \nWHERE run_watchers.run_id = changed.id "
        "AND run_watchers.expires_at > now())",
        "WHERE false",
    )


TEXT: dict[str, Callable[[str], str]] = {
    "a transition's events in one row": events_in_one_row,
    "no usage-ledger rows": no_ledger,
    "no watcher lookup": no_watch_lookup,
}
DATABASE: dict[str, tuple[str, str]] = {
    "no unique indexes on runs": (
        "DROP INDEX uq_runs_idempotency_key; DROP INDEX uq_runs_callback_token_hash",
        "CREATE UNIQUE INDEX uq_runs_idempotency_key ON runs (idempotency_key)"
        " WHERE idempotency_key IS NOT NULL;"
        " CREATE UNIQUE INDEX uq_runs_callback_token_hash ON runs (callback_token_hash)"
        " WHERE callback_token_hash IS NOT NULL",
    ),
    "no secondary ledger indexes": (
        "DROP INDEX ix_model_calls_run; DROP INDEX ix_model_calls_created",
        "CREATE INDEX ix_model_calls_run ON model_calls (run_id);"
        " CREATE INDEX ix_model_calls_created ON model_calls (created_at)",
    ),
    "synchronous commit off (lab only)": (
        "ALTER DATABASE {db} SET synchronous_commit = off",
        "ALTER DATABASE {db} RESET synchronous_commit",
    ),
}


def edited(script: dict[str, Statement], edit: Callable[[str], str]) -> dict[str, Statement]:
    return {role: (Compiled(edit(c.sql), c.slots), v) for role, (c, v) in script.items()}


async def variants(url: str, script: dict[str, Statement], repeat: int, lifecycles: int) -> None:
    db = url.rsplit("/", 1)[1]
    samples: dict[str, list[dict[str, float]]] = {"as recorded": []}
    for _ in range(repeat):
        samples["as recorded"].append(await own_statements(url, script, lifecycles, 8))
        for name, edit in TEXT.items():
            result = await own_statements(url, edited(script, edit), lifecycles, 8)
            samples.setdefault(name, []).append(result)
        for name, (change, undo) in DATABASE.items():
            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute(change.format(db=db))  # type: ignore[arg-type]
            samples.setdefault(name, []).append(await own_statements(url, script, lifecycles, 8))
            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute(undo.format(db=db))  # type: ignore[arg-type]
    print("| variant | lifecycles/s | database CPU | client CPU | WAL |")
    print("|---|---|---|---|---|")
    for name, results in samples.items():

        def median(key: str, results: list[dict[str, float]] = results) -> float:
            return statistics.median(r[key] for r in results)

        print(
            f"| {name} | {median('per_second'):.0f} | {median('db_cpu_ms'):.2f} ms "
            f"| {median('client_cpu_ms'):.2f} ms | {median('wal_kb'):.1f} kB |"
        )


async def fixed_costs(url: str, script: dict[str, Statement], n: int = 3000) -> None:
    conn = await asyncpg.connect(url)
    try:
        for name, value in SESSION_SETTINGS.items():
            await conn.execute(f"SET {name} = {value}")
        backend = Path(f"/proc/{await conn.fetchval('SELECT pg_backend_pid()')}/stat")

        async def cost(sql: str, args: list[object]) -> float:
            for _ in range(50):
                await conn.fetch(sql, *args)
            before = (process_cpu(backend) or ("", 0.0))[1]
            for _ in range(n):
                await conn.fetch(sql, *args)
            return ((process_cpu(backend) or ("", 0.0))[1] - before) * 1e6 / n

        print()
        print("| statement, on one connection | server CPU per execution |")
        print("|---|---|")
        print(f"| SELECT 1 | {await cost('SELECT 1', []):.0f} µs |")
        refused = "UPDATE runs SET status = $1, state = $2 WHERE id = $3 AND version = -1"
        print(f"| a one-table UPDATE, refused | {await cost(refused, ['x', 'y', 'z']):.0f} µs |")
        for role in ("suspend", "submit", "complete"):
            compiled, values = script[role]
            args = compiled.params({**values, "p_version": -1})
            print(f"| {role}, refused | {await cost(compiled.sql, args):.0f} µs |")
    finally:
        await conn.close()


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--lifecycles", type=int, default=1000, help="per sample")
    parser.add_argument("--executions", type=int, default=3000, help="per fixed cost")
    server_argument(parser)
    args = parser.parse_args()
    admin, url = fresh_database(args.server)
    try:
        seed(url, SEEDED)
        store = RunStore(create_engine(url, pool_size=16))
        script = await record_statements(RunService(store, Settings(database_url=url)))
        await store.aclose()
        print(
            f"The service's own statements, 8 clients, {args.lifecycles} lifecycles per sample,"
            " median"
        )
        print(f"of {args.repeat}, each variant alternated with the statements as recorded:")
        print()
        await variants(url, script, args.repeat, args.lifecycles)
        await fixed_costs(url, script, args.executions)
    finally:
        drop_database(admin, url)


if __name__ == "__main__":
    asyncio.run(main())
