"""An in-process API client per test (both back ends), with and without API keys."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from app.api.app import create_app
from app.settings import Settings
from app.store.runs import RunStore
from tests.conftest import make_settings

KEY = "test-key-1"


@pytest.fixture
def api_settings(database_url: str, store: RunStore) -> Settings:
    """Settings with API keys; `store` is requested so the tables are emptied first."""
    return make_settings(database_url, api_keys=f"{KEY},second-key", max_body_bytes=20_000)


@pytest.fixture
async def client(api_settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(api_settings)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(
            transport=transport,
            base_url="http://test",
            headers={"Authorization": f"Bearer {KEY}"},
        ) as c:
            c.app = app  # type: ignore[attr-defined]
            yield c
