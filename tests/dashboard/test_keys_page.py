"""The dashboard's API keys page on both databases: the tenant's keys listed, revoked and
rotated only through a confirmation step with the session's CSRF token, a rotation's
secret shown once, another tenant's key out of reach."""

from __future__ import annotations

import secrets

import httpx
from fastapi import FastAPI

from app.core.scope import Scope
from app.store.runs import RunStore
from app.tenancy.keys import KeyAdmin
from app.tenancy.operators import OperatorService
from app.tenancy.tenants import Tenants


def keys_of(app: FastAPI) -> KeyAdmin:
    keys: KeyAdmin = app.state.keys
    return keys


async def test_the_page_lists_the_tenants_keys_never_a_secret(
    app: FastAPI, admin: httpx.AsyncClient
) -> None:
    issued = await keys_of(app).create("default", "executor", "gpu-box-1")
    page = await admin.get("/admin/keys")
    assert page.status_code == 200
    assert issued.key.id in page.text and "gpu-box-1" in page.text and "executor" in page.text
    assert issued.secret not in page.text and issued.secret.split("_", 2)[2] not in page.text
    assert 'href="/admin/keys" aria-current="page"' in page.text


async def test_revoking_asks_first_and_needs_the_csrf_token(
    app: FastAPI, admin: httpx.AsyncClient
) -> None:
    issued = await keys_of(app).create("default", "creator", "backend")
    url = f"/admin/keys/{issued.key.id}/revoke"
    forged = await admin.post(url, data={"confirmed": "yes"})
    assert forged.status_code == 403
    asked = await admin.post(url, data={"csrf_token": admin.csrf})  # type: ignore[attr-defined]
    assert asked.status_code == 200 and "Revoke this key?" in asked.text
    assert (await keys_of(app).get(issued.key.id, scope=Scope.ALL)).state() == "active"
    done = await admin.post(url, data={"csrf_token": admin.csrf, "confirmed": "yes"})  # type: ignore[attr-defined]
    assert done.status_code == 303 and done.headers["location"] == "/admin/keys?done=revoked"
    assert (await keys_of(app).get(issued.key.id, scope=Scope.ALL)).state() == "revoked"
    listed = await admin.get("/admin/keys?done=revoked")
    assert "revoked" in listed.text and f'id="revoke-{issued.key.id}"' not in listed.text


async def test_rotating_shows_the_new_secret_once(app: FastAPI, admin: httpx.AsyncClient) -> None:
    issued = await keys_of(app).create("default", "viewer", "reader")
    url = f"/admin/keys/{issued.key.id}/rotate"
    token = admin.csrf  # type: ignore[attr-defined]
    asked = await admin.post(url, data={"csrf_token": token, "grace": "86400"})
    assert asked.status_code == 200 and "1 day" in asked.text
    done = await admin.post(url, data={"csrf_token": token, "grace": "86400", "confirmed": "yes"})
    assert done.status_code == 200
    keys = {k.id: k for k in await keys_of(app).list(Scope.of("default"))}
    (new,) = [k for k in keys.values() if k.rotated_from == issued.key.id]
    assert keys[issued.key.id].state() == "expiring"
    secret = done.text.split('id="secret">')[1].split("<")[0]
    assert secret.startswith(f"ark_{new.id}_")
    assert secret not in (await admin.get("/admin/keys")).text
    bad = await admin.post(url, data={"csrf_token": token, "grace": "12", "confirmed": "yes"})
    assert bad.status_code == 200 and "Choose a grace period" in bad.text
    assert len(await keys_of(app).list(Scope.of("default"))) == 2


async def test_another_tenants_key_and_unknown_actions_are_out_of_reach(
    app: FastAPI, admin: httpx.AsyncClient
) -> None:
    tenants: Tenants = app.state.tenants
    tenant = (await tenants.create(f"dash-{secrets.token_hex(3)}")).id
    theirs = await keys_of(app).create(tenant, "admin", "theirs")
    token = admin.csrf  # type: ignore[attr-defined]
    page = await admin.get("/admin/keys")
    assert theirs.key.id not in page.text
    gone = await admin.post(
        f"/admin/keys/{theirs.key.id}/revoke", data={"csrf_token": token, "confirmed": "yes"}
    )
    assert gone.status_code == 404
    assert (await keys_of(app).get(theirs.key.id, scope=Scope.ALL)).state() == "active"
    unknown = await admin.post(f"/admin/keys/{theirs.key.id}/delete", data={"csrf_token": token})
    assert unknown.status_code == 404


async def test_the_page_needs_a_login(anon: httpx.AsyncClient) -> None:
    response = await anon.get("/admin/keys")
    assert response.status_code == 303 and response.headers["location"].startswith("/admin/login")


async def test_a_person_without_keys_manage_is_refused_and_nothing_changes(
    app: FastAPI, store: RunStore
) -> None:
    from tests.dashboard.test_people import browser, signed_in
    from tests.people import person, reset_people

    await reset_people(store)
    accounts: OperatorService = app.state.operators
    await person(accounts, "olga", role="operator")
    issued = await keys_of(app).create("default", "creator", "backend")
    try:
        async with browser(app) as client:
            csrf = await signed_in(client, "olga")
            page = await client.get("/admin/keys")
            assert page.status_code == 403 and "keys:manage" in page.text
            assert issued.key.id not in page.text
            url = f"/admin/keys/{issued.key.id}/revoke"
            refused = await client.post(url, data={"csrf_token": csrf, "confirmed": "yes"})
            assert refused.status_code == 403 and "keys:manage" in refused.text
        kept = await keys_of(app).get(issued.key.id, Scope.of("default"))
        assert kept.revoked_at is None
    finally:
        await reset_people(store)
