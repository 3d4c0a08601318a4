"""Failed authentications are throttled per client address: the API's bearer keys and the
dashboard's login form (app.api.throttle)."""

from __future__ import annotations

import httpx
from fastapi import FastAPI

from app.api.throttle import FailureThrottle
from app.clock import FakeClock
from app.main import create_app
from app.settings import Settings
from tests.api.conftest import KEY
from tests.conftest import make_settings
from tests.dashboard.conftest import csrf_of


def test_an_address_is_refused_after_limit_failures_until_the_oldest_leaves_the_window() -> None:
    clock = FakeClock(monotonic=1000.0)
    throttle = FailureThrottle(limit=3, window=60, clock=clock)
    for _ in range(2):
        throttle.failed("10.0.0.1")
        clock.advance(10)
    assert throttle.retry_after("10.0.0.1") is None
    throttle.failed("10.0.0.1")  # failures at 1000, 1010, 1020
    assert throttle.retry_after("10.0.0.1") == 40.0  # the first leaves the window at 1060
    assert throttle.retry_after("10.0.0.2") is None  # per address
    clock.advance(40)  # (1060)
    assert throttle.retry_after("10.0.0.1") is None
    clock.advance(940)  # (2000)
    throttle.failed("10.0.0.1")
    assert throttle.retry_after("10.0.0.1") is None  # old failures forgotten


def test_memory_is_bounded_by_forgetting_the_least_recent_addresses() -> None:
    throttle = FailureThrottle(limit=1, window=60, clock=FakeClock(), max_addresses=2)
    for address in ("a", "b", "c"):
        throttle.failed(address)
    assert throttle.retry_after("a") is None
    assert throttle.retry_after("b") is not None and throttle.retry_after("c") is not None


def test_a_limit_of_zero_turns_throttling_off() -> None:
    throttle = FailureThrottle(limit=0, window=60, clock=FakeClock())
    throttle.failed("a")
    assert throttle.retry_after("a") is None


def _client(app: FastAPI, address: str, key: str | None) -> httpx.AsyncClient:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    transport = httpx.ASGITransport(app=app, client=(address, 40000))
    return httpx.AsyncClient(transport=transport, base_url="http://test", headers=headers)


async def test_wrong_keys_from_one_address_get_429_with_retry_after(database_url: str) -> None:
    settings: Settings = make_settings(database_url, api_keys=KEY, auth_failure_limit=5)
    app = create_app(settings)
    async with app.router.lifespan_context(app):
        guesser = _client(app, "198.51.100.7", "wrong")
        for _ in range(5):
            assert (await guesser.get("/v1/runs")).status_code == 401
        refused = await guesser.get("/v1/runs")
        assert refused.status_code == 429
        assert refused.headers["content-type"] == "application/problem+json"
        assert refused.json()["type"] == "/problems/too-many-failed-authentications"
        assert 0 < int(refused.headers["retry-after"]) <= 60
        same_address_valid = _client(app, "198.51.100.7", KEY)
        assert (await same_address_valid.get("/v1/runs")).status_code == 429
        elsewhere = _client(app, "198.51.100.8", KEY)
        assert (await elsewhere.get("/v1/runs")).status_code == 200
        for c in (guesser, same_address_valid, elsewhere):
            await c.aclose()


async def test_wrong_dashboard_logins_are_throttled_too(database_url: str) -> None:
    settings: Settings = make_settings(database_url, api_keys=KEY, auth_failure_limit=3)
    app = create_app(settings)
    async with app.router.lifespan_context(app):
        browser = _client(app, "203.0.113.5", None)

        async def attempt(key: str) -> httpx.Response:
            page = await browser.get("/admin/login")
            return await browser.post(
                "/admin/login",
                data={"api_key": key, "csrf_token": csrf_of(page.text), "next": "/admin"},
            )

        for _ in range(3):
            assert (await attempt("wrong")).status_code == 401
        refused = await attempt(KEY)  # even the right key waits now
        assert refused.status_code == 429
        assert "Too many failed logins" in refused.text
        assert int(refused.headers["retry-after"]) > 0
        await browser.aclose()
