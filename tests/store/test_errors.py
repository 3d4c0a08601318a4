"""Which failures count as a database outage (503 and a give-back) and which stay bugs."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import asyncpg  # type: ignore[import-untyped]
import psycopg
import pytest
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import create_async_engine

from app.store.errors import is_unavailable
from tests.ports import free_port


async def test_refused_connections_of_every_driver_are_outages() -> None:
    port = free_port()  # nothing listens there
    with pytest.raises(Exception) as raw:
        await asyncpg.connect(f"postgresql://u@127.0.0.1:{port}/d", timeout=5)
    assert is_unavailable(raw.value)
    with pytest.raises(Exception) as sync:
        psycopg.connect(f"postgresql://u@127.0.0.1:{port}/d", connect_timeout=5)
    assert is_unavailable(sync.value)
    engine = create_async_engine(f"postgresql+psycopg://u@127.0.0.1:{port}/d")
    try:
        with pytest.raises(Exception) as wrapped:
            async with engine.connect() as conn:
                await conn.execute(sa.text("SELECT 1"))
        assert is_unavailable(wrapped.value)
    finally:
        await engine.dispose()


async def test_a_server_that_ends_the_session_is_an_outage(postgres_url: str) -> None:
    dsn = postgres_url.replace("postgresql+psycopg://", "postgresql://")
    victim = await asyncpg.connect(dsn)
    killer = await asyncpg.connect(dsn)
    try:
        await killer.execute("SELECT pg_terminate_backend($1)", victim.get_server_pid())
        with pytest.raises(Exception) as ended:
            await victim.execute("SELECT 1")
        assert is_unavailable(ended.value)
    finally:
        await killer.close()
        victim.terminate()


async def test_errors_of_the_statement_are_not_outages(postgres_url: str) -> None:
    dsn = postgres_url.replace("postgresql+psycopg://", "postgresql://")
    conn = await asyncpg.connect(dsn)
    try:
        with pytest.raises(asyncpg.PostgresError) as syntax:
            await conn.execute("SELEC 1")
        assert not is_unavailable(syntax.value)
        with pytest.raises(asyncpg.PostgresError) as division:
            await conn.execute("SELECT 1/0")
        assert not is_unavailable(division.value)
    finally:
        await conn.close()
    assert not is_unavailable(ValueError("a bug"))
    try:
        try:
            raise ConnectionRefusedError("refused")
        except ConnectionRefusedError:
            raise KeyError("a bug while handling it") from None
    except KeyError as bug:
        assert not is_unavailable(bug)


def test_a_task_group_of_outages_is_an_outage_and_a_mixed_one_is_not() -> None:
    outage = ConnectionResetError("reset")
    assert is_unavailable(ExceptionGroup("sse", [outage]))
    assert not is_unavailable(ExceptionGroup("sse", [outage, ValueError("bug")]))


async def test_a_sqlite_lock_held_past_the_busy_timeout_is_an_outage(tmp_path: Path) -> None:
    """Another connection holding SQLite's write lock for the whole busy timeout is an
    outage (503, retry in a moment: the statement did not run); a bad statement is not."""
    path = tmp_path / "locked.db"
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("CREATE TABLE t (x INTEGER)")
    holder.execute("BEGIN IMMEDIATE")
    engine = create_async_engine(f"sqlite+aiosqlite:///{path}", connect_args={"timeout": 0.1})
    try:
        with pytest.raises(Exception) as locked:
            async with engine.begin() as conn:
                await conn.execute(sa.text("INSERT INTO t VALUES (1)"))
        assert "database is locked" in str(locked.value)
        assert is_unavailable(locked.value)
        holder.execute("ROLLBACK")
        with pytest.raises(Exception) as bad:
            async with engine.begin() as conn:
                await conn.execute(sa.text("INSERT INTO missing VALUES (1)"))
        assert not is_unavailable(bad.value)
    finally:
        holder.close()
        await engine.dispose()
