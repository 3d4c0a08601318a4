"""The TypeScript client in Chromium: the built ESM bundle loaded into a page on the API's
own origin streams a run's events with a browser token (and waits, and reads the
messages), running the browser example of docs/client-typescript.md. The page holds the
token only, never a key. Chromium through the Python Playwright, as the dashboard's browser
tests (skipped locally without it, failing when CI is set)."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.clients_typescript.package import KEY, PACKAGE, build
from tests.dashboard.test_browser import CHROMIUM, CHROMIUM_ARGS

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "client-typescript.md"
#: Where the page imports the bundle from (served by the test, on the API's origin).
BUNDLE = "/__agentrun-client/"


def browser_example() -> str:
    """The guide's example that uses a browser token."""
    blocks: list[str] = re.findall(
        r"```js\n(.*?)```\n", GUIDE.read_text(encoding="utf-8"), re.DOTALL
    )
    found = [b for b in blocks if "browserToken: token" in b]
    assert len(found) == 1, "docs/client-typescript.md has one browser example"
    return found[0]


def page_module(example: str, run_id: str, token: str) -> str:
    """The example as a page's module: its imports from the served bundle, `api`, `runId`
    and `token` given, its outcome (or error) left on `window`."""
    code = example.replace('from "@agentrun/client"', f'from "{BUNDLE}index.js"')
    imports = [line for line in code.splitlines() if line.startswith("import ")]
    body = [line for line in code.splitlines() if not line.startswith("import ")]
    return "\n".join(
        [
            *imports,
            f'import * as agentrun from "{BUNDLE}index.js";',
            "try {",
            "  const api = location.origin;",
            f"  const runId = {json.dumps(run_id)};",
            f"  const token = {json.dumps(token)};",
            *body,
            "  let refused = null;",
            "  try { await browser.runs.listPage(); } catch (e) {",
            "    refused = e instanceof agentrun.Forbidden ? e.code : String(e); }",
            "  window.__outcome = { seen, output: final.output,",
            "    messages: conversation.length, refused };",
            "} catch (error) {",
            "  window.__outcome = { error: String(error && error.stack || error) };",
            "}",
        ]
    )


@pytest.fixture
def chromium_page() -> Iterator[Any]:
    if not (os.path.isfile(CHROMIUM) and os.access(CHROMIUM, os.X_OK)):
        if os.environ.get("CI"):
            pytest.fail(f"Chromium is not installed at {CHROMIUM} (CI is set)", pytrace=False)
        pytest.skip(f"Chromium is not installed at {CHROMIUM}")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            page.set_default_timeout(20_000)
            yield page
        finally:
            browser.close()


def test_a_browser_token_streams_a_runs_events_in_chromium(
    service: dict[str, str], chromium_page: Any
) -> None:
    build()
    base = service["AGENTRUN_BASE_URL"]
    with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {KEY}"}) as backend:
        model = {"provider": "scripted", "name": "demo", "delay_ms": 300}
        created = backend.post("/v1/runs", json={"prompt": "Hi from the page", "model": model})
        assert created.status_code == 201, created.text
        run_id = created.json()["id"]
        minted = backend.post(f"/v1/runs/{run_id}/browser-tokens", json={"ttl_seconds": 600})
        assert minted.status_code == 201, minted.text
        token = minted.json()["token"]

        page = chromium_page
        dist = PACKAGE / "dist"

        def serve_bundle(route: Any) -> None:
            name = route.request.url.split(BUNDLE, 1)[1]
            path = dist / name
            assert path.parent == dist and path.is_file(), name
            route.fulfill(body=path.read_bytes(), content_type="text/javascript")

        page.route(f"{base}{BUNDLE}**", serve_bundle)
        page.goto(f"{base}/healthz")  # the API's own origin: no CORS needed
        page.add_script_tag(content=page_module(browser_example(), run_id, token), type="module")
        page.wait_for_function("window.__outcome !== undefined")
        outcome = page.evaluate("window.__outcome")
        log = backend.get(f"/v1/runs/{run_id}/events").json()["data"]
    assert "error" not in outcome, outcome.get("error")
    assert outcome["seen"] == [e["type"] for e in log]
    assert outcome["seen"][-1] == "run.completed"
    assert outcome["output"] == "You said: Hi from the page"
    assert outcome["messages"] == 2
    assert outcome["refused"] == "forbidden"
    assert KEY not in page_module(browser_example(), run_id, token)
