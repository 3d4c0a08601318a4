"""What a `/metrics` scrape reads from the database: the right figures, and on a seeded
PostgreSQL database no statement that reads a big table whole (its cost follows the runs
in flight, not the runs kept)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest
import sqlalchemy as sa

from app import features
from app.api.metrics import render
from app.core.scope import Scope
from app.metrics import AGE_BUCKETS
from app.service.reads import RunReads
from app.settings import Settings
from app.store import gauges
from app.store.backend.engines import create_engine
from app.store.fold import fold
from app.store.runs import RunStore
from app.store.schema import runs, webhook_outbox
from tests.metrics_support import sample

#: Tables that grow with the runs kept: a scrape never reads one whole.
KEPT = {"runs", "run_events", "run_messages", "model_calls", "webhook_outbox"}
KEPT |= {"webhook_attempts", "tool_calls", "run_configs"}


def run_row(i: int, status: str, updated: datetime, available: datetime) -> dict[str, Any]:
    return {
        "id": f"run_{status}_{i}",
        "status": status,
        "state": "{}",
        "schema_version": 2,
        "version": 1,
        "available_at": available,
        "max_turns": 10,
        "created_at": updated,
        "updated_at": updated,
    }


def outbox_row(i: int, status: str, now: datetime) -> dict[str, Any]:
    return {
        "run_id": f"run_{i}",
        "event_seq": 1,
        "event_type": "run.completed",
        "webhook_id": f"msg_{status}_{i}",
        "url": "http://127.0.0.1:9/hook",
        "payload": {},
        "status": status,
        "next_attempt_at": now,
        "created_at": now,
    }


async def test_the_gauges_count_what_is_in_flight(database_url: str) -> None:
    store = RunStore(create_engine(database_url))
    now = datetime.now(UTC)
    waits = [30, 2 * 3600, 2 * 86400]  # seconds each suspended run has waited
    rows = [
        run_row(i, "requires_action", now - timedelta(seconds=s), now) for i, s in enumerate(waits)
    ]
    rows += [
        run_row(0, "queued", now, now - timedelta(seconds=1)),  # due
        run_row(1, "queued", now, now + timedelta(hours=1)),  # backing off
        *[run_row(i, "completed", now - timedelta(days=3), now) for i in range(4)],
    ]
    boxes = [
        outbox_row(i, s, now)
        for i, s in enumerate(["pending"] * 2 + ["failed"] + ["delivered"] * 5)
    ]
    try:
        async with store.engine.begin() as conn:
            await conn.execute(sa.delete(runs))
            await conn.execute(sa.delete(webhook_outbox))
            await conn.execute(runs.insert(), rows)
            await conn.execute(webhook_outbox.insert(), boxes)
        g = await gauges.read(store.engine, now, AGE_BUCKETS)
    finally:
        async with store.engine.begin() as conn:
            await conn.execute(sa.delete(runs))
            await conn.execute(sa.delete(webhook_outbox))
        await store.aclose()
    assert g.depth == 1
    assert g.suspended == 3
    # within 1m, 5m, 15m, 1h: the first; 6h, 1d: two; 7d: all three
    assert g.suspended_within == [1, 1, 1, 1, 2, 2, 3]
    assert g.suspended_seconds == pytest.approx(sum(waits), abs=2)
    assert g.oldest_suspended is not None
    assert abs((now - g.oldest_suspended).total_seconds() - 2 * 86400) < 2
    assert g.deliveries == {"pending": 2, "failed": 1}


# --- the plans, on a seeded PostgreSQL database -------------------------------------------------

KEPT_RUNS = 20_000
SEED = [
    # completed runs, their configs, events, calls, ledger, outbox and attempts
    (
        "runs (id, status, state, schema_version, version, available_at, max_turns,"
        " created_at, updated_at)",
        "'r' || g, 'completed', '{}', 2, 5, now() - g * interval '1 min', 10,"
        " now() - g * interval '1 min', now() - g * interval '1 min'",
    ),
    (  # (finished by the service, each would have its row for the fold)
        "unfolded_runs (run_id, tenant_id, status, ended_at, counts)",
        "'r' || g, 'default', 'completed', now() - g * interval '1 min', true",
    ),
    (
        "run_configs (run_id, config, metadata, created_at)",
        "'r' || g, '{}', '{}', now() - g * interval '1 min'",
    ),
    (
        "run_events (run_id, seq, type, data, created_at)",
        "'r' || g, s, 'run.claimed', '{}', now() - g * interval '1 min'",
    ),
    (
        "model_calls (run_id, turn, created_at, provider, model, outcome, latency_ms)",
        "'r' || g, s, now() - g * interval '1 min', 'scripted', 'demo', 'ok', 12.5",
    ),
    (
        "tool_calls (run_id, round, position, call_id, name, arguments, result_hash, queue)",
        "'r' || g, s, 0, 'c' || g || '_' || s, 'add', '{}', 'h', 'q'",
    ),
    (
        "webhook_outbox (run_id, event_seq, event_type, webhook_id, url, payload, status,"
        " attempts, next_attempt_at, created_at)",
        "'r' || g, s, 'run.completed', 'w' || g || '_' || s, 'http://127.0.0.1:9/', '{}',"
        " 'delivered', 1, now() - g * interval '1 min', now() - g * interval '1 min'",
    ),
]
IN_FLIGHT = [
    "INSERT INTO runs (id, status, state, schema_version, version, available_at, max_turns,"
    " expires_at, created_at, updated_at) SELECT 's' || g, 'requires_action', '{}', 2, 3,"
    " now(), 10, now() + interval '1 day', now() - g * interval '1 min',"
    " now() - g * interval '1 min' FROM generate_series(1, 20) g",
    "INSERT INTO runs (id, status, state, schema_version, version, available_at, max_turns,"
    " created_at, updated_at) SELECT 'q' || g, 'queued', '{}', 2, 1, now() - g * interval '1 s',"
    " 10, now(), now() FROM generate_series(1, 10) g",
    "INSERT INTO tool_calls (run_id, round, position, call_id, name, arguments, queue)"
    " SELECT 's' || g, 1, 0, 'sc' || g, 'add', '{}', 'q' FROM generate_series(1, 20) g",
    "INSERT INTO webhook_outbox (run_id, event_seq, event_type, webhook_id, url, payload,"
    " status, attempts, next_attempt_at, created_at) SELECT 's' || g, 1, 'run.requires_action',"
    " 'p' || g, 'http://127.0.0.1:9/', '{}', CASE WHEN g <= 5 THEN 'failed' ELSE 'pending' END,"
    " 1, now(), now() FROM generate_series(1, 12) g",
]


def seed(url: str) -> None:
    with psycopg.connect(url, autocommit=True) as c:
        for table, values in SEED:  # (`s`: two rows of each run: events, calls, ...)
            source = f"generate_series(1, {KEPT_RUNS}) g, generate_series(1, 2) s"
            if " s," not in values and not values.endswith(" s"):
                source = f"generate_series(1, {KEPT_RUNS}) g"
            c.execute(f"INSERT INTO {table} SELECT {values} FROM {source}")
        c.execute(
            "INSERT INTO webhook_attempts (outbox_id, attempt, status_code, latency_ms, created_at)"
            " SELECT id, 1, 200, 3.0, created_at FROM webhook_outbox"
        )
        for statement in IN_FLIGHT:
            c.execute(statement)
        c.execute("VACUUM ANALYZE")


@pytest.fixture
def seeded(empty_postgres_url: str) -> Iterator[str]:
    seed(empty_postgres_url)
    yield empty_postgres_url


def scans(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield node
    for child in node.get("Plans", ()):
        yield from scans(child)


async def scrape_statements(url: str, *, with_counts: bool) -> list[tuple[str, Any]]:
    """The SQL of one scrape of `/metrics`, as sent to the database, with what it showed
    (the features' gauges too: the shared limits')."""
    store = features.install(RunStore(create_engine(url)), Settings())
    reads = RunReads(store)
    sent: list[tuple[str, Any]] = []

    def record(conn: Any, cursor: Any, statement: str, parameters: Any, *_: Any) -> None:
        sent.append((statement, parameters))

    if not with_counts:  # (runs by status: `RunReads.count_by_status`, another statement)
        reads.count_by_status = _no_counts  # type: ignore[method-assign]
    sa.event.listen(store.engine.sync_engine, "before_cursor_execute", record)
    try:
        text = (await render(reads, datetime.now(UTC))).decode()
    finally:
        sa.event.remove(store.engine.sync_engine, "before_cursor_execute", record)
        await store.aclose()
    assert sample(text, "agentrun_queue_depth") == 10
    assert sample(text, "agentrun_suspended_run_age_seconds_count") == 20
    assert sample(text, "agentrun_webhook_deliveries", state="failed") == 5
    assert sample(text, "agentrun_tool_calls_queued", queue="q") == 20
    return [(s, p) for s, p in sent if s.lstrip().upper().startswith("SELECT")]


async def _no_counts(scope: Scope) -> dict[str, int]:
    return {}


def read_rows(url: str, statements: list[tuple[str, Any]]) -> dict[str, int]:
    """EXPLAIN ANALYZE each statement as a generic plan (what a prepared statement settles
    on after a few scrapes): the rows it read from each table; fails on a sequential scan
    of a table that grows with the runs kept."""
    read: dict[str, int] = {}
    # (prepare_threshold None: psycopg's own prepared statements would not survive the
    # DEALLOCATE ALL below)
    with psycopg.connect(url, autocommit=True, prepare_threshold=None) as c:
        c.execute("SET plan_cache_mode = force_generic_plan")
        settings = None  # a report's `by_index`: settings for its transaction's statement
        for statement, parameters in statements:
            if "set_config(" in statement:
                settings = statement
                continue
            if settings is not None:
                c.execute("BEGIN")
                c.execute(settings)
            c.execute("DEALLOCATE ALL")
            c.execute(f"PREPARE scrape AS {statement}")  # (asyncpg's SQL: $1, $2, ...)
            args = ", ".join(["%s"] * len(parameters))
            cur = psycopg.ClientCursor(c)
            execute = (
                f"EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE scrape({args})"
                if args
                else ("EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE scrape")
            )
            cur.execute(execute, tuple(parameters))
            (plan,) = cur.fetchone()[0]  # type: ignore[index]
            if settings is not None:
                c.execute("ROLLBACK")
                settings = None
            for node in scans(plan["Plan"]):
                table = node.get("Relation Name")
                if table not in KEPT:
                    continue
                assert node["Node Type"] != "Seq Scan", (statement, node)
                removed = node.get("Rows Removed by Filter", 0)
                read[table] = (
                    read.get(table, 0) + (node["Actual Rows"] + removed) * node["Actual Loops"]
                )
    return read


async def test_a_scrape_reads_what_is_in_flight_by_index(seeded: str) -> None:
    statements = await scrape_statements(seeded, with_counts=False)
    # suspended waits, queue depth, open deliveries, tool queues, the shared limits' keys
    # (`flow_limits`: a row per configured key) and the runs they deferred
    assert len(statements) == 6
    read = read_rows(seeded, statements)
    # 20 suspended + 10 queued runs, 12 open deliveries, 20 open tool calls: not 20,000 kept
    assert read["runs"] <= 30 and read["webhook_outbox"] <= 12 and read["tool_calls"] <= 20, read


async def test_a_whole_scrape_reads_no_table_whole(seeded: str) -> None:
    """Runs by status included: finished runs are counted by the fold's rollup (workers
    fold them within about a second of their end), the rest by their status's index."""
    engine = create_engine(seeded)
    try:
        assert await fold(engine) == 20_000
    finally:
        await engine.dispose()
    statements = await scrape_statements(seeded, with_counts=True)
    read = read_rows(seeded, statements)
    assert sum(read.values()) <= 100, read
