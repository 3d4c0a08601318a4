"""Every dashboard page and action, in process, on both back ends: auth, CSRF, the
confirmation step, inline validation, and the event log naming who did it."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlalchemy as sa
from fastapi import FastAPI

from app.core import AgentRun, AssistantMessage, Reasoning, Text, UserMessage
from app.core.scope import Scope
from app.dashboard import pages
from app.service.reads import RunReads
from app.service.runs import RunService
from app.store.schema import runs
from app.tenancy.keys import actor_of
from tests.dashboard.conftest import KEY, csrf_of, log_in
from tests.dashboard.helpers import completed_run, csrf, failed_run
from tests.helpers import run_body, suspended_run

ACTOR = actor_of(KEY)
ROOT = Path(__file__).resolve().parents[2]


# --- auth ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path", ["/admin", "/admin/overview", "/admin/rows", "/admin/runs/run_x", "/admin?status=any"]
)
async def test_pages_redirect_to_login_without_a_session(
    anon: httpx.AsyncClient, path: str
) -> None:
    response = await anon.get(path)
    assert response.status_code == 303
    assert response.headers["location"].startswith("/admin/login")


async def test_redirect_remembers_where_you_were_going(anon: httpx.AsyncClient) -> None:
    response = await anon.get("/admin/runs/run_abc")
    assert response.headers["location"] == "/admin/login?next=%2Fadmin%2Fruns%2Frun_abc"
    login = await anon.get(response.headers["location"])
    assert 'name="next" value="/admin/runs/run_abc"' in login.text
    done = await anon.post(
        "/admin/login",
        data={"api_key": KEY, "csrf_token": csrf_of(login.text), "next": "/admin/runs/run_abc"},
    )
    assert done.headers["location"] == "/admin/runs/run_abc"


async def test_login_never_redirects_off_the_dashboard(anon: httpx.AsyncClient) -> None:
    login = await anon.get("/admin/login")
    for target in ("https://evil.example/", "//evil.example/admin", "/v1/runs"):
        response = await anon.post(
            "/admin/login",
            data={"api_key": KEY, "csrf_token": csrf_of(login.text), "next": target},
        )
        assert response.headers["location"] == "/admin"
        login = await anon.get("/admin/login")


async def test_htmx_requests_without_a_session_are_told_to_navigate(
    anon: httpx.AsyncClient,
) -> None:
    response = await anon.get("/admin/rows", headers={"HX-Request": "true"})
    assert response.status_code == 401
    assert response.headers["hx-redirect"].startswith("/admin/login")


async def test_login_page_has_a_labelled_key_field_and_a_csrf_token(
    anon: httpx.AsyncClient,
) -> None:
    page = await anon.get("/admin/login")
    assert page.status_code == 200
    assert '<label for="api_key">API key</label>' in page.text
    assert 'id="api_key" name="api_key" type="password"' in page.text
    assert csrf_of(page.text)
    assert "Open mode" not in page.text
    cookie = page.headers["set-cookie"]
    assert "httponly" in cookie.lower()
    assert "samesite=lax" in cookie.lower()
    assert "path=/admin" in cookie.lower()


async def test_wrong_key_is_refused(anon: httpx.AsyncClient) -> None:
    page = await anon.get("/admin/login")
    response = await anon.post(
        "/admin/login", data={"api_key": "wrong", "csrf_token": csrf_of(page.text)}
    )
    assert response.status_code == 401
    assert "not valid" in response.text
    assert (await anon.get("/admin")).status_code == 303
    empty = await anon.post("/admin/login", data={"api_key": "", "csrf_token": csrf_of(page.text)})
    assert empty.status_code == 401


async def test_login_without_or_with_a_wrong_csrf_token_is_refused(
    anon: httpx.AsyncClient,
) -> None:
    page = await anon.get("/admin/login")
    missing = await anon.post("/admin/login", data={"api_key": KEY})
    assert missing.status_code == 403
    wrong = await anon.post("/admin/login", data={"api_key": KEY, "csrf_token": "x" * 43})
    assert wrong.status_code == 403
    assert (await anon.get("/admin")).status_code == 303
    ok = await anon.post("/admin/login", data={"api_key": KEY, "csrf_token": csrf_of(page.text)})
    assert ok.status_code == 303


async def test_login_rotates_the_csrf_token(anon: httpx.AsyncClient) -> None:
    page = await anon.get("/admin/login")
    before = csrf_of(page.text)
    after = await log_in(anon)
    assert after != before


async def test_forged_cookie_is_ignored(anon: httpx.AsyncClient) -> None:
    anon.cookies.set("agentrun_admin", "eyJhY3RvciI6ImtleTp4In0.forged.sig", path="/admin")
    assert (await anon.get("/admin")).status_code == 303


async def test_session_of_a_removed_key_stops_working(
    admin: httpx.AsyncClient, app: FastAPI
) -> None:
    assert (await admin.get("/admin")).status_code == 200
    app.state.settings.api_keys = "other-key"
    assert (await admin.get("/admin")).status_code == 303


async def test_logout(admin: httpx.AsyncClient) -> None:
    refused = await admin.post("/admin/logout", data={})
    assert refused.status_code == 403
    assert (await admin.get("/admin")).status_code == 200  # still logged in
    response = await admin.post("/admin/logout", data={"csrf_token": csrf(admin)})
    assert response.status_code == 303
    assert response.headers["location"] == "/admin/login"
    assert 'agentrun_admin=""' in response.headers["set-cookie"]
    assert (await admin.get("/admin")).status_code == 303


async def test_open_mode_login_is_labelled_and_takes_any_key(database_url: str, store: Any) -> None:
    from app.main import create_app
    from tests.conftest import make_settings

    app = create_app(make_settings(database_url))
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://dashboard.test") as c:
            page = await c.get("/admin/login")
            assert "Open mode" in page.text
            assert "required" not in page.text.split('id="api_key"')[1].split(">")[0]
            response = await c.post(
                "/admin/login", data={"api_key": "", "csrf_token": csrf_of(page.text)}
            )
            assert response.status_code == 303
            home = await c.get("/admin")
            assert home.status_code == 200
            assert "open mode" in home.text
            assert "open-mode" in home.text


# --- the runs table --------------------------------------------------------------------


async def test_suspended_runs_first_oldest_first_with_details(
    admin: httpx.AsyncClient, service: RunService
) -> None:
    first = await suspended_run(service, metadata={"tenant": "acme", "tier": 2})
    second = await suspended_run(service, metadata={"tenant": "globex"})
    queued, _ = await service.create_run(run_body())
    page = await admin.get("/admin")
    assert page.status_code == 200
    html = page.text
    assert "Suspended runs" in html
    assert html.index(first.record.id) < html.index(second.record.id)
    assert queued.record.id not in html
    row = html[html.index(f'id="row-{first.record.id}"') :].split("</tr>")[0]
    assert row.count("<strong>add</strong>") == 2
    assert "{&#34;a&#34;:1,&#34;b&#34;:2}" in row  # arguments preview, escaped
    assert "tool results (2 open)" in row
    assert "scripted/demo" in row
    assert "1 / 4" in row
    assert "tenant=acme" in row and "tier=2" in row
    assert re.search(r"6d 23h|7d 00h", row), "time left before expiry"
    assert re.search(r'<td class="num">\d+ ms</td>|<td class="num">\d+s</td>', row), "age"
    assert 'hx-get="/admin/rows?status=requires_action"' in html
    assert 'hx-trigger="every 3s"' in html
    assert 'hx-swap="outerHTML"' in html


async def test_filters_by_status_provider_and_metadata(
    admin: httpx.AsyncClient, service: RunService
) -> None:
    acme = await suspended_run(service, metadata={"tenant": "acme", "tier": 2})
    globex = await suspended_run(service, metadata={"tenant": "globex"})
    queued, _ = await service.create_run(run_body(metadata={"tenant": "acme"}))

    def ids(html: str) -> set[str]:
        return set(re.findall(r'id="row-(run_[^"]+)"', html))

    assert ids((await admin.get("/admin?status=queued")).text) == {queued.record.id}
    assert ids((await admin.get("/admin?status=any")).text) == {
        acme.record.id,
        globex.record.id,
        queued.record.id,
    }
    assert ids((await admin.get("/admin?meta=tenant%3Dacme")).text) == {acme.record.id}
    assert ids((await admin.get("/admin?status=any&meta=tenant%3Dacme")).text) == {
        acme.record.id,
        queued.record.id,
    }
    assert ids((await admin.get("/admin?meta=tier%3D2")).text) == {acme.record.id}
    assert ids((await admin.get("/admin?meta=tier")).text) == {acme.record.id}  # key present
    assert ids((await admin.get("/admin?provider=scripted")).text) == {
        acme.record.id,
        globex.record.id,
    }
    assert ids((await admin.get("/admin?provider=openai")).text) == set()
    bad = await admin.get("/admin?meta=bad%20key%3Dx&status=nope&provider=zzz")
    assert bad.status_code == 200
    assert "unknown status" in bad.text and "unknown provider" in bad.text
    assert "metadata filter" in bad.text


async def test_a_metadata_filter_with_a_nul_is_refused_not_a_500(
    admin: httpx.AsyncClient, service: RunService
) -> None:
    """No run's metadata holds a NUL (the API refuses one), and PostgreSQL's text cannot:
    sent to the database it was a 500 there. Like any filter that cannot be used, it is
    named above the table and left out."""
    view = await suspended_run(service, metadata={"tenant": "acme"})
    for path in ("/admin", "/admin/rows"):
        response = await admin.get(f"{path}?status=any&meta=tenant%3Dac%00me")
        assert response.status_code == 200, (path, response.text)
        assert f'id="row-{view.record.id}"' in response.text
    page = await admin.get("/admin?meta=tenant%3D%00")
    assert "metadata filter: the value cannot hold a NUL character" in page.text


async def test_keyset_pagination(
    admin: httpx.AsyncClient, service: RunService, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pages, "PAGE_SIZE", 2)
    made = [await suspended_run(service) for _ in range(5)]
    seen: list[str] = []
    url = "/admin"
    for _ in range(5):
        html = (await admin.get(url)).text
        seen += re.findall(r'id="row-(run_[^"]+)"', html)
        match = re.search(r'href="(/admin\?[^"]*cursor=[^"]+)" rel="next"', html)
        if not match:
            break
        url = match.group(1).replace("&amp;", "&")
    assert seen == [v.record.id for v in made]
    garbage = await admin.get("/admin?cursor=%%%")
    assert garbage.status_code == 200 and "cursor is malformed" in garbage.text


async def test_rows_partial_is_the_table_body_and_the_pager(
    admin: httpx.AsyncClient, service: RunService
) -> None:
    view = await suspended_run(service)
    response = await admin.get("/admin/rows?status=requires_action", headers={"HX-Request": "true"})
    assert response.status_code == 200
    body = response.text.strip()
    assert body.startswith('<tbody id="run-rows"')
    assert view.record.id in body
    assert '<nav id="pager" class="pager" aria-label="Pages" hx-swap-oob="true">' in body
    assert 'id="counts" aria-label="Runs by status" hx-swap-oob="true"' in body
    assert '<strong id="chip-requires_action">1</strong>' in body
    assert "<html" not in body


# --- run detail ------------------------------------------------------------------------


async def test_run_detail_of_a_suspended_run(
    admin: httpx.AsyncClient, service: RunService, app: FastAPI
) -> None:
    view = await suspended_run(service, metadata={"tenant": "acme"})
    page = await admin.get(f"/admin/runs/{view.record.id}")
    assert page.status_code == 200
    html = page.text
    assert "add 1+2 and 3+4" in html  # the prompt
    assert html.count('class="tool-call"') == 2
    for event in ("run.created", "run.claimed", "model.called", "run.requires_action"):
        assert f"<code>{event}</code>" in html
    assert re.search(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}Z", html)  # timestamps
    assert "+" in html.split('id="h-events"')[1]  # latencies between events
    assert "input tokens" in html  # usage
    assert "Model call attempts: 1." in html and "not priced" in html
    for c in view.pending:
        assert c.call_id in html
    # Every visible input of the action forms has a label.
    for field_id in re.findall(r'<(?:input|textarea|select)[^>]*\sid="([^"]+)"', html):
        assert f'for="{field_id}"' in html, field_id
    assert 'id="cancel"' in html and 'id="extend"' in html
    assert 'id="retry"' not in html
    # The deliveries section is there exactly when the deployment can list them.
    assert ("Webhook deliveries" in html) == (app.state.reads.deliveries_of is not None)
    assert "Content-Security-Policy" in page.headers
    assert page.headers["x-frame-options"] == "DENY"


async def test_run_detail_shows_errors_in_full(
    admin: httpx.AsyncClient, service: RunService
) -> None:
    failed = await failed_run(service)
    html = (await admin.get(f"/admin/runs/{failed.record.id}")).text
    assert 'id="run-error"' in html
    assert failed.record.error is not None
    assert failed.record.error["type"] in html
    assert 'id="retry"' in html and 'id="cancel"' not in html


async def test_run_detail_folds_reasoning(admin: httpx.AsyncClient, service: RunService) -> None:
    view = await suspended_run(service)
    run = AgentRun(
        "next question",
        max_turns=2,
        history=[
            UserMessage("earlier"),
            AssistantMessage([Reasoning.of_text("secret chain of thought"), Text("answer")]),
        ],
    )
    async with service.store.engine.begin() as conn:
        await conn.execute(
            runs.update().where(runs.c.id == view.record.id).values(state=run.to_json())
        )
    html = (await admin.get(f"/admin/runs/{view.record.id}")).text
    assert '<details class="reasoning"><summary>Reasoning</summary>' in html
    assert "secret chain of thought" in html
    assert "(history)" in html


async def test_run_detail_renders_webhook_deliveries_when_the_reads_list_them(
    admin: httpx.AsyncClient, service: RunService, app: FastAPI
) -> None:
    view = await suspended_run(service)
    now = datetime.now(UTC)

    async def webhook_deliveries(run_id: str) -> list[dict[str, Any]]:
        assert run_id == view.record.id
        return [
            {
                "event_type": "run.requires_action",
                "webhook_id": "msg_1",
                "url": "https://hooks.example/agentrun",
                "status": "failed",
                "attempts": 3,
                "last_status": 502,
                "last_error": "Bad Gateway <upstream>",
                "last_latency_ms": 41.5,
                "created_at": now,
                "delivered_at": None,
            }
        ]

    reads: RunReads = app.state.reads
    listed, reads.deliveries_of = reads.deliveries_of, webhook_deliveries
    try:
        html = (await admin.get(f"/admin/runs/{view.record.id}")).text
    finally:
        reads.deliveries_of = listed
    assert "Webhook deliveries" in html
    assert "https://hooks.example/agentrun" in html
    assert "Bad Gateway &lt;upstream&gt;" in html  # escaped
    assert "502" in html and "41.5 ms" in html


async def test_unknown_run_is_404(admin: httpx.AsyncClient) -> None:
    response = await admin.get("/admin/runs/run_missing")
    assert response.status_code == 404
    assert "no run with id run_missing" in response.text


async def test_poll_says_reload_only_when_the_run_changed(
    admin: httpx.AsyncClient, service: RunService
) -> None:
    view = await suspended_run(service)
    r = view.record
    same = await admin.get(f"/admin/runs/{r.id}/poll?v={r.version}&seq={r.last_event_seq}")
    assert same.status_code == 204
    await service.cancel(r.id, scope=Scope.ALL)
    changed = await admin.get(f"/admin/runs/{r.id}/poll?v={r.version}&seq={r.last_event_seq}")
    assert changed.headers["hx-refresh"] == "true"


# --- overview --------------------------------------------------------------------------


async def test_overview(admin: httpx.AsyncClient, service: RunService) -> None:
    await completed_run(service)
    await failed_run(service)
    await suspended_run(service)
    old = await suspended_run(service)
    async with service.store.engine.begin() as conn:  # make one wait for two hours
        for table, column, key in (
            ("run_events", "created_at", "run_id"),
            ("runs", "suspended_at", "id"),
        ):
            await conn.execute(
                sa.text(f"UPDATE {table} SET {column} = :t WHERE {key} = :r"),
                {"t": datetime.now(UTC) - timedelta(hours=2), "r": old.record.id},
            )
    page = await admin.get("/admin/overview")
    assert page.status_code == 200
    html = page.text
    assert 'id="count-requires_action">2<' in html
    assert 'id="count-completed">1<' in html
    assert 'id="count-failed">1<' in html
    assert '<svg class="chart"' in html and "<rect" in html
    assert "1–6h: 1" in html and "&lt;1m: 1" in html
    assert re.search(r"Oldest waiting: <strong>(1h 59m|2h 00m)</strong>", html)
    throughput = html.split('id="throughput"')[1].split("</dd>")[0]
    assert "0.02" in throughput and "(1 in 60 min)" in throughput
    error_rate = html.split('id="error-rate"')[1].split("</dd>")[0]
    assert "50.0 %" in error_rate


# --- static files and packaging --------------------------------------------------------


async def test_htmx_is_vendored_with_its_license(admin: httpx.AsyncClient) -> None:
    js = await admin.get("/admin/static/htmx/htmx.min.js")
    assert js.status_code == 200 and "htmx" in js.text[:200]
    license_ = await admin.get("/admin/static/htmx/LICENSE")
    assert license_.status_code == 200 and "BSD" in license_.text
    css = await admin.get("/admin/static/dashboard.css")
    assert ":focus-visible" in css.text
    page = (await admin.get("/admin")).text
    assert not re.search(r'(src|href)="(https?:)?//', page), "no CDN: the page works offline"


def test_templates_and_static_files_are_package_data() -> None:
    """A non-editable install (the Dockerfile's `pip install .`) ships only the package
    data patterns: every dashboard template and static file must match one (expanded the
    way setuptools does, with recursive globs)."""
    import glob
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    package_data = config["tool"]["setuptools"].get("package-data", {})
    shipped: set[str] = set()
    for package, patterns in package_data.items():
        base = ROOT / package.replace(".", "/")
        for pattern in patterns:
            shipped.update(
                Path(p).resolve().relative_to(ROOT).as_posix()
                for p in glob.glob(str(base / pattern), recursive=True)
            )
    dashboard = ROOT / "app" / "dashboard"
    files = [
        p.relative_to(ROOT).as_posix()
        for sub in ("templates", "static")
        for p in (dashboard / sub).rglob("*")
        if p.is_file()
    ]
    assert files
    missing = sorted(set(files) - shipped)
    assert not missing, (
        "add to pyproject.toml [tool.setuptools.package-data]: "
        '"app.dashboard" = ["templates/*.html", "static/**/*"]; '
        f"missing: {missing}"
    )
