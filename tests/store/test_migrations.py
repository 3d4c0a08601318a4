"""The models (app.store.schema) and the Alembic revisions never drift apart."""

from __future__ import annotations

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import create_engine

from app.store.db import sync_url
from app.store.schema import metadata


def test_models_and_migrations_do_not_drift(database_url: str) -> None:
    engine = create_engine(sync_url(database_url))
    with engine.connect() as conn:
        context = MigrationContext.configure(conn, opts={"compare_type": True})
        diff = compare_metadata(context, metadata)
    engine.dispose()
    assert diff == [], f"schema drift between app/store/schema.py and alembic/: {diff}"


def test_migrations_are_at_head(database_url: str) -> None:
    from alembic.script import ScriptDirectory

    from app.store.migrate import alembic_config

    engine = create_engine(sync_url(database_url))
    with engine.connect() as conn:
        current = MigrationContext.configure(conn).get_current_revision()
    engine.dispose()
    head = ScriptDirectory.from_config(alembic_config(database_url)).get_current_head()
    assert current == head
