"""People on the dashboard, in process, on both back ends: a person signs in with a
username and password, acts under their name (`user:<name>`), and is signed out on the
next request once their session is revoked, expired or their account disabled; the role
decides which actions the pages offer and the posts accept."""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated

import httpx
import pytest
from fastapi import Depends, FastAPI

from app.core.lifecycle import RunStatus
from app.core.scope import Scope
from app.dashboard import actions, auth
from app.dashboard.web import requiring
from app.service.principals import Permission, Principal
from app.service.runs import RunService
from app.store.runs import RunStore
from app.tenancy.access import Role
from app.tenancy.operators import OperatorService
from tests.dashboard.conftest import csrf_of
from tests.dashboard.helpers import failed_run, parked_run
from tests.helpers import results_for, snapshot, suspended_run
from tests.people import PASSWORD, TENANT, person, reset_people, stored_rows


def browser(app: FastAPI) -> httpx.AsyncClient:
    transport = httpx.ASGITransport(app=app)
    return httpx.AsyncClient(transport=transport, base_url="http://dashboard.test")


async def sign_in(
    client: httpx.AsyncClient, username: str, password: str = PASSWORD
) -> httpx.Response:
    page = await client.get("/admin/login")
    return await client.post(
        "/admin/login",
        data={
            "username": username,
            "password": password,
            "csrf_token": csrf_of(page.text),
            "next": "/admin",
        },
    )


async def signed_in(client: httpx.AsyncClient, username: str) -> str:
    """Sign in; the new session's CSRF token."""
    response = await sign_in(client, username)
    assert response.status_code == 303, response.text
    home = await client.get("/admin")
    assert home.status_code == 200
    return csrf_of(home.text)


async def act(
    client: httpx.AsyncClient, csrf: str, run_id: str, verb: str, **fields: str
) -> httpx.Response:
    data = {"csrf_token": csrf, "confirmed": "yes", **fields}
    return await client.post(f"/admin/runs/{run_id}/{verb}", data=data)


async def test_a_person_signs_in_and_their_actions_name_them(
    app: FastAPI, people: OperatorService, service: RunService, store: RunStore
) -> None:
    await person(people, "alice", role="operator")
    view = await suspended_run(service)
    run_id = view.record.id
    async with browser(app) as alice:
        csrf = await signed_in(alice, "alice")
        home = await alice.get("/admin")
        assert "<code>user:alice</code>" in home.text and 'id="role">operator<' in home.text
        cookie = alice.cookies.get(auth.COOKIE, path="/admin") or ""
        assert PASSWORD not in cookie
        page = await alice.get(f"/admin/runs/{run_id}")
        assert 'id="tool-results-form"' in page.text and 'id="cancel-form"' in page.text
        assert "/callbacks/" in page.text
        body = results_for(view)
        fields = {"count": str(len(body.results))}
        for i, r in enumerate(body.results):
            fields |= {f"call_id_{i}": r.tool_call_id, f"output_{i}": "1"}
        done = await act(alice, csrf, run_id, "tool-results", **fields)
        assert done.status_code == 303, done.text
    events = await service.store.events(run_id)
    assert (events[-1].type, events[-1].actor) == ("run.resumed", "user:alice")
    assert PASSWORD not in repr(events)
    assert PASSWORD not in await stored_rows(store)


async def test_a_wrong_password_is_refused_and_throttled(
    app: FastAPI, people: OperatorService
) -> None:
    await person(people, "alice")
    app.state.auth_throttle.limit = 2
    async with browser(app) as client:
        wrong = await sign_in(client, "alice", "not the password")
        assert wrong.status_code == 401
        assert "do not match" in wrong.text
        assert 'value="alice"' in wrong.text  # kept for the next try; the password is not
        assert "not the password" not in wrong.text
        assert (await sign_in(client, "nobody")).status_code == 401
        assert (await client.get("/admin")).status_code == 303
        throttled = await sign_in(client, "alice")  # even the right password waits now
        assert throttled.status_code == 429


async def test_a_viewer_sees_no_actions_and_every_post_is_refused(
    app: FastAPI, people: OperatorService, service: RunService
) -> None:
    await person(people, "vera", role="viewer")
    suspended = (await suspended_run(service)).record.id
    parked = (await parked_run(service)).record.id
    failed = (await failed_run(service)).record.id
    async with browser(app) as vera:
        csrf = await signed_in(vera, "vera")
        for run_id in (suspended, parked, failed):
            page = await vera.get(f"/admin/runs/{run_id}")
            assert page.status_code == 200
            assert '<form method="post" action="/admin/runs/' not in page.text
            assert 'id="read-only"' in page.text
            assert "/callbacks/" not in page.text  # the callback URL would let her answer
        before = {r: await snapshot(service.store, r) for r in (suspended, parked, failed)}
        for verb in actions.KINDS:
            for run_id in (suspended, parked, failed):
                for confirmed in ("yes", "no"):
                    refused = await vera.post(
                        f"/admin/runs/{run_id}/{verb}",
                        data={"csrf_token": csrf, "confirmed": confirmed, "minutes": "5"},
                    )
                    assert refused.status_code == 403, (verb, refused.text)
                    assert actions.PERMISSIONS[verb].value in refused.text
        assert {r: await snapshot(service.store, r) for r in before} == before
        assert (await vera.get("/admin/overview")).status_code == 200


