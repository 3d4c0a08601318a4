"""One pool per process (app.store.backend.engines, app.store.backend.pg_direct): the hot
path borrows the engine's connections (and keeps one briefly for its next statements,
never keeping SQLAlchemy's queries waiting long), its session settings stay on its own
statements, the process never holds more than the pool, a connection the pool must
replace is replaced, and an engine made for PgBouncer leaves nothing in a server
session."""

from __future__ import annotations

import asyncio
import gc
import warnings
from collections.abc import AsyncIterator

import psycopg
import pytest
import sqlalchemy as sa

from app.core.scope import Scope
from app.service.runs import RunService
from app.store.backend import pg_direct as direct
from app.store.backend.engines import create_engine
from app.store.backend.pg_direct import (
    IDLE_SECONDS,
    LEND_SECONDS,
    Compiled,
    DirectPool,
    compile_statement,
)
from app.store.errors import is_unavailable
from app.store.runs import RunStore
from tests.conftest import make_settings
from tests.helpers import drive_once, results_for, run_body, suspended_run, wait_for

SESSION = sa.select(
    sa.func.current_setting("enable_seqscan"),
    sa.func.current_setting("plan_cache_mode"),
    sa.func.pg_backend_pid(),
)


async def _direct_pool(url: str, size: int) -> AsyncIterator[DirectPool]:
    """The hot path on an engine of `size` connections (a query waits 5 s at most)."""
    engine = create_engine(url, pool_size=size, pool_timeout=5)
    pool = DirectPool(engine)
    yield pool
    await pool.aclose()
    await engine.dispose()


@pytest.fixture
async def one_connection(postgres_url: str) -> AsyncIterator[DirectPool]:
    async for pool in _direct_pool(postgres_url, 1):
        yield pool


@pytest.fixture
async def two_connections(postgres_url: str) -> AsyncIterator[DirectPool]:
    async for pool in _direct_pool(postgres_url, 2):
        yield pool


async def _sqlalchemy(pool: DirectPool, autocommit: bool = False) -> tuple[str, str, int]:
    engine = pool.engine.execution_options(isolation_level="AUTOCOMMIT") if autocommit else None
    async with (engine or pool.engine).connect() as conn:
        row = (await conn.execute(SESSION)).one()
    return (row[0], row[1], row[2])


async def test_the_lifecycle_settings_hold_for_the_direct_path_only(
    one_connection: DirectPool,
) -> None:
    session = compile_statement(SESSION, one_connection.engine.dialect)
    hot = await one_connection.fetchone(session, {})
    assert hot[:2] == ("off", "force_generic_plan")
    # The same server session (one pool), back at the defaults for everything else.
    assert await _sqlalchemy(one_connection) == ("on", "auto", hot[2])
    assert (await one_connection.fetchone(session, {}))[:2] == ("off", "force_generic_plan")
    assert await _sqlalchemy(one_connection, autocommit=True) == ("on", "auto", hot[2])


def _pid(pool: DirectPool) -> Compiled:
    return compile_statement(sa.select(sa.func.pg_backend_pid()), pool.engine.dialect)


async def test_the_hot_path_keeps_a_connection_for_its_next_statements_then_gives_it_back(
    two_connections: DirectPool,
) -> None:
    pool = two_connections.engine.sync_engine.pool
    checkouts: list[object] = []
    sa.event.listen(pool, "checkout", lambda *args: checkouts.append(args))
    for _ in range(5):
        await two_connections.fetchone(_pid(two_connections), {})
    assert len(checkouts) == 1  # one checkout for statements in quick succession
    assert pool.checkedout() == 1  # kept for the next statement
    await asyncio.sleep(IDLE_SECONDS * 4)
    assert pool.checkedout() == 0  # given back once unused
    await two_connections.fetchone(_pid(two_connections), {})
    assert len(checkouts) == 2


async def _hot_beside_sqlalchemy(pool: DirectPool, tasks: int) -> tuple[list[float], list[float]]:
    """`tasks` tasks issuing hot statements back to back (never a moment when their
    connections sit unused) while five SQLAlchemy queries run beside them, one after
    another: (each query's wait, each hot statement's time)."""
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    statements: list[float] = []

    async def busy() -> None:
        while not stop.is_set():
            started = loop.time()
            await pool.fetchone(_pid(pool), {})
            statements.append(loop.time() - started)

    running = [asyncio.create_task(busy()) for _ in range(tasks)]
    waits = []
    try:
        await asyncio.sleep(0)  # the hot tasks hold their connections first
        for _ in range(5):
            started = loop.time()
            assert (await _sqlalchemy(pool))[:2] == ("on", "auto")
            waits.append(loop.time() - started)
    finally:
        stop.set()
        await asyncio.gather(*running)
    return waits, statements


async def test_sqlalchemy_gets_a_connection_while_the_hot_path_runs_without_pause(
    one_connection: DirectPool,
) -> None:
    """One connection and a task on it without pause: each SQLAlchemy query gets the
    connection after a statement or so, not after the pool's timeout."""
    waits, statements = await _hot_beside_sqlalchemy(one_connection, 1)
    assert len(statements) >= 5  # the hot path ran between the queries
    assert max(waits) < 1.0, waits  # (the pool's timeout here is 5 s)


async def test_many_hot_tasks_and_sqlalchemy_share_a_small_pool_without_a_convoy(
    two_connections: DirectPool,
) -> None:
    """Twelve hot tasks on two connections: no statement and no query waits for a
    connection kept for another task (kept ones would hand the pool over one
    LEND_SECONDS at a time)."""
    waits, statements = await _hot_beside_sqlalchemy(two_connections, 12)
    assert max(waits) < LEND_SECONDS / 2, waits
    assert max(statements) < LEND_SECONDS / 2, max(statements)


