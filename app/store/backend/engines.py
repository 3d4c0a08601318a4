"""Engines: one configured URL for the CLI, Alembic and the async app.

On PostgreSQL a process keeps one pool (SQLAlchemy's, on asyncpg): the store's hot
statements borrow raw connections from it (app.store.backend.pg_direct), everything else goes
through SQLAlchemy, so a process never holds more than its pool plus one LISTEN
connection (README, "Connection budget").
"""

from __future__ import annotations

from collections.abc import Generator
from typing import TYPE_CHECKING, Any

import asyncpg  # type: ignore[import-untyped]
import orjson
from sqlalchemy import event
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

if TYPE_CHECKING:
    from app.settings import Settings

#: A process's pool when AGENTRUN_DATABASE_POOL_SIZE is unset (README, "Connection
#: budget"): what it holds at once is the statements in flight, not its slots (a slot
#: waiting on a model call holds no connection), and one event loop keeps few in flight.
DEFAULT_POOL_SIZE = 4

#: An engine option (read with `transaction_pooled`): the URL is a PgBouncer in
#: transaction mode.
TRANSACTION_POOLED = "agentrun_transaction_pooled"


def async_url(url: str) -> str:
    """PostgreSQL (whatever driver the URL names) → asyncpg, `sqlite:///` → aiosqlite."""
    u = make_url(url)
    if u.drivername.split("+")[0] in ("postgresql", "postgres"):
        u = u.set(drivername="postgresql+asyncpg")
    elif u.drivername == "sqlite":
        u = u.set(drivername="sqlite+aiosqlite")
    return u.render_as_string(hide_password=False)


def sync_url(url: str) -> str:
    """The same database for synchronous tools (Alembic)."""
    u = make_url(url)
    if u.drivername in ("postgresql", "postgres", "postgresql+psycopg2", "postgresql+psycopg"):
        u = u.set(drivername="postgresql+psycopg")
    elif u.drivername.startswith("sqlite"):
        u = u.set(drivername="sqlite")
    return u.render_as_string(hide_password=False)


def is_sqlite(url: str) -> bool:
    return make_url(url).drivername.startswith("sqlite")


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA busy_timeout=10000")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


def _json_dumps(value: Any) -> str:
    return orjson.dumps(value).decode()


JSON_OPTIONS: dict[str, Any] = {"json_serializer": _json_dumps, "json_deserializer": orjson.loads}


class _Connect:
    """`asyncpg.connect(...)`, started only when awaited. The direct path checks pooled
    connections out without SQLAlchemy's greenlet and falls back to it when the pool must
    reconnect (app.store.backend.pg_direct): the attempt drops this unstarted, where a coroutine
    would be reported as never awaited."""

    __slots__ = ("args", "kwargs")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.args, self.kwargs = args, kwargs

    def __await__(self) -> Generator[Any, None, Any]:
        return asyncpg.connect(*self.args, **self.kwargs).__await__()  # type: ignore[no-any-return]


def _unnamed() -> str:
    return ""  # asyncpg: an unnamed statement, parsed and run without a Sync between


def transaction_pooled(engine: AsyncEngine) -> bool:
    """Whether `engine` reaches PostgreSQL through a transaction-mode pooler."""
    return bool(engine.get_execution_options().get(TRANSACTION_POOLED, False))


def create_engine(
    url: str,
    *,
    pool_size: int = DEFAULT_POOL_SIZE,
    pool_timeout: float = 30.0,
    pgbouncer: bool = False,
) -> AsyncEngine:
    """The process's engine. On PostgreSQL its pool is the process's only one: `pool_size`
    connections and no overflow, so the budget is a hard bound; a task that finds them all
    busy waits up to `pool_timeout` seconds. With `pgbouncer` (transaction mode) no
    statement is prepared under a name: a named statement lives in one server session,
    and the next transaction may run on another."""
    if is_sqlite(url):
        engine = create_async_engine(async_url(url), **JSON_OPTIONS)
        event.listen(engine.sync_engine, "connect", _sqlite_pragmas)
        # Let BEGIN take the write lock at once (BEGIN IMMEDIATE): no upgrade deadlocks.
        event.listen(
            engine.sync_engine, "begin", lambda conn: conn.exec_driver_sql("BEGIN IMMEDIATE")
        )
        event.listen(
            engine.sync_engine,
            "connect",
            lambda dbapi_conn, _rec: setattr(dbapi_conn, "isolation_level", None),
        )
        return engine
    connect_args: dict[str, Any] = {"async_creator_fn": _Connect}
    if pgbouncer:
        connect_args |= {
            "statement_cache_size": 0,  # asyncpg's own cache (the direct path)
            "prepared_statement_cache_size": 0,  # SQLAlchemy's
            "prepared_statement_name_func": _unnamed,
        }
    return create_async_engine(
        async_url(url),
        pool_size=max(1, pool_size),
        max_overflow=0,
        pool_timeout=pool_timeout,
        pool_recycle=1800,
        connect_args=connect_args,
        execution_options={TRANSACTION_POOLED: pgbouncer},
        **JSON_OPTIONS,
    )


def engine_for(settings: Settings, *, pool_size: int | None = None) -> AsyncEngine:
    """The engine of an `api`, `serve` or `worker` process, as the settings configure it
    (`pool_size`, when given, over AGENTRUN_DATABASE_POOL_SIZE)."""
    return create_engine(
        settings.database_url,
        pool_size=pool_size or settings.database_pool_size or DEFAULT_POOL_SIZE,
        pool_timeout=settings.database_pool_timeout,
        pgbouncer=settings.database_pgbouncer,
    )
