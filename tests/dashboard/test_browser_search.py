"""Finding runs in a real browser (Chromium, as tests/dashboard/test_browser.py), on SQLite
and PostgreSQL: runs made over HTTP (one from a named agent), then the runs list's form
searched by a run id's first characters and by the agent; each row shows its prompt's
start. docs/img/runs-search.png (the dashboard's docs) is written when missing or when
AGENTRUN_UPDATE_DOCS_SCREENSHOT=1."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.dashboard.test_browser import (  # noqa: F401 (fixtures)
    KEY,
    assert_labelled,
    create_run,
    docs_shot,
    page,
    server,
    shot,
    wait_status,
)

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")
AUTH = {"Authorization": f"Bearer {KEY}"}
PROMPT = "Find every invoice of ACME Corp from the third quarter and total them by currency"


def post(base: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
    response = httpx.post(f"{base}{path}", json=body, headers=AUTH, timeout=10)
    assert response.status_code == 201, response.text
    data: dict[str, Any] = response.json()
    return data


def search(tab: Any, **fields: str) -> None:
    """Fill the filter form's fields (by id) and submit it with the keyboard."""
    for field, value in fields.items():
        if tab.locator(f"#{field}").evaluate("e => e.tagName") == "SELECT":
            tab.select_option(f"#{field}", value)
        else:
            tab.fill(f"#{field}", value)
    tab.focus("#f-id")
    with tab.expect_navigation():
        tab.keyboard.press("Enter")


def test_runs_found_by_id_prefix_and_by_agent_in_chromium(
    page: Any,  # noqa: F811
    server: tuple[str, str],  # noqa: F811
) -> None:
    base, backend = server
    model = {"provider": "scripted", "name": "echo", "script": [{"text": "found 3 invoices"}]}
    post(base, "/v1/agents", {"name": "researcher", "description": "looks up", "model": model})
    found = post(base, "/v1/runs", {"agent": "researcher", "prompt": PROMPT})["id"]
    waiting = create_run(base, metadata={"ticket": "T-1042"})
    other = create_run(base, prompt="sum the invoice lines", metadata={"ticket": "T-1043"})
    wait_status(base, found, "completed")
    for run_id in (waiting, other):
        wait_status(base, run_id, "requires_action")

    page.goto(f"{base}/admin/login")
    page.get_by_label("API key").fill(KEY)
    page.keyboard.press("Enter")
    page.wait_for_url(f"{base}/admin")
    assert_labelled(page)

    # A run id's first characters (without `run_`): that run, whatever its status.
    search(page, **{"f-status": "any", "f-id": waiting[4:10]})
    assert page.locator("tbody#run-rows tr[id^='row-']").count() == 1
    assert page.locator(f"#row-{waiting}").is_visible()
    assert page.input_value("#f-id") == waiting[:10]
    assert "add 1+2 and 3+4" in page.inner_text(f"#prompt-{waiting}")
    shot(page, f"{backend}-search-01-id-prefix")

    # By agent: the run it started, its prompt's start shown and whole on hover.
    search(page, **{"f-id": "", "f-agent": "researcher"})
    page.wait_for_selector(f"#row-{found}")
    assert page.locator("tbody#run-rows tr[id^='row-']").count() == 1
    excerpt = page.locator(f"#prompt-{found}")
    assert excerpt.inner_text().startswith("Find every invoice of ACME Corp")
    assert excerpt.get_attribute("title") == PROMPT
    assert "researcher@1" in page.inner_text(f"#row-{found} td.agent")
    assert_labelled(page)
    shot(page, f"{backend}-search-02-agent")

    # Every tenant's runs (the key is the default tenant's admin): a Tenant column.
    search(page, **{"f-agent": "", "f-tenant": "*"})
    for run_id in (found, waiting, other):
        page.wait_for_selector(f"#row-{run_id}")
    assert page.inner_text(f"#row-{other} td.tenant") == "default"
    if backend == "sqlite":
        docs_shot(page, "runs-search", until="#pager")

    # A malformed prefix: said on the page, the rest of the search kept.
    search(page, **{"f-id": "run_!!"})
    assert "run id:" in page.inner_text("p.error")
    assert page.locator(f"#row-{found}").is_visible()
