"""A browser token in a real browser: a page served from one loopback port follows a run
of the API on another (so CORS decides, AGENTRUN_CORS_ORIGINS), with nothing but the
token its backend minted. Playwright drives Debian's Chromium as
tests/dashboard/test_browser.py does, on SQLite and on PostgreSQL.

The page streams the run's events with an EventSource and `?access_token=` (an
EventSource cannot send headers), sees the run suspend, then complete once the test
answers its tool calls, and reads the run's output through `wait` with the token as a
bearer header (a preflighted request) and the `Wait-Outcome` header (exposed). An expired
token is a 401 the page can read, and its EventSource fails for good.

Without Chromium these tests skip locally and FAIL when the CI variable is set.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest
import sqlalchemy as sa
from sqlalchemy.engine import make_url

from app.clock import FakeClock
from app.core.events import EventType
from app.main import create_app
from app.store.schema import service_secrets
from app.tenancy.browser_tokens import SECRET_NAME, BrowserTokens
from tests.conftest import make_settings
from tests.dashboard.test_browser import ARTIFACTS, CHROMIUM, CHROMIUM_ARGS
from tests.helpers import run_body
from tests.mocks.uvicorn_thread import serve_in_thread
from tests.ports import free_port

KEY = "browser-stream-key"

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

#: The frontend: everything it knows comes in the URL's fragment (never sent to a server).
PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Run progress</title></head>
<body>
<h1>Run <span id="run"></span></h1>
<p>Status: <output id="status">connecting</output></p>
<ol id="events"></ol>
<p>Output: <output id="output"></output> (<output id="outcome"></output>)</p>
<p>Expired token: <output id="expired"></output>, stream <output id="expired-stream"></output></p>
<script>
const TYPES = __TYPES__;
const ENDED = ["run.completed", "run.failed", "run.cancelled", "run.expired"];
const q = new URLSearchParams(location.hash.slice(1));
const api = q.get("api"), run = q.get("run"), token = q.get("token");
const $ = (id) => document.getElementById(id);
$("run").textContent = run;
const base = `${api}/v1/runs/${encodeURIComponent(run)}`;
const source = new EventSource(`${base}/events?access_token=${encodeURIComponent(token)}`);
source.onopen = () => { $("status").textContent = "streaming"; };
for (const type of TYPES) {
  source.addEventListener(type, async (message) => {
    const event = JSON.parse(message.data);
    const item = document.createElement("li");
    item.dataset.seq = message.lastEventId;
    item.textContent = event.type;
    $("events").append(item);
    if (event.type === "run.requires_action") $("status").textContent = "requires_action";
    if (ENDED.includes(event.type)) {
      source.close();
      const answer = await fetch(`${base}/wait?timeout=0`,
                                 {headers: {Authorization: `Bearer ${token}`}});
      const body = await answer.json();
      $("output").textContent = body.output;
      $("outcome").textContent = answer.headers.get("Wait-Outcome");
      $("status").textContent = body.status;
    }
  });
}
const expired = q.get("expired");
fetch(`${base}/events?access_token=${encodeURIComponent(expired)}`).then(async (r) => {
  $("expired").textContent = `${r.status} ${(await r.json()).type}`;
});
const late = new EventSource(`${base}/events?access_token=${encodeURIComponent(expired)}`);
late.onerror = () => {
  if (late.readyState === EventSource.CLOSED) $("expired-stream").textContent = "closed";
};
</script>
</body></html>
""".replace("__TYPES__", json.dumps([t.value for t in EventType]))


