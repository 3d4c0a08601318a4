"""Fixtures of the end-to-end tests (real processes on PostgreSQL; `mock`: the mock
provider the processes may call over HTTP)."""

from __future__ import annotations

import pytest

from tests.helpers import CLEAN_TABLES
from tests.mocks.server import mock, mock_server

__all__ = ["clean_postgres", "mock", "mock_server"]


@pytest.fixture
def clean_postgres(postgres_url: str) -> str:
    import psycopg

    with psycopg.connect(postgres_url, autocommit=True) as conn:
        for table in CLEAN_TABLES:
            conn.execute(f"DELETE FROM {table}")
    return postgres_url
