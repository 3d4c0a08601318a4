"""Whose runs the runs list shows, on both back ends: a deployment's admin (the key login:
the default tenant's admin, holding tenants:manage) picks their own tenant, another or
every tenant (`*`), with a Tenant column, and opens any tenant's run read-only (its
action routes still refuse them); anyone else sees their own tenant's runs only, and is
told so when they ask for another's."""

from __future__ import annotations

import html
import re

import httpx
import pytest
from fastapi import FastAPI

from app.core.scope import Scope
from app.dashboard import pages
from app.service.runs import RunService
from app.tenancy.operators import OperatorService
from tests.dashboard.helpers import csrf
from tests.dashboard.test_people import browser, signed_in
from tests.helpers import drive_once, run_body, snapshot
from tests.people import TENANT, person

COLUMN = '<th scope="col">Tenant</th>'


def ids(page: str) -> list[str]:
    return re.findall(r'id="row-(run_[^"]+)"', page)


def errors(page: str) -> list[str]:
    return [html.unescape(e) for e in re.findall(r'<p class="error" role="alert">(.*?)</p>', page)]


async def waiting_in(service: RunService, tenant: str) -> str:
    """A run of `tenant`, suspended on its two tool calls."""
    view, _ = await service.create_run(run_body(prompt=f"{tenant}'s sums"), tenant=tenant)
    await drive_once(service.store, service.settings)
    record = await service.store.get(view.record.id, scope=Scope.ALL)
    assert record is not None and record.status.value == "requires_action"
    return view.record.id


