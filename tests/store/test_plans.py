"""The hot statements keep their indexes however they were planned: the direct pool plans
generically, so a plan made while the tables were empty (a new deployment) is the plan
every later execution on that connection uses (the performance notes' sticky plan)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import psycopg
import pytest

from app.core.lifecycle import RunStatus
from app.core.scope import Scope
from app.service.principals import DEFAULT_TENANT
from app.service.runs import RunService
from app.store.backend.engines import create_engine
from app.store.backend.pg_direct import SESSION_SETTINGS, Compiled, DirectPool
from app.store.backend.postgres import PostgresBackend
from app.store.run_reads import list_runs
from app.store.runs import RunStore
from tests.conftest import make_settings
from tests.helpers import drive_once, results_for, suspended_run


async def generic_plan(url: str, compiled: Compiled, values: Mapping[str, Any]) -> str:
    """EXPLAIN of `compiled` as the direct pool's sessions plan it."""
    args = ", ".join(["%s"] * len(compiled.slots))
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        for name, value in SESSION_SETTINGS.items():
            await conn.execute(f"SET {name} = {value}")
        await conn.execute(f"PREPARE hot AS {compiled.sql}")
        cursor = psycopg.AsyncClientCursor(conn)
        await cursor.execute(f"EXPLAIN EXECUTE hot({args})", compiled.params(values))
        return "\n".join(row[0] for row in await cursor.fetchall())


async def test_a_runs_lifecycle_reaches_every_row_by_its_key_on_empty_tables(
    empty_postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    sent: list[tuple[Compiled, dict[str, Any]]] = []
    fetchone = DirectPool.fetchone

    async def recording(self: DirectPool, compiled: Compiled, values: Any) -> Any:
        sent.append((compiled, dict(values)))
        return await fetchone(self, compiled, values)

    monkeypatch.setattr(DirectPool, "fetchone", recording)
    settings = make_settings(empty_postgres_url)
    store = RunStore(create_engine(empty_postgres_url))
    try:
        service = RunService(store, settings)
        suspended = await suspended_run(service)  # create, claim, suspend: two tool calls
        run_id = suspended.record.id
        # (As the API reads and writes: on behalf of the caller's tenant.)
        await service.get_run(run_id, scope=Scope.of(DEFAULT_TENANT))
        await service.submit_tool_results(
            results_for(suspended), run_id=run_id, scope=Scope.of(DEFAULT_TENANT)
        )
        await drive_once(store, settings)  # claim, complete
        await service.load_run(run_id, scope=Scope.of(DEFAULT_TENANT))  # the run with its log
    finally:
        await store.aclose()
    statements = {compiled.sql: (compiled, values) for compiled, values in sent}
    touching = [s for s in statements.values() if "runs" in s[0].sql]
    assert len(touching) >= 5  # create, suspend, submission read and write, completion, log read
    assert any("run_messages" in s[0].sql and "string_agg" in s[0].sql for s in touching)
    for compiled, values in touching:
        plan = await generic_plan(empty_postgres_url, compiled, values)
        assert "Seq Scan" not in plan, plan
        # A run found by its key is found by the primary key, not a status-led index.
        assert "ix_runs_lease" not in plan and "ix_runs_expiry" not in plan, plan


@pytest.mark.parametrize("status", [None, RunStatus.REQUIRES_ACTION])
@pytest.mark.parametrize("paged", [False, True])
async def test_run_lists_follow_the_creation_index(
    empty_postgres_url: str, status: RunStatus | None, paged: bool
) -> None:
    """A tenant's list of runs, newest first (of one status or all, from a cursor or not),
    reads no table whole: all runs in the creation index's order (`run_configs`, tenant
    first), no sort."""
    store = RunStore(create_engine(empty_postgres_url))
    try:
        async with await psycopg.AsyncConnection.connect(empty_postgres_url, autocommit=True) as c:
            for table, values in (
                (
                    "runs (id, status, state, schema_version, version, available_at, max_turns,"
                    " created_at, updated_at)",
                    "'r' || g, 'completed', '{}', 2, 1, now(), 1,"
                    " now() - g * interval '1 s', now()",
                ),
                (
                    "run_configs (run_id, config, metadata, created_at)",
                    "'r' || g, '{}', '{}', now() - g * interval '1 s'",
                ),
            ):
                await c.execute(
                    f"INSERT INTO {table} SELECT {values} FROM generate_series(1, 5000) g"
                )
            await c.execute("ANALYZE")
        stmt = list_runs(status, paged)
        backend = store.backend
        assert isinstance(backend, PostgresBackend)
        values: dict[str, Any] = {
            "p_limit": 50,
            "p_created": datetime.now(UTC),
            "p_id": "r9",
            "p_tenant": "default",  # (the API lists one tenant's runs)
        }
        plan = await generic_plan(empty_postgres_url, backend.compile(stmt), values)
    finally:
        await store.aclose()
    assert "Seq Scan" not in plan, plan
    if status is None:  # (of one status, a partial index of that status may serve it)
        assert "ix_run_configs_created" in plan and "Sort" not in plan, plan
