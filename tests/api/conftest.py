"""An in-process API client per test (both back ends), with and without API keys."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from app.settings import Settings
from app.store.runs import RunStore
from tests.conftest import make_settings
from tests.helpers import api_client

KEY = "test-key-1"


@pytest.fixture
def api_settings(database_url: str, store: RunStore) -> Settings:
    """Settings with API keys; `store` is requested so the tables are emptied first."""
    return make_settings(database_url, api_keys=f"{KEY},second-key", max_body_bytes=20_000)


@pytest.fixture
async def client(api_settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    async with api_client(api_settings, KEY) as c:
        yield c
