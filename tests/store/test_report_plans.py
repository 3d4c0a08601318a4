"""Every statement that looks across runs reads indexes or rollups, on a seeded database
(tens of thousands of runs, most of them finished and folded, analyzed): no sequential
scan of a table that grows with the runs kept, no sort of more than a page, and a keyset
page twenty pages deep reads about one page (PostgreSQL; SQLite's plans are documented in
docs/reference.md, not promised)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
import psycopg
import pytest
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

from app.core.lifecycle import RunStatus
from app.core.scope import Scope
from app.store import reports, run_pages, samples, spend
from app.store import run_reads as lookups
from app.store.backend.dialect_forms import POSTGRES
from app.store.backend.engines import create_engine
from app.store.backend.pg_direct import compile_statement
from app.store.retention import ENDED_VALUES, due_query
from app.store.run_pages import RunFilter
from app.store.runs import RunStore
from app.store.schema import (
    RUN_ROWS,
    model_calls,
    runs,
    unfolded_runs,
    webhook_outbox,
)
from app.store.usage import usage_query
from tests.conftest import fresh_database
from tests.store.test_plans import generic_plan

GROWING = {
    "runs",
    "run_events",
    "model_calls",
    "webhook_outbox",
    "webhook_attempts",
    "run_configs",
    "run_messages",
}
PAGE = 50
NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
DONE, FAILED, SUSPENDED, QUEUED, UNFOLDED_N = 40_000, 3_000, 4_000, 2_000, 300
ALL = DONE + FAILED + SUSPENDED + QUEUED
OTHER = "acme"  # one run in a hundred is its (the ids ending in 00)
CONFIG = '{"model": {"provider": "scripted", "name": "demo"}}'
#: One run in ten started from an agent (the ids ending in 7).
AGENT_CONFIG = (
    '{"model": {"provider": "scripted", "name": "demo"}, "agent": {"name": "helper", "version": 2}}'
)

SEED = f"""
INSERT INTO runs (id, status, state, schema_version, version, available_at, max_turns,
                  created_at, updated_at)
SELECT 'r' || lpad(g::text, 6, '0'),
       CASE WHEN g <= {DONE} THEN 'completed'
            WHEN g <= {DONE + FAILED} THEN 'failed'
            WHEN g <= {DONE + FAILED + SUSPENDED} THEN 'requires_action'
            ELSE 'queued' END,
       '{{}}', 2, 1,
       timestamptz '{NOW.isoformat()}' - (g % 720) * interval '1 hour',
       5,
       timestamptz '{NOW.isoformat()}' - ({ALL} - g) * interval '60 s',
       timestamptz '{NOW.isoformat()}' - ({ALL} - g) * interval '60 s' + interval '20 s'
FROM generate_series(1, {ALL}) g;
UPDATE runs SET tenant_id = '{OTHER}' WHERE id LIKE '%00';
INSERT INTO unfolded_runs (run_id, tenant_id, status, ended_at, counts)
SELECT id, tenant_id, status, updated_at, true FROM runs
WHERE id > 'r' || lpad({DONE - UNFOLDED_N}::text, 6, '0')
  AND id <= 'r' || lpad({DONE}::text, 6, '0');
INSERT INTO run_configs (run_id, config, metadata, created_at, tenant_id)
SELECT id, CASE WHEN id LIKE '%7' THEN '{AGENT_CONFIG}' ELSE '{CONFIG}' END::jsonb,
       jsonb_build_object('team', CASE WHEN random() < 0.6 THEN 'a' ELSE 'b' END), created_at,
       tenant_id
FROM runs;
INSERT INTO run_messages (run_id, seq, body)
SELECT id, 1, '{{"v": 2, "h": [{{"role": "user", "content": [{{"type": "text", "text": "'
              || repeat('earlier ', 200) || '"}}]}}],'
              || ' "m": [{{"role": "user", "content": [{{"type": "text", "text": "prompt of '
              || id || '"}}]}}]}}'
FROM runs;
INSERT INTO run_events (run_id, seq, type, data, actor, created_at)
SELECT id, s, CASE s WHEN 3 THEN 'run.requires_action' ELSE 'run.note' END, '{{}}', NULL,
       created_at + s * interval '1 s'
