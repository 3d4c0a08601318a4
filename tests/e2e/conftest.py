"""Fixtures of the end-to-end tests (real processes on PostgreSQL)."""

from __future__ import annotations

import pytest

from tests.helpers import CLEAN_TABLES


@pytest.fixture
def clean_postgres(postgres_url: str) -> str:
    import psycopg

    with psycopg.connect(postgres_url, autocommit=True) as conn:
        for table in CLEAN_TABLES:
            conn.execute(f"DELETE FROM {table}")
    return postgres_url