class _Page(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = PAGE.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def page_origin() -> Iterator[str]:
    """The frontend's own origin: a tiny static server on a loopback port of its own."""
    server = ThreadingHTTPServer(("127.0.0.1", free_port()), _Page)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


@pytest.fixture
def api(database_url: str, store: object, page_origin: str) -> Iterator[str]:
    """The API (two worker slots) allowing the page's origin, on its own port."""
    settings = make_settings(database_url, api_keys=KEY, cors_origins=page_origin)
    with serve_in_thread(create_app(settings, worker_slots=2)) as base:
        yield base


@pytest.fixture
def chromium_page(tmp_path: Any) -> Iterator[Any]:
    if not (os.path.isfile(CHROMIUM) and os.access(CHROMIUM, os.X_OK)):
        if os.environ.get("CI"):
            pytest.fail(f"Chromium is not installed at {CHROMIUM} (CI is set)", pytrace=False)
        pytest.skip(f"Chromium is not installed at {CHROMIUM}")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            str(tmp_path / "chromium-profile"),
            executable_path=CHROMIUM,
            headless=True,
            args=CHROMIUM_ARGS,
            viewport={"width": 1000, "height": 760},
        )
        context.set_default_timeout(15_000)
        try:
            yield context.pages[0] if context.pages else context.new_page()
        finally:
            context.close()


def signing_key(database_url: str) -> str:
    """The service's browser-token key, read from its database (for an expired token)."""
    url = make_url(database_url)
    driver = "sqlite" if url.get_backend_name() == "sqlite" else "postgresql+psycopg"
    engine = sa.create_engine(url.set(drivername=driver))
    try:
        with engine.connect() as conn:
            query = sa.select(service_secrets.c.value).where(service_secrets.c.name == SECRET_NAME)
            key: str = conn.execute(query).scalar_one()
            return key
    finally:
        engine.dispose()


def test_a_page_on_another_origin_follows_a_run_with_a_browser_token(
    api: str, page_origin: str, database_url: str, chromium_page: Any
) -> None:
    # chromium_page last: Playwright's loop must start after the async `store` fixture's
    # setup and end before its teardown.
    page = chromium_page
    assert page_origin != api
    admin = httpx.Client(base_url=api, headers={"Authorization": f"Bearer {KEY}"}, timeout=10)
    with admin:
        created = admin.post("/v1/runs", json=run_body().model_dump(mode="json"))
        assert created.status_code == 201, created.text
        run_id = created.json()["id"]
        minted = admin.post(f"/v1/runs/{run_id}/browser-tokens", json={"ttl_seconds": 300})
        assert minted.status_code == 201, minted.text
        token = minted.json()["token"]
        expired, _ = BrowserTokens(
            signing_key(database_url), clock=FakeClock(datetime.fromtimestamp(0, UTC))
        ).mint("default", run_id, 60)

        fragment = httpx.QueryParams(
            {"api": api, "run": run_id, "token": token, "expired": expired}
        )
        page.goto(f"{page_origin}/#{fragment}")
        # The stream replays the log and then goes live: the run suspends.
        page.wait_for_function(
            "() => document.querySelector('#status').innerText === 'requires_action'",
            timeout=20_000,
        )
        # The expired token: a 401 problem the page can read (CORS headers on refusals
        # too), and an EventSource that gives up instead of reconnecting.
        page.wait_for_function("() => document.querySelector('#expired').innerText !== ''")
        assert page.inner_text("#expired") == "401 /problems/browser-token-invalid"
        page.wait_for_function(
            "() => document.querySelector('#expired-stream').innerText === 'closed'"
        )

        suspended = admin.get(f"/v1/runs/{run_id}").json()
        results = [
            {"tool_call_id": c["id"], "output": str(sum(c["arguments"].values()))}
            for c in suspended["required_action"]["tool_calls"]
        ]
        answered = admin.post(f"/v1/runs/{run_id}/tool-results", json={"results": results})
        assert answered.status_code == 200, answered.text

        page.wait_for_function(
            "() => document.querySelector('#status').innerText === 'completed'", timeout=20_000
        )
        assert page.inner_text("#output") == "the sums are 3 and 7"
        assert page.inner_text("#outcome") == "reached"
        seen = page.eval_on_selector_all("#events li", "items => items.map(i => i.innerText)")
        log = [e["type"] for e in admin.get(f"/v1/runs/{run_id}/events").json()["data"]]
        assert seen == log, "the page saw every event once, in order"
        assert seen[-1] == "run.completed" and "run.resumed" in seen
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "browser-token-stream.png"), full_page=True)
