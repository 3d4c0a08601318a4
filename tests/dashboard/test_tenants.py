"""The dashboard shows and acts on the signed-in principal's tenant only: another
tenant's runs are in no list, count or overview, their pages are "not found", and no
action reaches them (`app.dashboard.auth.dashboard_principal` says who is signed in)."""

from __future__ import annotations

from datetime import UTC, datetime

import httpx
import pytest
from fastapi import Request

from app.dashboard import auth
from app.service.access import DEFAULT_TENANT, Principal, Role
from app.service.runs import RunService
from tests.dashboard.helpers import failed_run
from tests.helpers import run_body, snapshot, suspended_run

OTHER = "globex"


def sign_in_as(monkeypatch: pytest.MonkeyPatch, tenant: str) -> None:
    """The signed-in person is an operator of `tenant` (as the people work's accounts are)."""

    async def principal(request: Request) -> Principal:
        session = await auth.load_session(request)
        if session.actor is None:
            raise auth.LoginRequired(request.url.path)
        return Principal(tenant, Role.OPERATOR, f"user:{tenant}-op")

    monkeypatch.setattr(auth, "dashboard_principal", principal)


async def test_a_key_login_is_an_admin_of_the_default_tenant() -> None:
    request = Request({"type": "http", "headers": []})
    request.state.dashboard_session = auth.new_login("key:abc")
    principal = await auth.dashboard_principal(request)
    assert (principal.tenant, principal.role, principal.actor) == (
        DEFAULT_TENANT,
        Role.ADMIN,
        "key:abc",
    )


async def test_another_tenants_runs_are_in_no_page_and_no_action_reaches_them(
    admin: httpx.AsyncClient, service: RunService, monkeypatch: pytest.MonkeyPatch
) -> None:
    waiting = await suspended_run(service, metadata={"team": "acme"})
    failed = await failed_run(service)
    ours, _ = await service.create_run(run_body(), tenant=OTHER)
    ids = {waiting.record.id, failed.record.id}
    # Signed in to the default tenant: its runs, not the other's.
    listed = (await admin.get("/admin?status=any")).text
    assert all(i in listed for i in ids) and ours.record.id not in listed
    sign_in_as(monkeypatch, OTHER)
    before = {i: await snapshot(service.store, i) for i in ids}
    for path in ("/admin", "/admin?status=any", "/admin?status=failed", "/admin/rows"):
        page = await admin.get(path)
        assert page.status_code == 200, path
        assert not [i for i in ids if i in page.text], path
    assert ours.record.id in (await admin.get("/admin?status=queued")).text
    assert (await admin.get("/admin/overview")).status_code == 200
    reads = admin._transport.app.state.reads  # type: ignore[attr-defined]
    assert (await reads.overview(datetime.now(UTC), OTHER)).counts == {"queued": 1}
    assert (await reads.overview(datetime.now(UTC), DEFAULT_TENANT)).counts == {
        "requires_action": 1,
        "failed": 1,
    }
    for run_id in ids:
        page = await admin.get(f"/admin/runs/{run_id}")
        assert page.status_code == 404 and run_id in page.text  # (the id it was asked for)
        poll = await admin.get(f"/admin/runs/{run_id}/poll", params={"v": 1, "seq": 1})
        assert poll.status_code == 200  # "reload": the page then says not found
    for run_id, verb, fields in (
        (waiting.record.id, "cancel", {}),
        (waiting.record.id, "extend", {"seconds": "60"}),
        (failed.record.id, "retry", {}),
    ):
        data = {"csrf_token": admin.csrf, "confirmed": "yes", **fields}  # type: ignore[attr-defined]
        response = await admin.post(f"/admin/runs/{run_id}/{verb}", data=data)
        assert response.status_code == 404, (verb, response.text)
    assert {i: await snapshot(service.store, i) for i in ids} == before