async def test_a_connection_whose_settings_failed_is_not_kept(
    two_connections: DirectPool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The session settings are SET when the hot path takes a connection from the pool;
    one whose SET the server refused must not serve the next hot statement unset."""
    monkeypatch.setattr(direct, "_SET", "SET plan_cache_mode = no_such_mode")
    with pytest.raises(Exception, match="plan_cache_mode"):
        await two_connections.fetchone(_pid(two_connections), {})
    monkeypatch.undo()
    session = compile_statement(SESSION, two_connections.engine.dialect)
    assert (await two_connections.fetchone(session, {}))[:2] == ("off", "force_generic_plan")


async def test_a_kept_connection_of_a_disposed_engine_is_closed(
    two_connections: DirectPool,
) -> None:
    """An engine disposed of while the hot path keeps one of its connections (its store
    not closed first): that connection is closed, not left open, and the next hot
    statement runs on the engine's new pool."""
    first = (await two_connections.fetchone(_pid(two_connections), {}))[0]
    await two_connections.engine.dispose()
    url = two_connections.engine.url.set(drivername="postgresql")
    dsn = url.render_as_string(hide_password=False)
    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as admin:

        async def backends() -> int:
            cursor = await admin.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE pid = %s", (first,)
            )
            row = await cursor.fetchone()
            assert row is not None
            return int(row[0])

        # (its backend leaves pg_stat_activity a moment after the close, on the server)
        await wait_for(backends, lambda n: n == 0, timeout=10)
    assert (await two_connections.fetchone(_pid(two_connections), {}))[0] != first


async def test_a_process_never_holds_more_connections_than_its_pool(
    empty_postgres_url: str,
) -> None:
    store = RunStore(create_engine(empty_postgres_url, pool_size=2))
    service = RunService(store, make_settings(empty_postgres_url))
    database = empty_postgres_url.rsplit("/", 1)[1]
    seen: list[int] = []

    async def observe(stop: asyncio.Event) -> None:
        async with await psycopg.AsyncConnection.connect(
            empty_postgres_url, autocommit=True
        ) as conn:
            while not stop.is_set():
                cursor = await conn.execute(
                    "SELECT count(*) FROM pg_stat_activity"
                    " WHERE datname = %s AND pid <> pg_backend_pid()",
                    (database,),
                )
                row = await cursor.fetchone()
                seen.append(row[0] if row else 0)
                await asyncio.sleep(0.005)

    async def one_run() -> None:
        view, _ = await service.create_run(run_body())
        await store.get(view.record.id, scope=Scope.ALL)  # the direct path
        await store.events(view.record.id)  # SQLAlchemy's

    stop = asyncio.Event()
    watcher = asyncio.create_task(observe(stop))
    try:
        await asyncio.gather(*(one_run() for _ in range(60)))
    finally:
        stop.set()
        await watcher
        await store.aclose()
    assert seen and max(seen) <= 2, max(seen)


async def test_a_connection_the_pool_must_replace_is_replaced(
    one_connection: DirectPool,
) -> None:
    """A pooled connection due for a new one (here soft-invalidated: as after a recycle)
    is replaced on its next checkout; one the server ended fails one statement as an
    outage (503 / give-back) and is replaced for the next."""
    pid = compile_statement(sa.select(sa.func.pg_backend_pid()), one_connection.engine.dialect)
    first = (await one_connection.fetchone(pid, {}))[0]
    async with one_connection.engine.connect() as conn:  # due for a new connection
        (await conn.get_raw_connection()).invalidate(soft=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        second = (await one_connection.fetchone(pid, {}))[0]
        gc.collect()  # an abandoned connect attempt would warn as it is collected
    assert second != first
    assert not [w for w in caught if issubclass(w.category, RuntimeWarning)], caught

    url = one_connection.engine.url.set(drivername="postgresql")
    dsn = url.render_as_string(hide_password=False)
    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as admin:
        await admin.execute("SELECT pg_terminate_backend(%s)", (second,))  # the server ends it
    with pytest.raises(Exception) as failed:
        await one_connection.fetchone(pid, {})
    assert is_unavailable(failed.value)
    assert (await one_connection.fetchone(pid, {}))[0] not in (first, second)


@pytest.mark.parametrize("pgbouncer", [False, True])
async def test_an_engine_for_pgbouncer_leaves_nothing_in_a_server_session(
    empty_postgres_url: str, pgbouncer: bool
) -> None:
    """Transaction pooling hands each transaction any server session: a statement
    prepared under a name, or a SET, would be found (or not) by other clients'.
    (A database of its own: `drive_once` claims the next due run, which must be its.)"""
    engine = create_engine(empty_postgres_url, pool_size=1, pgbouncer=pgbouncer)
    store = RunStore(engine)
    settings = make_settings(empty_postgres_url)
    try:
        service = RunService(store, settings)
        suspended = await suspended_run(service)
        await service.submit_tool_results(
            results_for(suspended), run_id=suspended.record.id, scope=Scope.ALL
        )
        await drive_once(store, settings)
        await store.events(suspended.record.id)
        direct = DirectPool(engine)
        prepared = sa.select(sa.func.count()).select_from(sa.text("pg_prepared_statements"))
        named = (await direct.fetchone(compile_statement(prepared, engine.dialect), {}))[0]
        session = await direct.fetchone(compile_statement(SESSION, engine.dialect), {})
        await direct.aclose()
    finally:
        await store.aclose()
    if pgbouncer:
        assert named == 0
        assert session[:2] == ("on", "auto")
    else:
        assert named > 0  # the statements are prepared once per connection
        assert session[:2] == ("off", "force_generic_plan")
