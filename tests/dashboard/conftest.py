"""An in-process dashboard client per test (both back ends), helpers to log in and to
read the CSRF token off a page, and the app's services the dashboard's tests drive
(`people`: operator accounts, emptied before and after; `agents`; `approvals`)."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator

import httpx
import pytest
from fastapi import FastAPI

from app.agents.service import AgentService
from app.approvals.service import ApprovalService
from app.main import create_app
from app.service.runs import RunService
from app.settings import Settings
from app.store.runs import RunStore
from app.tenancy.operators import OperatorService
from tests.conftest import make_settings
from tests.people import reset_people

KEY = "dash-key-1"
CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')


def csrf_of(html: str) -> str:
    match = CSRF.search(html)
    assert match, "no CSRF token on the page"
    return match.group(1)


@pytest.fixture
def dash_settings(database_url: str, store: RunStore) -> Settings:
    """Settings with API keys; `store` is requested so the tables are emptied first."""
    return make_settings(database_url, api_keys=f"{KEY},other-key")


@pytest.fixture
async def app(dash_settings: Settings) -> AsyncIterator[FastAPI]:
    app = create_app(dash_settings)
    async with app.router.lifespan_context(app):
        yield app


@pytest.fixture
def service(app: FastAPI) -> RunService:
    service: RunService = app.state.service
    return service


@pytest.fixture
async def anon(app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    """A browser-like client without a login (cookies kept, redirects not followed)."""
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://dashboard.test") as c:
        yield c


async def log_in(client: httpx.AsyncClient, key: str = KEY) -> str:
    """Log in through the form; the CSRF token of the new session."""
    page = await client.get("/admin/login")
    assert page.status_code == 200
    response = await client.post(
        "/admin/login", data={"api_key": key, "csrf_token": csrf_of(page.text), "next": "/admin"}
    )
    assert response.status_code == 303, response.text
    home = await client.get("/admin")
    assert home.status_code == 200
    return csrf_of(home.text)


@pytest.fixture
async def admin(anon: httpx.AsyncClient) -> httpx.AsyncClient:
    """A logged-in client; its CSRF token is `admin.csrf`."""
    anon.csrf = await log_in(anon)  # type: ignore[attr-defined]
    return anon


@pytest.fixture
async def people(app: FastAPI, store: RunStore) -> AsyncIterator[OperatorService]:
    await reset_people(store)
    service: OperatorService = app.state.operators
    yield service
    await reset_people(store)


@pytest.fixture
def agents(app: FastAPI) -> AgentService:
    service: AgentService = app.state.agents
    return service


@pytest.fixture
def approvals(app: FastAPI) -> ApprovalService:
    service: ApprovalService = app.state.approvals
    return service
