"""The approvals inbox in a real browser (Chromium through Playwright, as
tests/dashboard/test_browser.py, whose fixtures and helpers this uses) against a real
server with workers, on SQLite and PostgreSQL: a gated call appears in the inbox (and on
its run's page) and in no executor's view; it is rejected with a message, approved with
edited arguments after a refused edit, and approved with the keyboard only, each through
its confirmation page; the API then shows what each decision did.

With a person signed in (PostgreSQL, accounts made on the command line): a card shows its
run's prompt and the model's text; a new approval appears without a reload (and one
decided elsewhere leaves) while a message being typed stays; three calls are approved in
bulk with one confirmation, recorded as three decisions naming the person, and the runs
go on. The inbox's screenshot for the docs (docs/img/approvals-inbox.png) is written when
missing or when AGENTRUN_UPDATE_DOCS_SCREENSHOT=1."""

from __future__ import annotations

from typing import Any

import httpx

from tests.dashboard.test_approvals import GATED_ADD
from tests.dashboard.test_approvals_inbox import LOOKUP, PROMPT, REFUND, SAID, refund_model
from tests.dashboard.test_browser import (  # noqa: F401  (fixtures: page, server, people_server)
    KEY,
    assert_labelled,
    create_run,
    docs_shot,
    page,
    people_server,
    server,
    shot,
    sign_in,
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


def refund_runs(base: str, n: int, **overrides: Any) -> list[tuple[str, str]]:
    """`n` runs each suspended with a `refund` call awaiting approval: (run id, card key)."""
    body = {"prompt": PROMPT, "model": refund_model(lookup=False), "tools": [REFUND]}
    runs = [create_run(base, **{**body, **overrides}) for _ in range(n)]
    out = []
    for run_id in runs:
        (approval,) = wait_status(base, run_id, "requires_action")["required_action"]["approvals"]
        out.append((run_id, f"{run_id}-{approval['id']}"))
    return out


def test_approvals_with_context_live_refresh_and_bulk_in_chromium(
    page: Any,  # noqa: F811
    people_server: tuple[str, str],  # noqa: F811
) -> None:
    base, _ = people_server
    three = refund_runs(base, 3)
    # One of an agent, with a long prompt and another call in its round, and a deadline.
    agent = {
        "name": "support-bot",
        "description": "answers the shop's customers",
        "model": refund_model(),
        "tools": [REFUND, LOOKUP],
        "approval_timeout": 3600,
    }
    made = httpx.post(f"{base}/v1/agents", json=agent, headers=AUTH, timeout=10)
    assert made.status_code == 201, made.text
    long_prompt = PROMPT + " " + "They attached a photo of the broken lid and the receipt. " * 6
    created = httpx.post(
        f"{base}/v1/runs",
        json={"agent": "support-bot", "prompt": long_prompt},
        headers=AUTH,
        timeout=10,
    )
    assert created.status_code == 201, created.text
    context_run = created.json()["id"]
    run = wait_status(base, context_run, "requires_action")
    context_key = f"{context_run}-{run['required_action']['approvals'][0]['id']}"

    sign_in(page, base, "alice")
    page.wait_for_url(f"{base}/admin")
    page.click("#nav-approvals")
    page.wait_for_url(f"{base}/admin/approvals")
    assert_labelled(page)

    # Each card shows what was asked and what the model said before the call.
    first = three[0][1]
    assert page.inner_text(f"#prompt-{first}") == PROMPT
    assert page.inner_text(f"#said-{first}") == SAID
    assert "refund" in page.inner_text(f"#approval-{first}-h")
    assert page.inner_text(f"#prompt-{context_key}").endswith("…")
    assert page.inner_text(f"#agent-of-{context_key}") == "agent support-bot@1"
    assert "lookup" in page.inner_text(f"#others-{context_key}")
    page.click(f"#prompt-{context_key}-more")
    whole = page.locator(f"#approval-{context_key} details.more")
    assert "receipt" in whole.inner_text() and whole.inner_text().count("A-1042") == 1
    assert not page.is_visible(f"#prompt-{context_key}")  # (the whole replaces the excerpt)
    docs_shot(page, "approvals-inbox", until=f"#approval-{context_key}")
    shot(page, "postgres-approvals-05-context")

    # A new approval appears without a reload; a message being typed, and a ticked box, stay.
    page.evaluate("() => { window.__notReloaded = true; }")
    page.fill(f"#message-{first}", "half-typed reason")
    page.check(f"#select-{three[1][1]}")
    ((new_run, new_key),) = refund_runs(base, 1)
    page.wait_for_selector(f"#approval-{new_key}", timeout=20_000)
    assert page.evaluate("() => window.__notReloaded") is True
    assert page.input_value(f"#message-{first}") == "half-typed reason"
    assert page.is_checked(f"#select-{three[1][1]}")
    assert page.locator("article.approval").first.get_attribute("id") == f"approval-{new_key}"
    # One decided elsewhere (the API) leaves the page.
    approval = httpx.get(f"{base}/v1/runs/{context_run}/approvals", headers=AUTH, timeout=10)
    gated = approval.json()["data"][0]
    decided = httpx.post(
        f"{base}/v1/runs/{context_run}/approvals",
        headers=AUTH,
        json={
            "decisions": [
                {
                    "tool_call_id": gated["tool_call_id"],
                    "action": "reject",
                    "arguments_hash": gated["arguments_hash"],
                    "message": "no",
                }
            ]
        },
        timeout=10,
    )
    assert decided.status_code == 200, decided.text
    page.wait_for_selector(f"#approval-{context_key}", state="detached", timeout=20_000)
    assert page.evaluate("() => window.__notReloaded") is True

    # Three approved at once: one confirmation listing them, three decisions by alice.
    for _, k in three:
        page.check(f"#select-{k}")
    page.click("#bulk-approve")
    page.wait_for_selector("#confirm")
    assert page.inner_text("h1") == "Approve these 3 tool calls?"
    listed = page.inner_text("#bulk-list")
    assert all(run_id in listed for run_id, _ in three) and new_run not in listed
    assert "Recorded in the event log as user:alice" in page.inner_text("main")
    shot(page, "postgres-approvals-06-confirm-bulk")
    page.click("#confirm")
    page.wait_for_selector("#bulk-report")
    assert page.inner_text("h1") == "3 of 3 tool calls approved"
    shot(page, "postgres-approvals-07-bulk-done")
    for run_id, _ in three:
        (approved,) = [e for e in events(base, run_id) if e["type"] == "tool_call.approved"]
        assert approved["actor"] == "user:alice"
        run = wait_status(base, run_id, "requires_action")
        (released,) = run["required_action"]["tool_calls"]  # (its executor's now)
        assert run["required_action"]["type"] == "submit_tool_results"
        answered = httpx.post(
            f"{base}/v1/runs/{run_id}/tool-results",
            headers=AUTH,
            json={"results": [{"tool_call_id": released["id"], "output": "refunded 30"}]},
            timeout=10,
        )
        assert answered.status_code == 200, answered.text
    for run_id, _ in three:  # the runs go on past their approvals and finish
        assert wait_status(base, run_id, "completed")["output"] == "refunded"
    page.click("#back-to-inbox")
    page.wait_for_url(f"{base}/admin/approvals")
    assert page.locator("article.approval").count() == 1  # (the new one)
