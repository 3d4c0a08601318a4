"""The dashboard in a real browser: Playwright drives Debian's Chromium (/usr/bin/chromium;
`playwright install` is not used) against a real server (uvicorn, two in-process workers)
on SQLite and on PostgreSQL.

Log in, see a suspended run appear without reloading, open it, submit its tool results
from the page and watch it complete; cancel another run with the keyboard only; check
labels and visible focus. Screenshots go to test-artifacts/; the docs' pictures of the
pages (docs/img/, `docs_shot`) are written when missing or when
AGENTRUN_UPDATE_DOCS_SCREENSHOT=1.

Without Chromium these tests skip locally and FAIL when the CI variable is set.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from sqlalchemy.engine import make_url

from app.main import create_app
from app.store.migrate import upgrade_to_head
from app.tenancy.keys import actor_of
from tests.conftest import make_settings
from tests.e2e.processes import AGENTRUN
from tests.helpers import run_body
from tests.mocks.uvicorn_thread import serve_in_thread

CHROMIUM = os.environ.get("AGENTRUN_TEST_CHROMIUM", "/usr/bin/chromium")
ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"
KEY = "browser-key"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def _unavailable(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"{reason} (CI is set: the browser tests must run)", pytrace=False)
    pytest.skip(reason)


@pytest.fixture
def page(tmp_path: Path) -> Iterator[Any]:
    """A page in a fresh Chromium profile (its own user-data dir)."""
    if not (os.path.isfile(CHROMIUM) and os.access(CHROMIUM, os.X_OK)):
        _unavailable(f"Chromium is not installed at {CHROMIUM}")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("the playwright package is not installed")
    with sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            str(tmp_path / "chromium-profile"),
            executable_path=CHROMIUM,
            headless=True,
            args=CHROMIUM_ARGS,
            viewport={"width": 1400, "height": 860},
            locale="en-US",
            timezone_id="UTC",
        )
        context.set_default_timeout(15_000)
        try:
            yield context.pages[0] if context.pages else context.new_page()
        finally:
            context.close()


def _fresh_sqlite(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'browser.db'}"
    upgrade_to_head(url)
    return url


def _fresh_postgres(server_db: str) -> str:
    """A database of its own on the test server (dropped by the caller)."""
    name = f"agentrun_browser_{secrets.token_hex(4)}"
    admin = make_url(server_db).set(drivername="postgresql", database="postgres")
    with psycopg.connect(admin.render_as_string(hide_password=False), autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    url = admin.set(database=name).render_as_string(hide_password=False)
    upgrade_to_head(url)
    return url


def _drop_postgres(url: str) -> None:
    u = make_url(url)
    admin = u.set(database="postgres").render_as_string(hide_password=False)
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{u.database}" WITH (FORCE)')


@contextlib.contextmanager
def _fresh_database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A migrated database of the fixture's back end (`request.param`) for one test."""
    if request.param == "sqlite":
        yield _fresh_sqlite(tmp_path)
        return
    url = _fresh_postgres(request.getfixturevalue("postgres_url"))
    try:
        yield url
    finally:
        _drop_postgres(url)


@pytest.fixture(params=["sqlite", "postgres"])
def server(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, str]]:
    """(base URL, back end) of a real server with two worker slots on a fresh database."""
    with _fresh_database(request, tmp_path) as url:
        settings = make_settings(url, api_keys=KEY)
        with serve_in_thread(create_app(settings, worker_slots=2)) as base:
            yield base, request.param


PERSON_PASSWORD = "a long pass phrase for alice"


def operators(url: str, *args: str, stdin: str = "") -> str:
    """`agentrun operators …` on the server's database, as an operator would run it."""
    done = subprocess.run(
        [AGENTRUN, "operators", *args],
        input=stdin,
        env={**os.environ, "AGENTRUN_DATABASE_URL": url},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


# (One database: the dashboard above and the accounts' store run on both already; this
# is the people's path through real processes and a real browser.)
@pytest.fixture(params=["postgres"])
def people_server(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, str]]:
    """(base URL, database URL) of a real server whose dashboard has two accounts made
    from the command line: `alice` (operator) and `vera` (viewer)."""
    with _fresh_database(request, tmp_path) as url:
        for username, role in (("alice", "operator"), ("vera", "viewer")):
            args = ("create", "--username", username, "--role", role)
            operators(url, *args, stdin=PERSON_PASSWORD + "\n")
        settings = make_settings(url, api_keys=KEY)
        with serve_in_thread(create_app(settings, worker_slots=2)) as base:
            yield base, url


