"""The hot statements keep their indexes however they were planned: the direct pool plans
generically, so a plan made while the tables were empty (a new deployment) is the plan
every later execution on that connection uses (the performance notes' sticky plan)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import psycopg
import pytest

from app.service.runs import RunService
from app.store.db import create_engine
from app.store.direct import SESSION_SETTINGS, Compiled, DirectPool
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
        await service.submit_tool_results(results_for(suspended), run_id=suspended.record.id)
        await drive_once(store, settings)  # claim, complete
        await service.load_run(suspended.record.id)  # the run with its log
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
