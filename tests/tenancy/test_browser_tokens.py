"""Browser tokens: minted for one run, they read its events, wait and messages (as a
bearer header or `?access_token=`) and nothing else; expired, altered or foreign ones are
a 401 problem. The refusals are walked over every operation of the OpenAPI document, so a
new operation is covered without a new test."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from app.api.security import ACCESS_TOKEN
from app.clock import SYSTEM_CLOCK, FakeClock
from app.main import create_app
from app.service.reads import RunReads
from app.settings import Settings
from app.tenancy.browser_tokens import (
    DEFAULT_TTL_SECONDS,
    MAX_TTL_SECONDS,
    SECRET_NAME,
    BrowserTokens,
)
from tests.api.conftest import KEY
from tests.api.sse_client import read_events
from tests.conftest import make_settings
from tests.helpers import api_client, run_body
from tests.mocks.uvicorn_thread import serve_in_thread

#: The operations a browser token may call, as (method, path).
READS = {
    ("get", "/v1/runs/{run_id}/events"),
    ("get", "/v1/runs/{run_id}/wait"),
    ("get", "/v1/runs/{run_id}/messages"),
}


@pytest.fixture
def api_settings(database_url: str, store: object) -> Settings:
    """The API's settings, without throttling: the tests here fail to authenticate often
    on purpose (`test_failed_tokens_are_throttled` turns it back on)."""
    return make_settings(database_url, api_keys=KEY, auth_failure_limit=0)


async def new_run(client: httpx.AsyncClient) -> str:
    created = await client.post("/v1/runs", json=run_body().model_dump(mode="json"))
    assert created.status_code == 201, created.text
    run_id: str = created.json()["id"]
    return run_id


async def mint(client: httpx.AsyncClient, run_id: str, **body: Any) -> dict[str, Any]:
    response = await client.post(f"/v1/runs/{run_id}/browser-tokens", json=body)
    assert response.status_code == 201, response.text
    out: dict[str, Any] = response.json()
    return out


def anonymous(client: httpx.AsyncClient) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=client._transport, base_url="http://test")


async def signer(client: httpx.AsyncClient, offset: float = 0.0) -> BrowserTokens:
    """The service's own signer, its clock moved by `offset` seconds."""
    reads: RunReads = client.app.state.reads  # type: ignore[attr-defined]
    key = await reads.shared_secret(SECRET_NAME)
    return BrowserTokens(key, clock=FakeClock(datetime.now(UTC) + timedelta(seconds=offset)))


