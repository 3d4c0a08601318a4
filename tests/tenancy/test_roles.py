"""The role suite, generated from the OpenAPI document: for every operation that names a
permission (`x-permission`) and every role, a key of that role is refused with a 403
`forbidden` problem naming the permission exactly when the role is not in the
operation's `x-roles`, and gets some other answer otherwise. An operation added later is
covered without a new test. Deployment-wide permissions (tenants, metrics) are held by
no key of another tenant, whatever its role.

Keys are real database keys (`KeyAdmin`), on both databases; path parameters are filled
with values of the right form that name nothing, so an allowed call ends in a 404 or 422
(or a listing), never in a change.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from app.service.principals import Permission
from app.settings import Settings
from app.tenancy.access import DEPLOYMENT, Role
from app.tenancy.keys import KeyAdmin
from app.tenancy.tenants import Tenants
from tests.helpers import api_client

#: A value of the right form for each path parameter (unknown names get "x").
PATH_VALUES = {
    "run_id": "run_missing",
    "queue": "no-such-queue",
    "lease_token": "no_such_lease",
    "key_id": "0" * 16,
    "tenant_id": "no-such-tenant",
    "token": "no_such_token",
}


def operations(document: dict[str, Any]) -> list[tuple[str, str, str, list[str]]]:
    """(method, path, permission, roles) of every operation that names a permission."""
    found = []
    for path, items in document["paths"].items():
        for method, operation in items.items():
            if "x-permission" in operation:
                found.append((method, path, operation["x-permission"], operation["x-roles"]))
    return found


def url_of(path: str) -> str:
    return re.sub(r"\{(\w+)\}", lambda m: PATH_VALUES.get(m.group(1), "x"), path)


async def call(client: httpx.AsyncClient, method: str, path: str, secret: str) -> httpx.Response:
    headers = {"Authorization": f"Bearer {secret}"}
    # `wait`/`timeout` 0: an allowed long poll answers at once. (Bodies that do not take
    # `wait` refuse it: 422.)
    body = {"wait": 0} if method in ("post", "put", "patch") else None
    params = {"timeout": "0"} if path.endswith("/wait") else None
    return await client.request(method, url_of(path), headers=headers, json=body, params=params)


@pytest.fixture
async def app_client(api_settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    async with api_client(api_settings, "unused") as client:
        yield client


async def role_keys(client: httpx.AsyncClient, tenant: str) -> dict[Role, str]:
    admin: KeyAdmin = client.app.state.keys  # type: ignore[attr-defined]
    return {role: (await admin.create(tenant, role, f"{role}-key")).secret for role in Role}


async def test_each_role_is_refused_exactly_where_the_document_says(
    app_client: httpx.AsyncClient,
) -> None:
    document = app_client.app.openapi()  # type: ignore[attr-defined]
    ops = operations(document)
    assert len(ops) >= 20, "the document names permissions on (almost) every operation"
    keys = await role_keys(app_client, "default")
    wrong: list[str] = []
    for method, path, permission, roles in ops:
        for role, secret in keys.items():
            response = await call(app_client, method, path, secret)
            where = f"{method.upper()} {path} as {role.value}: {response.status_code}"
            if role.value in roles:
                if response.status_code in (401, 403):
                    wrong.append(f"{where} (allowed: {roles}) {response.text[:200]}")
                continue
            body = response.json() if response.status_code == 403 else {}
            if (body.get("type"), body.get("permission"), body.get("role")) != (
                "/problems/forbidden",
                permission,
                role.value,
            ):
                wrong.append(f"{where}, expected 403 forbidden naming {permission}")
    assert not wrong, "\n".join(wrong)


async def test_another_tenants_keys_hold_no_deployment_permission(
    app_client: httpx.AsyncClient,
) -> None:
    tenants: Tenants = app_client.app.state.tenants  # type: ignore[attr-defined]
    tenant = (await tenants.create(f"roles-{secrets.token_hex(4)}")).id
    keys = await role_keys(app_client, tenant)
    document = app_client.app.openapi()  # type: ignore[attr-defined]
    deployment = [op for op in operations(document) if Permission(op[2]) in DEPLOYMENT]
    assert {op[2] for op in deployment} == {p.value for p in DEPLOYMENT}
    for method, path, permission, _ in deployment:
        for role, secret in keys.items():
            response = await call(app_client, method, path, secret)
            assert response.status_code == 403, (method, path, role, response.text)
            assert response.json()["permission"] == permission
    # While the tenant's admin manages its own keys.
    own = await app_client.get("/v1/keys", headers={"Authorization": f"Bearer {keys[Role.ADMIN]}"})
    assert own.status_code == 200
    assert {k["tenant"] for k in own.json()["data"]} == {tenant}


async def test_every_operation_names_its_roles_as_the_issue_defines_them(
    app_client: httpx.AsyncClient,
) -> None:
    document = app_client.app.openapi()  # type: ignore[attr-defined]
    named = {(m, p): roles for m, p, _, roles in operations(document)}
    for path, items in document["paths"].items():
        for method in items:
            if path.startswith("/v1/") and not path.startswith("/v1/callbacks/"):
                assert (method, path) in named, f"{method.upper()} {path} names no permission"
    for (method, path), roles in named.items():
        if method != "get":  # a viewer reads only
            assert "viewer" not in roles, (method, path)
        if path.startswith(("/v1/keys", "/v1/tenants")):  # admins only
            assert roles == ["admin"], (method, path)
    runs = "/v1/runs/{run_id}"
    assert "executor" not in named[("post", f"{runs}/cancel")]
    assert "executor" not in named[("get", runs)] and "executor" not in named[("post", "/v1/runs")]
    assert "creator" in named[("post", "/v1/runs")] and "creator" in named[("get", runs)]
    assert "executor" in named[("post", "/v1/queues/{queue}/lease")]
    assert "executor" in named[("post", f"{runs}/tool-results")]
    assert "creator" not in named[("post", "/v1/queues/{queue}/lease")]
    assert {"operator"} <= set(named[("post", f"{runs}/cancel")]) & set(
        named[("post", f"{runs}/resolution")]
    )