FROM runs, generate_series(1, 4) s;
INSERT INTO model_calls (run_id, turn, provider, model, outcome, input_tokens, output_tokens,
                         total_tokens, cost_usd, created_at, folded)
SELECT id, t, 'scripted', 'demo', 'ok', 100, 20, 120, 0.001, created_at + t * interval '2 s',
       status IN ('completed', 'failed')
       AND NOT EXISTS (SELECT 1 FROM unfolded_runs u WHERE u.run_id = runs.id)
FROM runs, generate_series(1, 2) t WHERE status <> 'queued';
INSERT INTO webhook_outbox (run_id, event_seq, event_type, webhook_id, url, payload, status,
                            attempts, next_attempt_at, created_at)
SELECT id, 4, 'run.completed', 'msg_' || id, 'http://127.0.0.1:9/', '{{}}', 'delivered', 1,
       updated_at, updated_at
FROM runs WHERE status IN ('completed', 'failed');
INSERT INTO webhook_attempts (outbox_id, attempt, status_code, latency_ms, created_at)
SELECT id, 1, 200, 5, created_at FROM webhook_outbox;
INSERT INTO usage_hourly (hour, provider, model, run_status, calls, failed_calls, input_tokens,
                          output_tokens, cached_input_tokens, reasoning_tokens, total_tokens,
                          cost_usd, tenant_id)
SELECT h, 'scripted', 'demo', 'completed', 100, 0, 10000, 2000, 0, 0, 12000, 0.1, 'default'
FROM generate_series(timestamptz '{NOW.isoformat()}' - interval '60 days',
                     timestamptz '{NOW.isoformat()}', interval '1 hour') h;
INSERT INTO run_counts (status, runs, tenant_id)
VALUES ('completed', {DONE - UNFOLDED_N}, 'default'), ('failed', {FAILED}, 'default');
INSERT INTO run_endings (minute, status, runs, tenant_id)
SELECT m, 'completed', 1, 'default'
FROM generate_series(timestamptz '{NOW.isoformat()}' - interval '1 day',
                     timestamptz '{NOW.isoformat()}', interval '1 minute') m;
