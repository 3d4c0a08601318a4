"""/v1/keys and /v1/tenants over HTTP, on both databases: an admin makes, lists, rotates
and revokes its tenant's keys and nobody else's; a deployment admin makes tenants and a
tenant's first key; every refusal is a problem."""

from __future__ import annotations

import re
import secrets
from typing import Any

import httpx
import pytest

from app.api.server import run_server
from app.settings import Settings
from tests.helpers import wait_for


def bearer(secret: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}"}


async def new_tenant(client: httpx.AsyncClient, **limits: object) -> str:
    tenant = f"api-{secrets.token_hex(4)}"
    made = await client.post("/v1/tenants", json={"id": tenant, "name": "Acme", "limits": limits})
    assert made.status_code == 201, made.text
    return tenant


async def test_an_admin_makes_a_key_that_works_at_once_and_is_listed_without_secret(
    client: httpx.AsyncClient,
) -> None:
    made = await client.post("/v1/keys", json={"name": "backend", "role": "creator"})
    assert made.status_code == 201, made.text
    key = made.json()
    assert (key["tenant"], key["role"], key["state"]) == ("default", "creator", "active")
    assert key["created_by"].startswith("key:") and key["secret"].startswith("ark_")
    runs = await client.get("/v1/runs", headers=bearer(key["secret"]))
    assert runs.status_code == 200
    refused = await client.post("/v1/keys", headers=bearer(key["secret"]), json={})
    assert refused.status_code == 403 and refused.json()["permission"] == "keys:manage"
    listed = (await client.get("/v1/keys")).json()["data"]
    assert [k["id"] for k in listed] == [key["id"]]
    assert key["secret"] not in str(listed) and "secret" not in listed[0]
    assert (await client.get(f"/v1/keys/{key['id']}")).json()["name"] == "backend"


async def test_rotate_then_revoke(client: httpx.AsyncClient) -> None:
    key = (await client.post("/v1/keys", json={"name": "box", "role": "executor"})).json()
    rotated = await client.post(f"/v1/keys/{key['id']}/rotate", json={"grace_seconds": 600})
    assert rotated.status_code == 201, rotated.text
    old, new = rotated.json()["old"], rotated.json()["new"]
    assert old["state"] == "expiring" and old["expires_at"] is not None
    assert new["rotated_from"] == key["id"] and new["role"] == "executor"
    for secret in (key["secret"], new["secret"]):  # both work during the grace period
        lease = await client.post(
            "/v1/queues/q/lease", headers=bearer(secret), json={"executor": "e", "wait": 0}
        )
        assert lease.status_code == 200, lease.text
    revoked = await client.post(f"/v1/keys/{new['id']}/revoke")
    assert revoked.status_code == 200 and revoked.json()["state"] == "revoked"
    again = await client.post(f"/v1/keys/{new['id']}/rotate")
    assert again.status_code == 404 and again.json()["type"] == "/problems/key-not-found"
    missing = await client.post(f"/v1/keys/{'0' * 16}/revoke")
    assert missing.status_code == 404
    bad = await client.post(f"/v1/keys/{key['id']}/rotate", json={"grace_seconds": -1})
    assert bad.status_code == 422


async def test_a_tenant_admin_sees_only_its_tenants_keys(client: httpx.AsyncClient) -> None:
    tenant = await new_tenant(client, max_active_runs=3)
    # A deployment admin gives the tenant its first admin key.
    first = await client.post(
        "/v1/keys", params={"tenant": tenant}, json={"name": "acme-admin", "role": "admin"}
    )
    assert first.status_code == 201 and first.json()["tenant"] == tenant
    theirs = bearer(first.json()["secret"])
    ours = (await client.post("/v1/keys", json={"name": "ours", "role": "viewer"})).json()
    listed = (await client.get("/v1/keys", headers=theirs)).json()["data"]
    assert [k["id"] for k in listed] == [first.json()["id"]]
    # Our key is no key of theirs: 404, not 403, and not revoked.
    for method, path in [
        ("get", f"/v1/keys/{ours['id']}"),
        ("post", f"/v1/keys/{ours['id']}/revoke"),
        ("post", f"/v1/keys/{ours['id']}/rotate"),
    ]:
        response = await client.request(method, path, headers=theirs)
        assert response.status_code == 404, (path, response.text)
    assert (await client.get(f"/v1/keys/{ours['id']}")).json()["state"] == "active"
    # Reaching another tenant's keys needs tenants:manage.
    other = await client.get("/v1/keys", params={"tenant": "default"}, headers=theirs)
    assert other.status_code == 403 and other.json()["permission"] == "tenants:manage"
    assert (await client.get("/v1/tenants", headers=theirs)).status_code == 403
    made = await client.post("/v1/keys", headers=theirs, json={"name": "gpu", "role": "executor"})
    assert made.status_code == 201 and made.json()["tenant"] == tenant


