"""The dashboard shows and acts on the signed-in principal's tenant only: another
tenant's runs are in no list, count or overview, their pages are "not found", and no
action reaches them. A person of tenant `acme` signs in, beside the default tenant's runs."""

from __future__ import annotations

from datetime import UTC, datetime

import httpx
from fastapi import FastAPI

from app.core.scope import Scope
from app.service.principals import DEFAULT_TENANT
from app.service.runs import RunService
from app.tenancy.operators import OperatorService
from tests.dashboard.helpers import failed_run
from tests.dashboard.test_people import browser, signed_in
from tests.helpers import run_body, snapshot, suspended_run
from tests.people import TENANT, person


async def test_another_tenants_runs_are_in_no_page_and_no_action_reaches_them(
    app: FastAPI,
    admin: httpx.AsyncClient,
    people: OperatorService,
    service: RunService,
) -> None:
    waiting = await suspended_run(service, metadata={"team": "default-team"})
    failed = await failed_run(service)
    theirs, _ = await service.create_run(run_body(), tenant=TENANT)
    ids = {waiting.record.id, failed.record.id}
    # A key login is the default tenant's: its runs, not acme's.
    listed = (await admin.get("/admin?status=any")).text
    assert all(i in listed for i in ids) and theirs.record.id not in listed
    await person(people, "wile", role="admin", tenant=TENANT)
    async with browser(app) as client:
        csrf = await signed_in(client, "wile")
        before = {i: await snapshot(service.store, i) for i in ids}
        for path in ("/admin", "/admin?status=any", "/admin?status=failed", "/admin/rows"):
            page = await client.get(path)
            assert page.status_code == 200, path
            assert not [i for i in ids if i in page.text], path
        assert theirs.record.id in (await client.get("/admin?status=queued")).text
        assert (await client.get("/admin/overview")).status_code == 200
        for run_id in ids:
            page = await client.get(f"/admin/runs/{run_id}")
            assert page.status_code == 404, page.text
            poll = await client.get(f"/admin/runs/{run_id}/poll", params={"v": 1, "seq": 1})
            assert poll.status_code == 200  # "reload": the page then says not found
        for run_id, verb, fields in (
            (waiting.record.id, "cancel", {}),
            (waiting.record.id, "extend", {"seconds": "60"}),
            (failed.record.id, "retry", {}),
        ):
            data = {"csrf_token": csrf, "confirmed": "yes", **fields}
            response = await client.post(f"/admin/runs/{run_id}/{verb}", data=data)
            assert response.status_code == 404, (verb, response.text)
        assert {i: await snapshot(service.store, i) for i in ids} == before
    reads = app.state.reads
    assert (await reads.overview(datetime.now(UTC), Scope.of(TENANT))).counts == {"queued": 1}
    assert (await reads.overview(datetime.now(UTC), Scope.of(DEFAULT_TENANT))).counts == {
        "requires_action": 1,
        "failed": 1,
    }