def create_run(base: str, **overrides: Any) -> str:
    body = run_body(**overrides).model_dump(mode="json")
    response = httpx.post(
        f"{base}/v1/runs", json=body, headers={"Authorization": f"Bearer {KEY}"}, timeout=10
    )
    assert response.status_code == 201, response.text
    run_id: str = response.json()["id"]
    return run_id


def wait_status(base: str, run_id: str, status: str, timeout: float = 20) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        run: dict[str, Any] = httpx.get(
            f"{base}/v1/runs/{run_id}", headers={"Authorization": f"Bearer {KEY}"}, timeout=10
        ).json()
        if run["status"] == status:
            return run
        assert time.monotonic() < deadline, f"{run_id} is {run['status']}, not {status}"
        time.sleep(0.05)


def shot(page: Any, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


DOCS_IMAGES = ROOT / "docs" / "img"


def docs_shot(page: Any, name: str, *, until: str | None = None) -> None:
    """docs/img/<name>.png, the docs' picture of this page, when it is missing or when
    AGENTRUN_UPDATE_DOCS_SCREENSHOT is set (the committed one is rewritten on request
    only); the whole page, or down to the bottom of the element `until` selects."""
    path = DOCS_IMAGES / f"{name}.png"
    if path.exists() and not os.environ.get("AGENTRUN_UPDATE_DOCS_SCREENSHOT"):
        return
    DOCS_IMAGES.mkdir(parents=True, exist_ok=True)
    if until is None:
        page.screenshot(path=str(path), full_page=True)
        return
    box = page.locator(until).first.bounding_box()
    bottom = box["y"] + box["height"] + 16
    page.screenshot(
        path=str(path), clip={"x": 0, "y": 0, "width": 1400, "height": bottom}, full_page=True
    )


UNLABELLED = """() => [...document.querySelectorAll('input, select, textarea')]
  .filter(el => el.type !== 'hidden')
  .filter(el => el.labels.length === 0 && !el.getAttribute('aria-label'))
  .map(el => el.outerHTML)"""


def assert_labelled(page: Any) -> None:
    assert page.evaluate(UNLABELLED) == []


def tab_to(page: Any, element_id: str, limit: int = 150) -> None:
    """Press Tab until the element has the keyboard focus, and check the focus shows."""
    for _ in range(limit):
        page.keyboard.press("Tab")
        if page.evaluate("() => document.activeElement && document.activeElement.id") == element_id:
            outline = page.evaluate(
                "() => { const s = getComputedStyle(document.activeElement);"
                " return [s.outlineStyle, s.outlineWidth]; }"
            )
            assert outline[0] != "none" and outline[1] != "0px", "focus must be visible"
            return
    raise AssertionError(f"#{element_id} is not reachable with Tab")


def test_operator_flow_in_chromium(page: Any, server: tuple[str, str]) -> None:
    base, backend = server

    # Log in: unauthenticated requests land on the login form.
    page.goto(f"{base}/admin")
    assert page.url.startswith(f"{base}/admin/login")
    assert_labelled(page)
    page.get_by_label("API key").fill("not-the-key")
    page.keyboard.press("Enter")
    page.wait_for_selector("#login-error")
    page.get_by_label("API key").fill(KEY)
    page.keyboard.press("Enter")
    page.wait_for_url(f"{base}/admin")
    assert page.get_by_role("heading", level=1).inner_text().startswith("Suspended runs")
    assert_labelled(page)

    # A run suspends while the page is open: the table refreshes itself (no reload).
    page.evaluate("() => { window.__notReloaded = true; }")
    first = create_run(base, metadata={"tenant": "acme", "ticket": "T-1042"})
    page.wait_for_selector(f"#row-{first}", timeout=20_000)
    assert page.evaluate("() => window.__notReloaded") is True
    row = page.locator(f"#row-{first}")
    assert row.locator("ul.calls li").count() == 2
    assert "tool results (2 open)" in row.inner_text()

    # More suspended runs, then the screenshot for the README.
    second = create_run(base, metadata={"tenant": "globex", "ticket": "T-1043"})
    others = [
        create_run(base, metadata={"tenant": "initech", "priority": "high"}),
        create_run(base, prompt="sum the invoice lines", metadata={"tenant": "umbrella"}),
    ]
    for run_id in [second, *others]:
        wait_status(base, run_id, "requires_action")
        page.wait_for_selector(f"#row-{run_id}", timeout=20_000)
    page.wait_for_function(  # the status counts refresh with the table
        "() => document.querySelector('#chip-requires_action').innerText === '4'"
    )
    shot(page, f"{backend}-01-suspended-runs")
    if backend == "sqlite":
        docs_shot(page, "suspended-runs", until="#pager")

    # The auto-refresh keeps the scroll position (only the table body is swapped).
    page.set_viewport_size({"width": 900, "height": 300})
    page.evaluate("() => window.scrollTo(0, 120)")
    scrolled = page.evaluate("() => window.scrollY")
    assert scrolled > 0
    stamp = page.inner_text("#refreshed")
    page.wait_for_function(
        "s => document.querySelector('#refreshed').innerText !== s", arg=stamp, timeout=15_000
    )
    assert page.evaluate("() => window.scrollY") == scrolled
    assert page.evaluate("() => window.__notReloaded") is True
    page.set_viewport_size({"width": 1400, "height": 860})

    # Open the first run and answer its tool calls from the page.
    page.click(f"#open-{first}")
    page.wait_for_url(f"{base}/admin/runs/{first}")
    assert_labelled(page)
    assert page.inner_text("#run-status") == "requires_action"
    page.fill("#output_0", "{not json")
    page.fill("#output_1", "7")
    page.click("#submit-results")
    page.wait_for_selector("#output_0_error")
    assert "not valid JSON" in page.inner_text("#output_0_error")
    assert page.input_value("#output_0") == "{not json"  # kept for correction
    shot(page, f"{backend}-02-invalid-json")
    page.fill("#output_0", "3")
    page.click("#submit-results")
    page.wait_for_selector("#confirm")
    assert "Submit these tool results?" in page.inner_text("h1")
    shot(page, f"{backend}-03-confirm-results")
    page.click("#confirm")
    page.wait_for_url(f"{base}/admin/runs/{first}?done=tool-results")
    # The page reloads itself as the worker finishes the run.
    page.wait_for_function(
        "() => document.querySelector('#run-status').innerText === 'completed'", timeout=20_000
    )
    assert "the sums are 3 and 7" in page.inner_text("ol.conversation")
    events = page.inner_text("table.events")
    assert "run.resumed" in events and actor_of(KEY) in events and "run.completed" in events
    shot(page, f"{backend}-04-completed")
    if backend == "sqlite":
        docs_shot(page, "run")
    assert wait_status(base, first, "completed")["output"] == "the sums are 3 and 7"

    # Cancel the second run with the keyboard only.
    page.goto(f"{base}/admin/runs/{second}")
    page.evaluate("() => document.activeElement && document.activeElement.blur()")
    tab_to(page, "cancel")
    page.keyboard.press("Enter")
    page.wait_for_selector("#confirm")
    assert "Cancel this run?" in page.inner_text("h1")
    assert_labelled(page)
    tab_to(page, "confirm")
    shot(page, f"{backend}-05-confirm-cancel")
    page.keyboard.press("Enter")
    page.wait_for_url(f"{base}/admin/runs/{second}?done=cancel")
    assert page.inner_text("#run-status") == "cancelled"
    assert "The run was cancelled." in page.inner_text("main")
    assert "run.cancelled" in page.inner_text("table.events")
    shot(page, f"{backend}-06-cancelled")
    assert wait_status(base, second, "cancelled")["status"] == "cancelled"

    # The other actions and the overview are keyboard-reachable too.
    page.goto(f"{base}/admin/runs/{others[0]}")
    for element_id in ("submit-results", "extend", "cancel"):
        page.goto(f"{base}/admin/runs/{others[0]}")
        tab_to(page, element_id)
    page.goto(f"{base}/admin/overview")
    assert page.locator("svg.chart rect").count() >= 7
    assert page.inner_text("#count-completed") == "1"
    assert page.inner_text("#count-cancelled") == "1"
    shot(page, f"{backend}-07-overview")

    # Log out with the keyboard: back to the login form.
    page.goto(f"{base}/admin")
    tab_to(page, "logout")
    page.keyboard.press("Enter")
    page.wait_for_url(f"{base}/admin/login")
    page.goto(f"{base}/admin")
    assert page.url.startswith(f"{base}/admin/login")


def sign_in(page: Any, base: str, username: str, password: str = PERSON_PASSWORD) -> None:
    page.goto(f"{base}/admin")
    assert page.url.startswith(f"{base}/admin/login")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(password)
    page.keyboard.press("Enter")


def test_people_sign_in_and_act_as_themselves_in_chromium(
    page: Any, people_server: tuple[str, str]
) -> None:
    base, url = people_server
    backend = "sqlite" if url.startswith("sqlite") else "postgres"
    run_id = create_run(base, metadata={"ticket": "T-7"})
    watched = create_run(base, metadata={"ticket": "T-8"})
    for r in (run_id, watched):
        wait_status(base, r, "requires_action")

    # A wrong password, then the right one: signed in under their own name and role.
    sign_in(page, base, "alice", "not alice's password")
    page.wait_for_selector("#login-error")
    assert "do not match" in page.inner_text("#login-error")
    assert page.input_value("#username") == "alice" and page.input_value("#password") == ""
    assert_labelled(page)
    shot(page, f"{backend}-people-01-login")
    page.get_by_label("Password").fill(PERSON_PASSWORD)
    page.keyboard.press("Enter")
    page.wait_for_url(f"{base}/admin")
    assert page.inner_text("#who") == "signed in as user:alice operator"

    # Alice cancels a run; the event log names her.
    page.goto(f"{base}/admin/runs/{run_id}")
    page.click("#cancel")
    page.wait_for_selector("#confirm")
    assert "Recorded in the event log as user:alice" in page.inner_text("main")
    page.click("#confirm")
    page.wait_for_url(f"{base}/admin/runs/{run_id}?done=cancel")
    assert page.inner_text("#run-status") == "cancelled"
    row = page.locator("table.events tr.ev-run-cancelled")
    assert "user:alice" in row.inner_text()
    shot(page, f"{backend}-people-02-cancelled-by-alice")
    events = httpx.get(
        f"{base}/v1/runs/{run_id}/events", headers={"Authorization": f"Bearer {KEY}"}, timeout=10
    ).json()["data"]
    assert (events[-1]["type"], events[-1]["actor"]) == ("run.cancelled", "user:alice")
    tab_to(page, "logout")
    page.keyboard.press("Enter")
    page.wait_for_url(f"{base}/admin/login")

    # Vera, a viewer, sees the suspended run but is offered no action.
    sign_in(page, base, "vera")
    page.wait_for_url(f"{base}/admin")
    assert page.inner_text("#role") == "viewer"
    page.goto(f"{base}/admin/runs/{watched}")
    assert page.inner_text("#run-status") == "requires_action"
    assert page.locator("#read-only").is_visible()
    assert page.locator("form[action^='/admin/runs/']").count() == 0
    shot(page, f"{backend}-people-03-viewer")

    # Her sessions are revoked from the command line: the page's own poll (every 2 s) is
    # refused and takes her to the login form; so is any page she opens.
    assert "1 session(s) of vera revoked" in operators(url, "sessions", "revoke", "vera")
    page.wait_for_url(lambda u: u.startswith(f"{base}/admin/login"), timeout=15_000)
    page.goto(f"{base}/admin/runs/{watched}")
    assert page.url.startswith(f"{base}/admin/login")
    assert wait_status(base, watched, "requires_action")["status"] == "requires_action"