ANALYZE;
"""


@pytest.fixture(scope="module")
def seeded(postgres_server: str) -> Iterator[str]:
    with fresh_database(postgres_server) as url, psycopg.connect(url, autocommit=True) as conn:
        conn.execute(SEED)
        yield url


@pytest.fixture
async def store(seeded: str) -> AsyncIterator[RunStore]:
    store = RunStore(create_engine(seeded))
    yield store
    await store.aclose()


def nodes(plan: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield plan
    for child in plan.get("Plans", []):
        yield from nodes(child)


def literal(stmt: Any) -> str:
    return str(stmt.compile(dialect=postgresql.dialect(), compile_kwargs={"literal_binds": True}))


async def explain(
    url: str, sql: str, *, analyze: bool = False, in_order: bool = False
) -> dict[str, Any]:
    """The plan of `sql`; `in_order`: with the settings of a bounded walk (`Forms.in_order`)."""
    async with await psycopg.AsyncConnection.connect(url) as conn:
        await conn.execute("SET max_parallel_workers_per_gather = 0")  # (as `serial`)
        if in_order:
            await conn.execute("SET enable_bitmapscan = off")
        options = "ANALYZE, FORMAT JSON" if analyze else "FORMAT JSON"
        row = await (await conn.execute(f"EXPLAIN ({options}) {sql}")).fetchone()
        await conn.rollback()  # (an analyzed DELETE or UPDATE leaves nothing)
    assert row is not None
    document = row[0] if not isinstance(row[0], str) else orjson.loads(row[0])
    return dict(document[0]["Plan"])


def assert_flat(plan: dict[str, Any], *, sort_rows: int = PAGE + 1) -> None:
    for node in nodes(plan):
        if node["Node Type"] == "Seq Scan":
            assert node["Relation Name"] not in GROWING, (node["Relation Name"], plan)
        if node["Node Type"] in ("Sort", "Incremental Sort"):
            assert node["Plan Rows"] <= sort_rows, plan


STATUSES = [None, *RunStatus]


@pytest.mark.parametrize("status", STATUSES)
async def test_api_lists_of_each_status_read_a_page(
    store: RunStore, seeded: str, status: Any
) -> None:
    for paged in (False, True):
        values = {
            "p_limit": PAGE + 1,
            "p_created": NOW - timedelta(days=3),
            "p_id": "r9",
            "p_tenant": "default",  # (the API lists one tenant's runs)
        }
        stmt = lookups.list_runs(status, paged)
        plan = await generic_plan(seeded, compile_statement(stmt, store.engine.dialect), values)
        assert "Seq Scan" not in plan, plan
        if status is not None and status != RunStatus.RUNNING:
            assert "ix_runs_waiting" in plan or "ix_runs_ended" in plan, plan
            assert "Sort" not in plan, plan


@pytest.mark.parametrize(
    "status", [RunStatus.REQUIRES_ACTION, RunStatus.QUEUED, RunStatus.COMPLETED, RunStatus.FAILED]
)
async def test_dashboard_pages_twenty_deep_read_about_a_page(
    store: RunStore, seeded: str, status: RunStatus
) -> None:
    """Oldest first for waiting statuses, newest first otherwise; with a metadata filter
    (six runs in ten match) too: each page reads its own runs, not those before it (the
    filtered walk stops at a page's hits: within 3 pages of runs here)."""
    for meta in (None, "a"):
        f = RunFilter(
            status=status,
            meta_key="team" if meta else None,
            meta_value=meta,
            scope=Scope.of("default"),
        )
        cursor = None
        for _ in range(20):
            records, cursor = await run_pages.page_of_runs(
                store.engine, f, limit=PAGE, cursor=cursor
            )
            assert cursor is not None and len(records) == PAGE
        after = run_pages.decode_cursor(cursor)
        if meta:
            size = 3 * (PAGE + 1)
            stmt = run_pages.hits_query(f, window=WINDOW, limit=PAGE, after=after)
        else:
            size, stmt = PAGE + 1, run_pages.page_query(f, limit=PAGE, after=after)
        plan = await explain(seeded, literal(stmt), analyze=True, in_order=bool(meta))
        assert_flat(plan, sort_rows=size)
        read = max(n.get("Actual Rows", 0) for n in nodes(plan) if "Index" in n["Node Type"])
        assert read <= size, plan


WINDOW = run_pages.WALK_PAGES * (PAGE + 1)


async def test_counts_depth_suspended_activity_and_usage_read_indexes_and_rollups(
    seeded: str,
) -> None:
    month = (NOW - timedelta(days=30, minutes=17), NOW - timedelta(minutes=3))
    for stmt in (  # (aggregates: sorts of groups, bounded by the runs not folded)
        *[reports.counts_query(t) for t in (Scope.ALL, Scope.of("default"))],
        reports.depth_query(NOW),
        *[reports.suspended_query(t) for t in (Scope.ALL, Scope.of("default"))],
        *[
            reports.activity_query(NOW - timedelta(minutes=59), t)
            for t in (Scope.ALL, Scope.of("default"))
        ],
        *[usage_query(*month, t) for t in (Scope.ALL, Scope.of("default"))],
        *[usage_query(NOW - timedelta(days=1), NOW, t) for t in (Scope.ALL, Scope.of("default"))],
    ):
        assert_flat(await explain(seeded, literal(stmt)), sort_rows=2 * (SUSPENDED + UNFOLDED_N))


async def test_the_fold_and_the_retention_sweep_read_by_index(seeded: str) -> None:
    ids = [f"r{g:06d}" for g in range(1, 201)]
    picked = runs.c.id.in_(ids)
    statements = [
        POSTGRES.skip_locked(sa.select(unfolded_runs).limit(500)),
        sa.select(model_calls).where(
            model_calls.c.run_id.in_(ids), model_calls.c.folded.is_(False)
        ),
        unfolded_runs.delete().where(unfolded_runs.c.run_id.in_(ids)),
        model_calls.update().where(model_calls.c.id.in_(range(1, 401))).values(folded=True),
        *[due_query("default", s, NOW - timedelta(days=25), 200, POSTGRES) for s in ENDED_VALUES],
        *[t.delete().where(t.c.run_id.in_(ids)) for t in RUN_ROWS],
        runs.delete().where(picked),
    ]
    for stmt in statements:
        assert_flat(await explain(seeded, literal(stmt)), sort_rows=500)  # (a batch)
    # The outbox rows' attempts go by the foreign key's cascade, through its index.
    plan = await explain(
        seeded,
        literal(webhook_outbox.delete().where(webhook_outbox.c.run_id.in_(ids))),
        analyze=True,
    )
    assert_flat(plan)
    async with await psycopg.AsyncConnection.connect(seeded) as conn:
        indexed = await (
            await conn.execute(
                "SELECT indexdef FROM pg_indexes WHERE tablename = 'webhook_attempts'"
            )
        ).fetchall()
    assert any("(outbox_id)" in row[0] for row in indexed), indexed


async def test_suspended_since_reads_each_run_by_key(seeded: str) -> None:
    ids = [f"r{g:06d}" for g in range(DONE + FAILED + 1, DONE + FAILED + 51)]
    stmt = sa.select(runs.c.id, runs.c.suspended_at).where(runs.c.id.in_(ids))
    plan = await explain(seeded, literal(stmt))
    assert_flat(plan)
    assert any(n.get("Index Name") == "pk_runs" for n in nodes(plan)), plan


async def test_the_overviews_spend_latency_and_samples_read_rollups_and_indexes(
    seeded: str,
) -> None:
    """The overview's reads (app.store.spend, app.store.samples): a month's and a day's
    window read the rollups, the calls not folded and the current hour's calls; a sample
    reads the waiting and the running runs' partial indexes."""
    engine = create_engine(seeded)
    try:
        statements: list[Any] = []
        for days in (30, 1):
            w = spend.Window(NOW - timedelta(days=days), NOW + timedelta(minutes=17))
            for t in (Scope.ALL, Scope.of("default")):
                statements += [spend.ledger_query(w, t, POSTGRES), spend.hourly_query(w, t)]
                statements += [
                    spend.latency_query(w, t),
                    spend.ledger_latency_query(w, t, POSTGRES),
                ]
        statements += samples.sample_statements(engine, NOW)
        statements += [
            samples.samples_query(NOW - timedelta(days=1), NOW, t)
            for t in (Scope.ALL, Scope.of("default"))
        ]
        for stmt in statements:
            plan = await explain(seeded, literal(stmt))
            assert_flat(plan, sort_rows=2 * (SUSPENDED + UNFOLDED_N))
    finally:
        await engine.dispose()


def index_reads(plan: dict[str, Any]) -> list[dict[str, Any]]:
    return [n for n in nodes(plan) if "Index" in n["Node Type"]]


@pytest.mark.parametrize("status", [None, RunStatus.REQUIRES_ACTION, RunStatus.COMPLETED])
@pytest.mark.parametrize("scope", [Scope.of("default"), Scope.ALL])
async def test_an_id_prefix_walks_the_primary_keys_range(
    store: RunStore, seeded: str, status: Any, scope: Scope
) -> None:
    """A chunk of the range per statement (`pk_runs`, from the cursor's id), the status
    and the other checks along it: the ids that start with the prefix, in id order."""
    prefix = "r0312"  # r031200 … r031299: 100 runs, all completed
    f = RunFilter(status, id_prefix=prefix, scope=scope)
    records, cursor = await run_pages.page_of_runs(store.engine, f, limit=PAGE, cursor=None)
    want = [
        f"r{g:06d}"
        for g in range(31200, 31300)
        if scope.admits("acme" if g % 100 == 0 else "default")
    ]
    if status == RunStatus.REQUIRES_ACTION:
        want = []
    assert [r.id for r in records] == want[:PAGE]
    assert (cursor is not None) == (len(want) > PAGE)
    for after in (None, (NOW, "r031250")):
        stmt = run_pages.hits_query(f, window=WINDOW, limit=PAGE, after=after)
        plan = await explain(seeded, literal(stmt), analyze=True, in_order=True)
        assert_flat(plan, sort_rows=PAGE + 1)
        walked = [n for n in index_reads(plan) if n.get("Index Name") == "pk_runs"]
        assert walked and prefix in walked[0].get("Index Cond", ""), plan
        assert max(n.get("Actual Rows", 0) for n in index_reads(plan)) <= 100, plan


@pytest.mark.parametrize("status", [None, RunStatus.REQUIRES_ACTION, RunStatus.COMPLETED])
async def test_an_agent_filter_is_checked_along_a_bounded_walk(
    store: RunStore, seeded: str, status: Any
) -> None:
    """No index holds a run's agent: its pages are walks of the status's index (one run in
    ten matches), each statement a chunk; pages deep, it reads its own chunk."""
    f = RunFilter(status, agent="helper", agent_version=2, scope=Scope.of("default"))
    cursor = None
    for _ in range(5):
        records, cursor = await run_pages.page_of_runs(store.engine, f, limit=PAGE, cursor=cursor)
        assert cursor is not None and records
        assert all(r.id.endswith("7") and r.config["agent"]["name"] == "helper" for r in records)
    after = run_pages.decode_cursor(cursor)
    stmt = run_pages.hits_query(f, window=WINDOW, limit=PAGE, after=after)
    plan = await explain(seeded, literal(stmt), analyze=True, in_order=True)
    assert_flat(plan, sort_rows=PAGE + 1)
    assert max(n.get("Actual Rows", 0) for n in index_reads(plan)) <= 12 * (PAGE + 1), plan
    other = RunFilter(status, agent="helper", agent_version=3, scope=Scope.of("default"))
    records, cursor = await run_pages.page_of_runs(store.engine, other, limit=PAGE, cursor=None)
    assert records == [] and cursor is not None  # (a walk's bound: where it stopped)
    stmt = run_pages.hits_query(other, window=WINDOW, limit=PAGE, after=after)
    plan = await explain(seeded, literal(stmt), analyze=True, in_order=True)
    assert_flat(plan, sort_rows=PAGE + 1)
    assert max(n.get("Actual Rows", 0) for n in index_reads(plan)) <= WINDOW, plan


@pytest.mark.parametrize("status", [None, RunStatus.REQUIRES_ACTION, RunStatus.COMPLETED])
async def test_every_tenants_pages_merge_each_tenants_page(
    store: RunStore, seeded: str, status: Any
) -> None:
    """Every tenant's runs (a deployment's admin's list): the tenants by a loose walk of
    ix_run_configs_created, then each tenant's next page by its index, merged: a sort
    of a page per tenant, however many runs are kept; twenty pages deep too."""
    tenants_plan = await explain(seeded, literal(run_pages.tenants_query()), analyze=True)
    assert_flat(tenants_plan)
    assert max(n.get("Actual Rows", 0) for n in index_reads(tenants_plan)) <= 1
    tenants = ["acme", "default"]
    for meta in (None, "a"):
        f = RunFilter(status, meta_key="team" if meta else None, meta_value=meta, scope=Scope.ALL)
        cursor, seen = None, []
        for _ in range(20):
            records, cursor = await run_pages.page_of_runs(
                store.engine, f, limit=PAGE, cursor=cursor
            )
            assert cursor is not None and len(records) == PAGE
            seen += records
        keys = [(r.created_at, r.id) for r in seen]
        assert keys == sorted(keys, reverse=not f.ascending)
        assert {r.tenant_id for r in seen} == {"acme", "default"}
        after = run_pages.decode_cursor(cursor)
        if meta:
            size = 3 * (PAGE + 1)
            stmt = run_pages.hits_query(f, window=WINDOW, limit=PAGE, after=after, merging=tenants)
        else:
            size = PAGE + 1
            stmt = run_pages.page_query(f, limit=PAGE, after=after, merging=tenants)
        plan = await explain(seeded, literal(stmt), analyze=True, in_order=bool(meta))
        assert_flat(plan, sort_rows=PAGE + 1)
        assert max(n.get("Actual Rows", 0) for n in index_reads(plan)) <= size, plan


async def test_the_prompts_of_a_page_are_read_by_the_logs_key(store: RunStore, seeded: str) -> None:
    ids = [f"r{g:06d}" for g in range(DONE + 1, DONE + PAGE + 1)]
    found = await run_pages.prompts(store.engine, ids)
    assert set(found) == set(ids)
    assert orjson.loads(found[ids[0]])["content"][0]["text"] == f"prompt of {ids[0]}"
    plan = await explain(seeded, literal(run_pages.prompts_query(ids, POSTGRES)))
    assert_flat(plan)
    assert any(n.get("Index Name") == "pk_run_messages" for n in nodes(plan)), plan