async def test_tenants_over_http(client: httpx.AsyncClient) -> None:
    tenant = await new_tenant(client, daily_tokens=1000)
    again = await client.post("/v1/tenants", json={"id": tenant})
    assert again.status_code == 409 and again.json()["type"] == "/problems/tenant-exists"
    got = (await client.get(f"/v1/tenants/{tenant}")).json()
    assert got["limits"] == {
        "max_active_runs": None,
        "daily_tokens": 1000,
        "daily_cost_usd": None,
        "requests_per_minute": None,
        "tokens_per_minute": None,
        "max_concurrent": None,
    }
    patched = await client.patch(
        f"/v1/tenants/{tenant}", json={"limits": {"daily_cost_usd": 2.5, "daily_tokens": None}}
    )
    assert patched.status_code == 200, patched.text
    assert patched.json()["limits"] == {
        "max_active_runs": None,
        "daily_tokens": None,
        "daily_cost_usd": 2.5,
        "requests_per_minute": None,
        "tokens_per_minute": None,
        "max_concurrent": None,
    }
    key = (
        await client.post(
            "/v1/keys", params={"tenant": tenant}, json={"name": "k", "role": "admin"}
        )
    ).json()
    disabled = await client.patch(f"/v1/tenants/{tenant}", json={"disabled": True})
    assert disabled.json()["disabled_at"] is not None
    assert tenant in [t["id"] for t in (await client.get("/v1/tenants")).json()["data"]]
    for body in ({"id": "Bad Id"}, {"id": "ok-id", "limits": {"max_active_runs": 0}}):
        assert (await client.post("/v1/tenants", json=body)).status_code == 422
    assert (await client.patch("/v1/tenants/default", json={"disabled": True})).status_code == 422
    assert (await client.get("/v1/tenants/no-such")).status_code == 404
    assert (
        await client.post(
            "/v1/keys", params={"tenant": "no-such"}, json={"name": "x", "role": "admin"}
        )
    ).status_code == 404
    # The disabled tenant's key: refused within a second.
    await wait_for(
        lambda: client.get("/v1/keys", headers=bearer(key["secret"])),
        lambda r: r.status_code == 401,
        timeout=1.0,
    )


def test_the_open_mode_guard_counts_database_keys(capsys: pytest.CaptureFixture[str]) -> None:
    """Without AGENTRUN_API_KEYS a server may bind beyond loopback when the database holds
    a usable key; without one it refuses, also when the keys cannot be read."""
    built: list[str] = []

    def make_app(settings: Settings) -> Any:
        built.append("app")
        raise RuntimeError("built")  # (stops run_server before it serves)

    with pytest.raises(RuntimeError, match="built"):
        run_server(
            Settings(api_keys=""), make_app, host="0.0.0.0", port=1, database_keys=lambda: True
        )
    assert built == ["app"] and "OPEN MODE" not in capsys.readouterr().err

    def unreadable() -> bool:
        raise OSError("no database")

    for keys in (lambda: False, unreadable):
        code = run_server(
            Settings(api_keys=""), make_app, host="0.0.0.0", port=1, database_keys=keys
        )
        assert code == 2 and "refusing to start" in capsys.readouterr().err
    assert built == ["app"]


async def test_a_database_key_ends_the_dashboards_open_mode(database_url: str, store: Any) -> None:
    from app.main import create_app
    from tests.conftest import make_settings

    app = create_app(make_settings(database_url, api_keys=""))
    async with app.router.lifespan_context(app):
        await app.state.keys.create("default", "admin", "the-only-key")
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://dashboard.test") as c:
            page = await c.get("/admin/login")
            assert "Open mode" not in page.text
            csrf = re.search(r'name="csrf_token" value="([^"]+)"', page.text)
            assert csrf is not None
            login = await c.post("/admin/login", data={"api_key": "guess", "csrf_token": csrf[1]})
            assert login.status_code == 401
            assert (await c.get("/admin")).status_code == 303
            assert (await c.get("/v1/runs")).status_code == 401
