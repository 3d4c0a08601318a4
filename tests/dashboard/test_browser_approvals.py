"""The approvals inbox in a real browser (Chromium through Playwright, as
tests/dashboard/test_browser.py, whose fixtures and helpers this uses) against a real
server with workers, on SQLite and PostgreSQL: a gated call appears in the inbox (and on
its run's page) and in no executor's view; it is rejected with a message, approved with
edited arguments after a refused edit, and approved with the keyboard only, each through
its confirmation page; the API then shows what each decision did."""

from __future__ import annotations

from typing import Any

import httpx

from tests.dashboard.test_approvals import GATED_ADD
from tests.dashboard.test_browser import (  # noqa: F401  (fixtures: page, server)
    KEY,
    assert_labelled,
    create_run,
    page,
    server,
    shot,
    tab_to,
    wait_status,
)

AUTH = {"Authorization": f"Bearer {KEY}"}


def gated_call(base: str, run_id: str) -> dict[str, Any]:
    run = wait_status(base, run_id, "requires_action")
    action = run["required_action"]
    assert action["type"] == "approve_tool_calls", action
    (approval,) = action["approvals"]
    # The executors' view: the open call only, never the gated one.
    assert [c["arguments"] for c in action["tool_calls"]] == [{"a": 1, "b": 2}]
    assert approval["arguments"] == {"a": 3, "b": 4}
    return dict(approval)


def events(base: str, run_id: str) -> list[dict[str, Any]]:
    response = httpx.get(f"{base}/v1/runs/{run_id}/events", headers=AUTH, timeout=10)
    data: list[dict[str, Any]] = response.json()["data"]
    return data


def test_the_approvals_inbox_in_chromium(page: Any, server: tuple[str, str]) -> None:  # noqa: F811
    base, backend = server
    runs = [create_run(base, tools=[GATED_ADD], metadata={"n": i}) for i in range(3)]
    calls = [gated_call(base, r) for r in runs]

    page.goto(f"{base}/admin")
    page.get_by_label("API key").fill(KEY)
    page.keyboard.press("Enter")
    page.wait_for_url(f"{base}/admin")
    page.click("#nav-approvals")
    page.wait_for_url(f"{base}/admin/approvals")
    assert page.get_by_role("heading", level=1).inner_text().startswith("Approvals")
    keys = [f"{r}-{c['id']}" for r, c in zip(runs, calls, strict=True)]  # (ids per run)
    for key in keys:
        assert page.locator(f"#approval-{key}").is_visible()
    assert '"a": 3' in page.inner_text(f"#args-{keys[0]}")
    assert_labelled(page)
    shot(page, f"{backend}-approvals-01-inbox")

    # Reject the first with a message: confirm, then back to the inbox.
    first = keys[0]
    page.fill(f"#message-{first}", "3 is too much")
    page.click(f"#reject-{first}")
    page.wait_for_selector("#confirm")
    assert "Reject this tool call?" in page.inner_text("h1")
    assert "3 is too much" in page.inner_text("main")
    shot(page, f"{backend}-approvals-02-confirm-reject")
    page.click("#confirm")
    page.wait_for_url(f"{base}/admin/approvals?done=reject")
    assert "rejected" in page.inner_text("p.flash")
    assert page.locator(f"#approval-{first}").count() == 0
    rejected = [e for e in events(base, runs[0]) if e["type"] == "tool_call.rejected"]
    assert rejected[0]["data"]["message"] == "3 is too much"
    assert rejected[0]["actor"].startswith("key:")

    # Edit the second's arguments: invalid JSON is shown beside the box, then a fix.
    second = keys[1]
    page.click(f"#edit-{second}-open")
    page.fill(f"#arguments-{second}", "{oops")
    page.click(f"#edit-{second}")
    page.wait_for_selector(f"#arguments-{second}-error")
    assert "not valid JSON" in page.inner_text(f"#arguments-{second}-error")
    assert page.input_value(f"#arguments-{second}") == "{oops"  # kept for correction
    shot(page, f"{backend}-approvals-03-invalid-edit")
    page.fill(f"#arguments-{second}", '{"a": 30, "b": 4}')
    page.click(f"#edit-{second}")
    page.wait_for_selector("#confirm")
    assert "Approve with edited arguments?" in page.inner_text("h1")
    page.click("#confirm")
    page.wait_for_url(f"{base}/admin/runs/{runs[1]}?done=approve")  # (sent from the run page)
    run = httpx.get(f"{base}/v1/runs/{runs[1]}", headers=AUTH, timeout=10).json()
    released = {c["id"]: c["arguments"] for c in run["required_action"]["tool_calls"]}
    assert released[calls[1]["id"]] == {"a": 30, "b": 4}  # executors get the edited arguments
    (approved,) = [e for e in events(base, runs[1]) if e["type"] == "tool_call.approved"]
    assert approved["data"]["arguments"] == {"a": 3, "b": 4}
    assert approved["data"]["executed_arguments"] == {"a": 30, "b": 4}

    # Approve the third with the keyboard only, from the inbox.
    third = keys[2]
    page.goto(f"{base}/admin/approvals")
    page.evaluate("() => document.activeElement && document.activeElement.blur()")
    tab_to(page, f"approve-{third}")
    page.keyboard.press("Enter")
    page.wait_for_selector("#confirm")
    assert "Approve this tool call?" in page.inner_text("h1")
    tab_to(page, "confirm")
    page.keyboard.press("Enter")
    page.wait_for_url(f"{base}/admin/approvals?done=approve")
    assert page.locator("#no-approvals").is_visible()
    shot(page, f"{backend}-approvals-04-empty")
    run = httpx.get(f"{base}/v1/runs/{runs[2]}", headers=AUTH, timeout=10).json()
    assert calls[2]["id"] in {c["id"] for c in run["required_action"]["tool_calls"]}
    assert run["required_action"]["type"] == "submit_tool_results"
