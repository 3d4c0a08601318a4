"""A budget-suspended run in a real browser (Chromium, as tests/dashboard/test_browser.py):
its page says why it waits, the "raise limit" form goes through the confirmation, and the
run goes on; on SQLite and PostgreSQL."""

from __future__ import annotations

from typing import Any

import pytest

from tests.dashboard.test_browser import (  # noqa: F401 (fixtures)
    KEY,
    assert_labelled,
    create_run,
    page,
    server,
    shot,
    wait_status,
)

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def test_raising_a_limit_in_chromium_resumes_the_run(page: Any, server: tuple[str, str]) -> None:  # noqa: F811
    base, backend = server
    run_id = create_run(base, limits={"max_total_tokens": 5})
    waiting = wait_status(base, run_id, "requires_action")
    assert waiting["waiting_reason"]["type"] == "budget"

    page.goto(f"{base}/admin/login")
    page.get_by_label("API key").fill(KEY)
    page.keyboard.press("Enter")
    page.wait_for_url(f"{base}/admin")
    page.goto(f"{base}/admin/runs/{run_id}")
    reason = page.locator("#budget-reason")
    assert "max_total_tokens" in reason.inner_text() and "5 allowed" in reason.inner_text()
    assert_labelled(page)
    shot(page, f"{backend}-budget-01-suspended")

    page.get_by_label("Total tokens (now 5)").fill("none")
    page.click("#raise-limits")
    page.wait_for_selector("#confirm")
    assert page.get_by_role("heading", level=1).inner_text() == "Change this run's limits?"
    page.click("#confirm")
    page.wait_for_url(f"{base}/admin/runs/{run_id}?done=limits")
    assert "limits were changed" in page.content()
    resumed = wait_status(base, run_id, "requires_action")  # (now for its tool calls)
    assert resumed["waiting_reason"]["type"] == "tool_results"
    assert resumed["limits"] is None
