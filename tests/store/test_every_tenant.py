"""A page of every tenant's runs past `MERGED_TENANTS` tenants is one walk across them
(SQLite takes at most 500 branches of a UNION ALL: more tenants than that was a 500), in
the same order as the merged walks; and the overview's reads on PostgreSQL are one
snapshot (`Forms.snapshot`)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
import sqlalchemy as sa

from app.core.lifecycle import RunStatus
from app.core.scope import Scope
from app.store import run_pages
from app.store.backend.dialect_forms import POSTGRES
from app.store.backend.engines import create_engine
from app.store.run_pages import RunFilter
from app.store.runs import RunStore
from tests.helpers import bare_run

AT = datetime(2026, 11, 1, tzinfo=UTC)


@pytest.mark.parametrize("status", [None, RunStatus.QUEUED])
async def test_every_tenants_page_past_the_merge_cap(
    store: RunStore, monkeypatch: pytest.MonkeyPatch, status: RunStatus | None
) -> None:
    async with store.engine.begin() as conn:
        for n in range(9):
            await bare_run(conn, f"run_t{n}", AT + timedelta(minutes=n), tenant=f"t{n % 3}")
    f = RunFilter(status, scope=Scope.ALL)
    pages = {}
    for cap in (10, 2):  # merged (3 tenants), then one walk across them
        monkeypatch.setattr(run_pages, "MERGED_TENANTS", cap)
        seen, cursor = [], None
        while True:
            records, cursor = await run_pages.page_of_runs(store.engine, f, limit=4, cursor=cursor)
            seen += [r.id for r in records]
            if cursor is None:
                break
        pages[cap] = seen
    want = [f"run_t{n}" for n in range(9)]
    assert pages[10] == pages[2] == (want if status is not None else want[::-1])


async def test_a_postgres_snapshot_is_repeatable_read(postgres_url: str) -> None:
    store = RunStore(create_engine(postgres_url))
    try:
        async with store.engine.connect() as conn:
            await POSTGRES.snapshot(conn)
            level = await conn.scalar(sa.text("SHOW transaction_isolation"))
        assert level == "repeatable read"
    finally:
        await store.aclose()
