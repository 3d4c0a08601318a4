"""The backend of an engine's dialect: the one place the store asks which database it is."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncEngine

from app.store.backend.base import Backend
from app.store.backend.postgres import PostgresBackend
from app.store.backend.sqlite import SqliteBackend


def backend_for(engine: AsyncEngine, *, webhook_url: str | None = None) -> Backend:
    """PostgreSQL's or SQLite's backend for `engine`; `webhook_url`: the deployment's
    global webhook endpoint (every run's webhook events also go there)."""
    if engine.dialect.name == "postgresql":
        return PostgresBackend(engine, webhook_url)
    if engine.dialect.name == "sqlite":
        return SqliteBackend(engine, webhook_url)
    raise ValueError(f"unsupported database {engine.dialect.name!r}")
