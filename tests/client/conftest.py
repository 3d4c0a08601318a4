"""The client against the real server: in-process over `httpx.ASGITransport` where the
response is not a stream, and on a loopback port (uvicorn in a thread, workers in-process)
for live events, `wait` and the executors."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass

import httpx
import pytest
from fastapi import FastAPI

from agentrun_client import AsyncClient, Client
from app.main import create_app
from app.settings import Settings
from tests.conftest import make_settings
from tests.mocks.uvicorn_thread import serve_in_thread
from tests.ports import free_port

KEY = "client-key"
SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"


def scripted(*script: dict[str, object], **params: object) -> dict[str, object]:
    """A `scripted` model spec; with no script it calls every tool once with `{}`, then
    answers `Tool results: <name>: <output>; ...`."""
    spec: dict[str, object] = {"provider": "scripted", "name": "demo", **params}
    if script:
        spec["script"] = list(script)
    return spec


def server_settings(database_url: str, port: int, **overrides: object) -> Settings:
    return make_settings(
        database_url,
        api_keys=KEY,
        public_url=f"http://127.0.0.1:{port}",
        webhook_secret=SECRET,
        webhook_allow_private=True,
        **overrides,
    )


@dataclass
class Live:
    base_url: str
    settings: Settings

    def client(self, **kw: object) -> Client:
        return Client(self.base_url, KEY, **kw)  # type: ignore[arg-type]

    def async_client(self, **kw: object) -> AsyncClient:
        return AsyncClient(self.base_url, KEY, **kw)  # type: ignore[arg-type]


def serve(database_url: str) -> Iterator[Live]:
    port = free_port()
    settings = server_settings(database_url, port)
    with serve_in_thread(create_app(settings, worker_slots=2), port) as base:
        yield Live(base, settings)


@pytest.fixture
def live(database_url: str) -> Iterator[Live]:
    """The API with two worker slots on a loopback port (both databases)."""
    yield from serve(database_url)


@pytest.fixture
def live_sqlite(sqlite_url: str) -> Iterator[Live]:
    """The same on SQLite only, whose streams see each commit within 20 ms."""
    yield from serve(sqlite_url)


@pytest.fixture
async def asgi_app(sqlite_url: str) -> AsyncIterator[FastAPI]:
    """The in-process API (one worker slot), its lifespan running."""
    settings = server_settings(sqlite_url, 9, auth_failure_limit=3)
    app = create_app(settings, worker_slots=1)
    async with app.router.lifespan_context(app):
        yield app


@pytest.fixture
async def asgi(asgi_app: FastAPI) -> AsyncIterator[AsyncClient]:
    """An `AsyncClient` on the in-process API over `httpx.ASGITransport`."""
    transport = httpx.ASGITransport(app=asgi_app)
    async with AsyncClient("http://test", KEY, transport=transport) as client:
        yield client
