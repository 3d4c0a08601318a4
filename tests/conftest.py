"""Databases for the tests: a fresh PostgreSQL database and a fresh SQLite file per run.

PostgreSQL comes from AGENTRUN_TEST_DATABASE_URL (a server URL; a database is created
for this run and dropped after), else from testcontainers where Docker works; else the
tests that need it fail loudly: they are never skipped silently.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import psycopg
import pytest
from sqlalchemy.engine import make_url

from app import features
from app.settings import Settings
from app.store.backend.engines import create_engine
from app.store.migrate import upgrade_to_head
from app.store.runs import RunStore
from tests.helpers import CLEAN_TABLES

BACKENDS = ["sqlite", "postgres"]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests marked `starts_first` each at the head of a pytest-xdist worker's share: each
    is long (minutes of wall clock, or the longest run of its own), and started at once
    it overlaps the other workers' tests instead of ending the suite. (`worksteal` hands
    each of N workers a contiguous N-th of this order first; every worker collects the
    same order, as xdist requires.)"""
    first = [item for item in items if item.get_closest_marker("starts_first")]
    if not first:
        return
    rest = [item for item in items if not item.get_closest_marker("starts_first")]
    workers = int(getattr(config, "workerinput", {}).get("workercount", 1))
    for k, item in enumerate(first):  # k-th: the head of share k (of the last, if fewer)
        rest.insert(min(k * len(items) // max(1, workers), len(rest)), item)
    items[:] = rest


def _postgres_server_url() -> Iterator[str]:
    url = os.environ.get("AGENTRUN_TEST_DATABASE_URL")
    if url:
        yield url
        return
    try:
        from testcontainers.postgres import PostgresContainer

        with PostgresContainer("postgres:16-alpine") as pg:
            yield pg.get_connection_url().replace("postgresql+psycopg2", "postgresql")
    except Exception as exc:
        pytest.fail(
            "PostgreSQL is needed: set AGENTRUN_TEST_DATABASE_URL or make Docker available "
            f"for testcontainers ({exc})",
            pytrace=False,
        )


@contextlib.contextmanager
def fresh_database(server: str, options: str = "") -> Iterator[str]:
    """A new database on `server` (made with `options`: `CREATE DATABASE`'s), migrated to
    head, dropped at the end."""
    name = f"agentrun_test_{secrets.token_hex(4)}"
    admin = make_url(server).set(drivername="postgresql")
    admin_dsn = admin.render_as_string(hide_password=False)
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}" {options}')
    url = admin.set(database=name).render_as_string(hide_password=False)
    try:
        upgrade_to_head(url)
        yield url
    finally:
        with psycopg.connect(admin_dsn, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    yield from _postgres_server_url()


@pytest.fixture(scope="session")
def postgres_url(postgres_server: str) -> Iterator[str]:
    """A fresh database for this test run."""
    with fresh_database(postgres_server) as url:
        yield url


@pytest.fixture
def empty_postgres_url(postgres_server: str) -> Iterator[str]:
    """A database of its own for one test, with empty tables (nothing analyzed)."""
    with fresh_database(postgres_server) as url:
        yield url


@pytest.fixture(scope="session")
def sqlite_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    path: Path = tmp_path_factory.mktemp("db") / "agentrun.db"
    url = f"sqlite:///{path}"
    upgrade_to_head(url)
    return url


@pytest.fixture(params=BACKENDS)
def database_url(request: pytest.FixtureRequest) -> str:
    return str(request.getfixturevalue(f"{request.param}_url"))


def make_settings(url: str, **overrides: object) -> Settings:
    values: dict[str, object] = {
        "database_url": url,
        "lease_seconds": 5.0,
        "poll_interval": 0.02,
        "reap_interval": 0.1,
        "public_url": "http://127.0.0.1:8000",
        # retries in tens of milliseconds, not the production schedule's seconds
        "provider_backoff_base_seconds": 0.02,
        # the dashboard's password hash at argon2's smallest costs (not 64 MiB, 3 passes)
        "password_hash_memory_kib": 8192,
        "password_hash_time_cost": 1,
    }
    values.update(overrides)
    return Settings(**values)  # type: ignore[arg-type]


@pytest.fixture
def settings(database_url: str) -> Settings:
    return make_settings(database_url)


@pytest.fixture
async def store(database_url: str, settings: Settings) -> AsyncIterator[RunStore]:
    engine = create_engine(database_url)
    store = features.install(RunStore(engine), settings)
    async with engine.begin() as conn:
        for table in CLEAN_TABLES:
            await conn.exec_driver_sql(f"DELETE FROM {table}")
    yield store
    await store.aclose()
