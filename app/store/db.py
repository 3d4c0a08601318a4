"""Engines: one configured URL for the CLI, Alembic and the async app."""

from __future__ import annotations

from typing import Any

import orjson
from sqlalchemy import event
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine


def async_url(url: str) -> str:
    """`postgresql://` → psycopg 3, `sqlite:///` → aiosqlite; explicit drivers are kept."""
    u = make_url(url)
    if u.drivername in ("postgresql", "postgres", "postgresql+psycopg2"):
        u = u.set(drivername="postgresql+psycopg")
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


def create_engine(url: str, *, pool_size: int = 10) -> AsyncEngine:
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
    return create_async_engine(
        async_url(url),
        pool_size=pool_size,
        max_overflow=pool_size,
        pool_recycle=1800,
        **JSON_OPTIONS,
    )
