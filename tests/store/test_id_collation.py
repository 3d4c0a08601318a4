"""An id prefix finds exactly the runs whose ids start with it whatever the database's
collation: under a language's (ICU `en-US` here, as Docker's image defaults to a
language's), where the ids that start with a prefix are no range of the primary key, it
is checked along the walk instead (`Forms.bytewise_ids`)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta

import pytest

from app.core.lifecycle import RunStatus
from app.core.scope import Scope
from app.store import run_pages
from app.store.backend.dialect_forms import forms_for
from app.store.backend.engines import create_engine
from app.store.run_pages import RunFilter
from app.store.runs import RunStore
from tests.conftest import fresh_database
from tests.helpers import bare_run

ICU = "TEMPLATE template0 LOCALE_PROVIDER icu ICU_LOCALE 'en-US' LOCALE 'C.UTF-8'"
IDS = ["run_aZ1", "run_aZz", "run_az1", "run_aa", "run_a91", "run_a9Z", "run_a:", "run_B"]
AT = datetime(2026, 12, 1, tzinfo=UTC)


@pytest.fixture(scope="module")
def icu_url(postgres_server: str) -> Iterator[str]:
    with fresh_database(postgres_server, ICU) as url:
        yield url


async def _seeded(url: str) -> RunStore:
    store = RunStore(create_engine(url))
    async with store.engine.begin() as conn:
        await conn.exec_driver_sql("DELETE FROM run_configs")
        await conn.exec_driver_sql("DELETE FROM runs")
        for n, run_id in enumerate(IDS):
            await bare_run(conn, run_id, AT + timedelta(minutes=n), status="completed")
    return store


@pytest.fixture
async def icu_store(icu_url: str) -> AsyncIterator[RunStore]:
    store = await _seeded(icu_url)
    yield store
    await store.aclose()


async def found(store: RunStore, f: RunFilter) -> list[str]:
    records, cursor = await run_pages.page_of_runs(store.engine, f, limit=50, cursor=None)
    assert cursor is None
    return sorted(r.id for r in records)


@pytest.mark.parametrize("status", [None, RunStatus.COMPLETED])
async def test_a_prefix_finds_its_runs_under_a_languages_collation(
    icu_store: RunStore, status: RunStatus | None
) -> None:
    async with icu_store.engine.connect() as conn:
        assert await forms_for(conn).bytewise_ids(conn) is False
    for prefix in ("run_aZ", "run_a9", "run_az", "run_a", "run_B", "run_b"):
        f = RunFilter(status, id_prefix=prefix, scope=Scope.of("default"))
        want = sorted(i for i in IDS if i.startswith(prefix))
        assert await found(icu_store, f) == want, prefix
    # (What the check is for: this collation's range of `run_aZ` and `run_a9` misses.)
    for prefix in ("run_aZ", "run_a9"):
        ranged = RunFilter(status, id_prefix=prefix, scope=Scope.of("default"), by_range=True)
        async with icu_store.engine.connect() as conn:
            stmt = run_pages.hits_query(ranged, window=50, limit=50, after=None)
            rows = (await conn.execute(stmt)).all()
        hits = sorted(r.id for r in rows if r._mapping["passes"])
        assert hits != sorted(i for i in IDS if i.startswith(prefix)), prefix


async def test_the_bytewise_test_database_walks_the_range(postgres_url: str) -> None:
    store = await _seeded(postgres_url)
    try:
        async with store.engine.connect() as conn:
            assert await forms_for(conn).bytewise_ids(conn) is True
        f = RunFilter(None, id_prefix="run_aZ", scope=Scope.of("default"))
        assert await found(store, f) == ["run_aZ1", "run_aZz"]
    finally:
        async with store.engine.begin() as conn:
            await conn.exec_driver_sql("DELETE FROM run_configs")
            await conn.exec_driver_sql("DELETE FROM runs")
        await store.aclose()