async def test_a_deployment_admin_views_another_tenant_or_every_tenant(
    admin: httpx.AsyncClient,
    people: OperatorService,
    service: RunService,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ours = await waiting_in(service, "default")
    theirs = await waiting_in(service, TENANT)
    others = [await waiting_in(service, TENANT) for _ in range(2)]

    own = (await admin.get("/admin")).text
    assert ids(own) == [ours] and COLUMN in own
    assert '<td class="tenant"><code>default</code></td>' in own
    select = re.search(r'<select id="f-tenant" name="tenant">(.*?)</select>', own, re.S)
    assert select, "no tenant selector"
    options = re.findall(r'<option value="([^"]*)"( selected)?>', select.group(1))
    # (Own, every tenant, then each tenant: other tests' tenants may be there too.)
    assert options[:2] == [("default", " selected"), ("*", "")] and (TENANT, "") in options

    acme = (await admin.get(f"/admin?tenant={TENANT}")).text
    assert errors(acme) == []
    assert ids(acme) == [theirs, *others]
    assert f'of tenant</span> <code id="viewing">{TENANT}</code>' in acme
    assert '<strong id="chip-requires_action">3</strong>' in acme  # acme's counts
    assert f'hx-get="/admin/rows?status=requires_action&amp;tenant={TENANT}"' in acme
    assert f'href="/admin?status=queued&amp;tenant={TENANT}"' in acme  # the counts' links
    assert f'<option value="{TENANT}" selected>' in acme
    rows = (await admin.get(f"/admin/rows?tenant={TENANT}")).text
    assert ids(rows) == [theirs, *others] and "<strong>add</strong>" in rows
    monkeypatch.setattr(pages, "PAGE_SIZE", 2)
    paged = (await admin.get(f"/admin?tenant={TENANT}")).text
    nxt = re.search(r'href="(/admin\?[^"]*cursor=[^"]+)" rel="next"', paged)
    assert nxt and f"tenant={TENANT}" in nxt.group(1)
    rest = (await admin.get(html.unescape(nxt.group(1)))).text
    assert ids(rest) == [others[1]]
    monkeypatch.setattr(pages, "PAGE_SIZE", 25)

    every = (await admin.get("/admin?tenant=*")).text
    assert ids(every) == [ours, theirs, *others]  # oldest first, across tenants
    assert 'of</span> <span id="viewing">every tenant</span>' in every
    assert f'<td class="tenant"><code>{TENANT}</code></td>' in every
    assert "acme&#39;s sums" in every  # the prompts
    found = await admin.get(f"/admin?tenant=*&status=any&id={theirs[:8]}")
    assert theirs in ids(found.text)
    straight = await admin.get(f"/admin?tenant=*&id={theirs}")
    assert straight.headers["location"] == f"/admin/runs/{theirs}"
    ghost = (await admin.get("/admin?tenant=ghost")).text
    assert ids(ghost) == [] and errors(ghost) == ["no tenant 'ghost': it has no runs"]
    mine_only = await admin.get(f"/admin?id={theirs}")  # (not among the default tenant's)
    assert mine_only.status_code == 200 and errors(mine_only.text) == [
        f"no run {theirs} among the runs viewed"
    ]


async def test_every_tenants_pages_merge_the_tenants_in_order(
    admin: httpx.AsyncClient,
    people: OperatorService,
    service: RunService,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    made: list[str] = []
    for i in range(7):
        tenant = TENANT if i % 3 else "default"
        meta = {"pick": "yes"} if i % 2 else {}
        view, _ = await service.create_run(run_body(metadata=meta), tenant=tenant)
        made.append(view.record.id)
    monkeypatch.setattr(pages, "PAGE_SIZE", 2)
    for query, want in (
        ("status=queued", made),  # oldest first
        ("status=any", made[::-1]),  # newest first
        ("status=any&meta=pick%3Dyes", made[1::2][::-1]),  # a walk that checks each run
        ("status=queued&meta=pick", made[1::2]),
    ):
        seen: list[str] = []
        url = f"/admin?tenant=*&{query}"
        for _ in range(10):
            page = (await admin.get(url)).text
            seen += ids(page)
            nxt = re.search(r'href="(/admin\?[^"]*cursor=[^"]+)" rel="next"', page)
            if nxt is None:
                break
            url = html.unescape(nxt.group(1))
        assert seen == want, query


async def test_another_tenants_run_opens_read_only_and_its_actions_are_refused(
    admin: httpx.AsyncClient, people: OperatorService, service: RunService
) -> None:
    theirs = await waiting_in(service, TENANT)
    page = await admin.get(f"/admin/runs/{theirs}")
    assert page.status_code == 200
    text = page.text
    note = re.search(r'<p class="notice" id="foreign-run">(.*?)</p>', text, re.S)
    assert note and html.unescape(note.group(1)).startswith(
        f"read-only: tenant <code>{TENANT}</code>'s run"
    )
    assert 'id="read-only"' not in text
    assert not re.search(r'<form method="post" action="/admin/runs/', text)
    assert "/v1/callbacks/" not in text  # (a callback URL would answer its calls)
    assert "acme&#39;s sums" in text  # its conversation is shown
    record = await service.store.get(theirs, scope=Scope.ALL)
    assert record is not None
    poll = await admin.get(
        f"/admin/runs/{theirs}/poll", params={"v": record.version, "seq": record.last_event_seq}
    )
    assert poll.status_code == 204  # read: unchanged
    before = await snapshot(service.store, theirs)
    for verb, fields in (
        ("cancel", {}),
        ("extend", {"minutes": "60"}),
        ("tool-results", {"count": "1", "call_id_0": "x", "output_0": "3"}),
    ):
        data = {"csrf_token": csrf(admin), "confirmed": "yes", **fields}
        response = await admin.post(f"/admin/runs/{theirs}/{verb}", data=data)
        assert response.status_code == 404, (verb, response.text)
    assert await snapshot(service.store, theirs) == before
    # Their own tenant's run: its forms as before.
    ours = await waiting_in(service, "default")
    mine = (await admin.get(f"/admin/runs/{ours}")).text
    assert 'id="foreign-run"' not in mine and 'action="/admin/runs/' + ours + '/cancel"' in mine


@pytest.mark.parametrize(
    ("username", "tenant", "role"), [("wile", TENANT, "admin"), ("vera", "default", "viewer")]
)
async def test_anyone_else_sees_their_own_tenants_runs_only(
    app: FastAPI,
    people: OperatorService,
    service: RunService,
    username: str,
    tenant: str,
    role: str,
) -> None:
    ours = await waiting_in(service, "default")
    theirs = await waiting_in(service, TENANT)
    own, other = (theirs, ours) if tenant == TENANT else (ours, theirs)
    await person(people, username, role=role, tenant=tenant)
    async with browser(app) as client:
        await signed_in(client, username)
        page = (await client.get("/admin")).text
        assert ids(page) == [own]
        assert COLUMN not in page and 'id="f-tenant"' not in page
        for asked in ("*", "default" if tenant == TENANT else TENANT):
            for path in ("/admin", "/admin/rows"):
                response = await client.get(path, params={"tenant": asked, "status": "any"})
                assert response.status_code == 200
                assert ids(response.text) == [own], (asked, path)
            said = errors((await client.get("/admin", params={"tenant": asked})).text)
            assert said == [
                "Only a deployment's admins see other tenants' runs: these are your tenant's."
            ]
        by_id = await client.get("/admin", params={"id": other, "tenant": "*"})
        assert by_id.status_code == 200 and ids(by_id.text) == []
        assert (await client.get(f"/admin/runs/{other}")).status_code == 404
        assert (await client.get(f"/admin/runs/{own}")).status_code == 200
