"""Every /v1 route refuses a missing or wrong key; open mode only on loopback."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from app.api.security import is_loopback
from app.api.server import run_server
from app.main import create_app
from app.settings import Settings

ROUTES = [
    ("post", "/v1/runs"),
    ("get", "/v1/runs"),
    ("get", "/v1/runs/run_x"),
    ("post", "/v1/runs/run_x/tool-results"),
    ("post", "/v1/runs/run_x/resolution"),
    ("post", "/v1/runs/run_x/cancel"),
    ("get", "/v1/runs/run_x/events"),
]


@pytest.mark.parametrize(("method", "path"), ROUTES)
@pytest.mark.parametrize("header", [None, "Bearer wrong", "Basic dGVzdA==", "Bearer "])
async def test_every_v1_route_refuses_a_missing_or_wrong_key(
    client: httpx.AsyncClient, method: str, path: str, header: str | None
) -> None:
    headers = {"Authorization": header} if header is not None else {}
    anonymous = httpx.AsyncClient(transport=client._transport, base_url="http://test")
    response = await anonymous.request(method, path, headers=headers, json={})
    await anonymous.aclose()
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == "Bearer"
    assert response.json()["type"] == "/problems/unauthorized"


async def test_the_second_key_works_too(client: httpx.AsyncClient) -> None:
    response = await client.get("/v1/runs", headers={"Authorization": "Bearer second-key"})
    assert response.status_code == 200


async def test_open_mode_accepts_requests_without_a_key(database_url: str) -> None:
    from tests.conftest import make_settings

    app = create_app(make_settings(database_url, api_keys=""))
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test") as c,
    ):
        assert (await c.get("/v1/runs")).status_code == 200


def test_loopback_detection() -> None:
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("10.1.2.3")


def test_open_mode_refuses_to_start_off_loopback(capsys: pytest.CaptureFixture[str]) -> None:
    def make_app(settings: Settings) -> Any:
        raise AssertionError("the app was built although the server refuses to start")

    code = run_server(Settings(api_keys=""), make_app, host="0.0.0.0", port=1)
    assert code == 2
    assert "refusing to start" in capsys.readouterr().err
