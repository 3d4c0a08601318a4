"""The AG-UI endpoint in process (both back ends): the app with a worker slot of its own,
so the runs it starts are driven while a test reads their streams."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from app.settings import Settings
from app.store.runs import RunStore
from tests.conftest import make_settings
from tests.mocks.server import mock, mock_server

__all__ = ["agui_settings", "client", "mock", "mock_server"]

KEY = "agui-key-1"
OTHER = "agui-key-2"


@pytest.fixture
def agui_settings(database_url: str, store: RunStore) -> Settings:
    """Settings with API keys; `store` is requested so the tables are emptied first."""
    return make_settings(database_url, api_keys=KEY)


@pytest.fixture
async def client(agui_settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    from app.main import create_app

    app = create_app(agui_settings, worker_slots=1)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app),
            base_url="http://test",
            headers={"Authorization": f"Bearer {KEY}"},
            timeout=30,
        ) as c,
    ):
        c.app = app  # type: ignore[attr-defined]
        yield c