def assert_problem(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    body: dict[str, Any] = response.json()
    assert body["type"] == f"/problems/{code}"
    return body


async def test_a_token_reads_its_runs_events_wait_and_messages(
    client: httpx.AsyncClient,
) -> None:
    run_id = await new_run(client)
    before = datetime.now(UTC)
    minted = await mint(client, run_id)
    assert minted["run_id"] == run_id and minted["token"].startswith("arb_")
    expires = datetime.fromisoformat(minted["expires_at"].replace("Z", "+00:00"))
    assert abs((expires - before).total_seconds() - DEFAULT_TTL_SECONDS) < 5
    token = minted["token"]
    async with anonymous(client) as browser:
        for how in ("query", "header"):
            params = {ACCESS_TOKEN: token} if how == "query" else {}
            headers = {"Authorization": f"Bearer {token}"} if how == "header" else {}
            events = await browser.get(f"/v1/runs/{run_id}/events", params=params, headers=headers)
            assert events.status_code == 200, events.text
            assert events.json()["data"][0]["type"] == "run.created"
            waited = await browser.get(
                f"/v1/runs/{run_id}/wait",
                params={**params, "timeout": 0},
                headers=headers,
            )
            assert waited.status_code == 200 and waited.json()["id"] == run_id
            messages = await browser.get(
                f"/v1/runs/{run_id}/messages", params=params, headers=headers
            )
            assert messages.status_code == 200, messages.text
            assert "add 1+2" in messages.text


def test_a_token_streams_its_run_live_to_the_end(database_url: str, store: object) -> None:
    """The stream as an EventSource reads it: `?access_token=`, no header, until the run
    has ended (a real server with workers: the run suspends, is answered, completes)."""
    settings = make_settings(database_url, api_keys=KEY)
    admin_headers = {"Authorization": f"Bearer {KEY}"}
    with (
        serve_in_thread(create_app(settings, worker_slots=2)) as base,
        httpx.Client(base_url=base, headers=admin_headers, timeout=30) as admin,
        httpx.Client(base_url=base, timeout=30) as browser,
    ):
        run_id = admin.post("/v1/runs", json=run_body().model_dump(mode="json")).json()["id"]
        minted = admin.post(f"/v1/runs/{run_id}/browser-tokens", json={"ttl_seconds": 60})
        stream = {"Accept": "text/event-stream"}
        seen: list[str] = []
        url = f"/v1/runs/{run_id}/events"
        with browser.stream(
            "GET", url, params={ACCESS_TOKEN: minted.json()["token"]}, headers=stream
        ) as response:
            assert response.status_code == 200
            assert response.headers["content-type"].startswith("text/event-stream")
            for event in read_events(response):
                seen.append(event["event"])
                if event["event"] == "run.requires_action":
                    calls = admin.get(f"/v1/runs/{run_id}").json()["required_action"]
                    results = [
                        {"tool_call_id": c["id"], "output": str(sum(c["arguments"].values()))}
                        for c in calls["tool_calls"]
                    ]
                    answered = admin.post(
                        f"/v1/runs/{run_id}/tool-results", json={"results": results}
                    )
                    assert answered.status_code == 200, answered.text
    assert seen[0] == "run.created" and seen[-1] == "run.completed"
    assert "run.resumed" in seen


def _operations(app: Any) -> list[tuple[str, str, dict[str, Any]]]:
    out = []
    for path, item in app.openapi()["paths"].items():
        for method, operation in item.items():
            if "x-permission" in operation:
                out.append((method, path, operation))
    return out


def _fill(path: str, run_id: str) -> str:
    return re.sub(r"\{[^}]+\}", lambda m: run_id if m.group(0) == "{run_id}" else "x", path)


async def test_every_other_operation_refuses_a_token_and_another_run_is_missing(
    client: httpx.AsyncClient,
) -> None:
    run_id = await new_run(client)
    other = await new_run(client)
    token = (await mint(client, run_id))["token"]
    bearer = {"Authorization": f"Bearer {token}"}
    operations = _operations(client.app)  # type: ignore[attr-defined]
    marked = {(m, p) for m, p, op in operations if op.get("x-browser-token")}
    assert marked == READS
    async with anonymous(client) as browser:
        for method, path, operation in operations:
            if (method, path) in READS:
                for_other = await browser.request(
                    method, _fill(path, other), params={ACCESS_TOKEN: token, "timeout": 0}
                )
                body = assert_problem(for_other, 404, "run-not-found")
                assert body["detail"] == f"no run with id {other}"  # as a missing one
                continue
            refused = await browser.request(method, _fill(path, run_id), headers=bearer, json={})
            body = assert_problem(refused, 403, "forbidden")
            assert body["permission"] == operation["x-permission"], (method, path)
            assert body["role"] == "viewer"
            # Outside the three reads the query parameter is not read at all: no key.
            ignored = await browser.request(
                method, _fill(path, run_id), params={ACCESS_TOKEN: token}, json={}
            )
            assert_problem(ignored, 401, "unauthorized")
    # Nothing the token was refused changed anything: the run is still queued.
    assert (await client.get(f"/v1/runs/{run_id}")).json()["status"] == "queued"


async def test_expired_altered_and_foreign_tokens_are_a_401_problem(
    client: httpx.AsyncClient,
) -> None:
    run_id = await new_run(client)
    token = (await mint(client, run_id))["token"]
    expired, _ = (await signer(client, offset=-3600)).mint("default", run_id, 60)
    payload, _, signature = token.partition(".")
    # The first character of the signature: every one of its bits counts (the last
    # character's low bits are base64 padding, so changing it can leave the bytes alone).
    altered = f"{payload}.{'B' if signature[0] == 'A' else 'A'}{signature[1:]}"
    foreign_key, _ = BrowserTokens("not-this-services-key", clock=SYSTEM_CLOCK).mint(
        "default", run_id, 600
    )
    # The payload of another run, under the signature of this one: not valid either.
    forged = (await signer(client)).mint("default", "run_other", 600)[0].partition(".")[0]
    spliced = f"{forged}.{signature}"
    async with anonymous(client) as browser:
        for bad, says in (
            (expired, "expired"),
            (altered, "not valid"),
            (foreign_key, "not valid"),
            (spliced, "not valid"),
            ("arb_", "not valid"),
            (KEY, "browser token only"),  # an API key is never taken from a query
        ):
            for how in ("query", "header"):
                if how == "header" and not bad.startswith("arb_"):
                    continue
                params = {ACCESS_TOKEN: bad} if how == "query" else {}
                headers = {"Authorization": f"Bearer {bad}"} if how == "header" else {}
                response = await browser.get(
                    f"/v1/runs/{run_id}/events", params=params, headers=headers
                )
                body = assert_problem(response, 401, "browser-token-invalid")
                assert says in body["detail"], body
                assert response.headers["www-authenticate"] == "Bearer"
                assert bad not in response.text


async def test_failed_tokens_are_throttled(database_url: str, store: object) -> None:
    settings = make_settings(database_url, api_keys=KEY, auth_failure_limit=2)
    async with api_client(settings, KEY) as client:
        run_id = await new_run(client)
        token = (await mint(client, run_id))["token"]
        async with anonymous(client) as browser:
            path = f"/v1/runs/{run_id}/events"
            for bad in ("arb_x", KEY):
                response = await browser.get(path, params={ACCESS_TOKEN: bad})
                assert_problem(response, 401, "browser-token-invalid")
            throttled = await browser.get(path, params={ACCESS_TOKEN: token})
            assert_problem(throttled, 429, "too-many-failed-authentications")


@pytest.mark.parametrize(
    "body",
    [
        {"ttl_seconds": 0},
        {"ttl_seconds": MAX_TTL_SECONDS + 1},
        {"ttl_seconds": "900"},
        {"ttl_seconds": 1.5},
        {"ttl": 60},
    ],
)
async def test_a_bad_ttl_is_a_422(client: httpx.AsyncClient, body: dict[str, Any]) -> None:
    run_id = await new_run(client)
    response = await client.post(f"/v1/runs/{run_id}/browser-tokens", json=body)
    assert_problem(response, 422, "validation-error")


async def test_minting_takes_no_body_or_a_ttl_and_needs_an_existing_run(
    client: httpx.AsyncClient,
) -> None:
    run_id = await new_run(client)
    without_body = await client.post(f"/v1/runs/{run_id}/browser-tokens")
    assert without_body.status_code == 201, without_body.text
    day = await mint(client, run_id, ttl_seconds=float(MAX_TTL_SECONDS))  # JSON's 86400.0
    expires = datetime.fromisoformat(day["expires_at"].replace("Z", "+00:00"))
    assert abs((expires - datetime.now(UTC)).total_seconds() - MAX_TTL_SECONDS) < 5
    missing = await client.post("/v1/runs/run_missing/browser-tokens", json={})
    assert_problem(missing, 404, "run-not-found")
    async with anonymous(client) as browser:
        no_key = await browser.post(f"/v1/runs/{run_id}/browser-tokens", json={})
        assert_problem(no_key, 401, "unauthorized")


@pytest.fixture
async def open_client(database_url: str, store: object) -> AsyncIterator[httpx.AsyncClient]:
    async with api_client(make_settings(database_url, api_keys=""), "") as c:
        yield c


async def test_open_mode_still_checks_and_confines_a_presented_token(
    open_client: httpx.AsyncClient,
) -> None:
    run_id = await new_run(open_client)
    token = (await mint(open_client, run_id))["token"]
    expired, _ = (await signer(open_client, offset=-3600)).mint("default", run_id, 60)
    async with anonymous(open_client) as browser:
        ok = await browser.get(f"/v1/runs/{run_id}/events", params={ACCESS_TOKEN: token})
        assert ok.status_code == 200
        late = await browser.get(f"/v1/runs/{run_id}/events", params={ACCESS_TOKEN: expired})
        assert_problem(late, 401, "browser-token-invalid")
        cancel = await browser.post(
            f"/v1/runs/{run_id}/cancel", headers={"Authorization": f"Bearer {token}"}
        )
        assert_problem(cancel, 403, "forbidden")
        # Without a token, open mode is as it was.
        assert (await browser.post(f"/v1/runs/{run_id}/cancel")).status_code == 200


def cors_settings(database_url: str, origins: str) -> Settings:
    return make_settings(database_url, api_keys=KEY, cors_origins=origins)


@pytest.mark.parametrize("origins", ["", "http://app.test, http://other.test/"])
async def test_cors_follows_the_setting(database_url: str, store: object, origins: str) -> None:
    app = create_app(cors_settings(database_url, origins))
    transport = httpx.ASGITransport(app=app)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=transport, base_url="http://test") as c,
    ):
        preflight = await c.options(
            "/v1/runs/run_x/events",
            headers={
                "Origin": "http://app.test",
                "Access-Control-Request-Method": "GET",
                "Access-Control-Request-Headers": "authorization, last-event-id",
            },
        )
        refused = await c.get("/v1/runs/run_x/events", headers={"Origin": "http://app.test"})
        assert refused.status_code == 401
        stranger = await c.get("/v1/runs/run_x/events", headers={"Origin": "http://evil.test"})
        allowed = refused.headers.get("access-control-allow-origin")
        assert "access-control-allow-origin" not in stranger.headers
        if not origins:
            assert allowed is None and preflight.status_code == 405
            return
        assert preflight.status_code == 200
        assert preflight.headers["access-control-allow-origin"] == "http://app.test"
        asked = preflight.headers["access-control-allow-headers"].lower()
        assert "authorization" in asked and "last-event-id" in asked
        assert allowed == "http://app.test"  # the 401 is readable by the page too
        assert "access-control-allow-credentials" not in refused.headers
        second = await c.get("/v1/runs", headers={"Origin": "http://other.test"})
        assert second.headers["access-control-allow-origin"] == "http://other.test"