@pytest.mark.parametrize("how", ["revoke", "disable", "password", "expire"])
async def test_a_person_is_signed_out_on_the_next_request(
    app: FastAPI, people: OperatorService, service: RunService, how: str
) -> None:
    await person(people, "alice")
    if how == "expire":
        people.session_ttl = timedelta(0)
    run_id = (await suspended_run(service)).record.id
    async with browser(app) as alice:
        response = await sign_in(alice, "alice")
        assert response.status_code == 303
        if how != "expire":
            assert (await alice.get("/admin")).status_code == 200
            csrf = csrf_of((await alice.get("/admin")).text)
        else:
            csrf = "unknown"
        if how == "revoke":
            assert await people.revoke_sessions("alice") == 1
        elif how == "disable":
            await people.disable("alice")
        elif how == "password":
            await people.set_password("alice", "a brand new password")
        home = await alice.get("/admin")
        assert home.status_code == 303 and home.headers["location"] == "/admin/login"
        refused = await act(alice, csrf, run_id, "cancel")
        assert refused.status_code in (303, 403)
    assert (
        await service.get_run(run_id, scope=Scope.ALL)
    ).record.status == RunStatus.REQUIRES_ACTION


async def test_a_role_change_applies_on_the_next_request(
    app: FastAPI, people: OperatorService, service: RunService
) -> None:
    await person(people, "alice", role="operator")
    run_id = (await suspended_run(service)).record.id
    async with browser(app) as alice:
        csrf = await signed_in(alice, "alice")
        await people.set_role("alice", "viewer")
        assert (await act(alice, csrf, run_id, "cancel")).status_code == 403
        await people.set_role("alice", "admin")
        assert (await act(alice, csrf, run_id, "cancel")).status_code == 303
    events = await service.store.events(run_id)
    assert (events[-1].type, events[-1].actor) == ("run.cancelled", "user:alice")


async def test_signing_in_again_ends_the_session_before(
    app: FastAPI, people: OperatorService
) -> None:
    await person(people, "alice")
    await person(people, "bob", role="viewer")
    async with browser(app) as shared:
        await signed_in(shared, "alice")
        await signed_in(shared, "bob")
        home = await shared.get("/admin")
        assert "<code>user:bob</code>" in home.text
    counts = {a.username: a.active_sessions for a in await people.list_accounts(scope=Scope.ALL)}
    assert counts == {"alice": 0, "bob": 1}


async def test_logging_out_revokes_the_stored_session(
    app: FastAPI, people: OperatorService
) -> None:
    await person(people, "alice")
    async with browser(app) as alice:
        csrf = await signed_in(alice, "alice")
        cookie = alice.cookies.get(auth.COOKIE, path="/admin")
        assert (await alice.post("/admin/logout", data={"csrf_token": csrf})).status_code == 303
    assert (await people.list_accounts(scope=Scope.ALL))[0].active_sessions == 0
    async with browser(app) as replay:  # the old cookie, kept by someone, opens nothing
        replay.cookies.set(auth.COOKIE, cookie or "", path="/admin")
        assert (await replay.get("/admin")).status_code == 303


async def test_dashboard_principal_is_the_signed_in_person(
    app: FastAPI, people: OperatorService
) -> None:
    @app.get("/admin/test-whoami")
    async def whoami(
        principal: Annotated[Principal, Depends(auth.dashboard_principal)],
    ) -> dict[str, str]:
        return {"tenant": principal.tenant, "role": principal.role, "actor": principal.actor}

    await person(people, "alice", role="viewer", tenant=TENANT)
    async with browser(app) as alice:
        assert (await alice.get("/admin/test-whoami")).status_code == 303
        await signed_in(alice, "alice")
        found = (await alice.get("/admin/test-whoami")).json()
    assert found == {"tenant": TENANT, "role": Role.VIEWER.value, "actor": "user:alice"}


async def test_people_sign_in_in_open_mode_too(database_url: str, store: RunStore) -> None:
    from app.main import create_app
    from tests.conftest import make_settings

    app = create_app(make_settings(database_url))  # no keys: open mode
    async with app.router.lifespan_context(app):
        await reset_people(store)
        try:
            await person(app.state.operators, "alice")
            async with browser(app) as alice:
                await signed_in(alice, "alice")
                home = await alice.get("/admin")
                assert "<code>user:alice</code>" in home.text
        finally:
            await reset_people(store)


async def test_without_configured_keys_only_people_log_in(
    app: FastAPI, people: OperatorService
) -> None:
    class DatabaseKeysOnly:  # keys exist, none in AGENTRUN_API_KEYS: not open mode
        async def open_mode(self) -> bool:
            return False

        async def authenticate(self, presented: str) -> Principal | None:
            return None

    app.state.authenticator = DatabaseKeysOnly()
    app.state.settings.api_keys = ""
    await person(people, "alice")
    async with browser(app) as client:
        page = await client.get("/admin/login")
        assert 'id="username"' in page.text and 'id="api_key"' not in page.text
        refused = await client.post(
            "/admin/login", data={"api_key": "", "csrf_token": csrf_of(page.text)}
        )
        assert refused.status_code == 401
        assert (await client.get("/admin")).status_code == 303
        await signed_in(client, "alice")


async def test_a_page_may_require_a_permission(app: FastAPI, people: OperatorService) -> None:
    @app.get("/admin/test-keys")
    async def keys_page(
        session: Annotated[auth.Session, Depends(requiring(Permission.KEYS_MANAGE))],
    ) -> dict[str, str | None]:
        return {"actor": session.actor}

    await person(people, "alice", role="operator")
    await person(people, "ada", role="admin")
    async with browser(app) as client:
        assert (await client.get("/admin/test-keys")).status_code == 303
        await signed_in(client, "alice")
        refused = await client.get("/admin/test-keys")
        assert refused.status_code == 403 and "keys:manage" in refused.text
        await signed_in(client, "ada")
        assert (await client.get("/admin/test-keys")).json() == {"actor": "user:ada"}
