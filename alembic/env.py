"""Alembic environment: the URL comes from `agentrun migrate` (or AGENTRUN_DATABASE_URL)."""

from __future__ import annotations

from sqlalchemy import create_engine, pool

from alembic import context
from app.settings import get_settings
from app.store.backend.engines import is_sqlite, sync_url
from app.store.schema import metadata

config = context.config
url = config.get_main_option("sqlalchemy.url") or get_settings().database_url


def run_migrations_offline() -> None:
    context.configure(url=sync_url(url), target_metadata=metadata, literal_binds=True)
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    engine = create_engine(sync_url(url), poolclass=pool.NullPool)
    with engine.connect() as connection:
        context.configure(
            connection=connection,
            target_metadata=metadata,
            render_as_batch=is_sqlite(url),
            compare_type=True,
        )
        with context.begin_transaction():
            context.run_migrations()
    engine.dispose()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
