"""A fork from the dashboard in a real browser (Chromium, as tests/dashboard/test_browser.py),
on SQLite and PostgreSQL: a run driven by the server's workers, answered over HTTP; on
its page "Fork from here" at a checkpoint of its conversation, confirmed, lands on the
fork's page, which names the run and the checkpoint it was forked from, and the server's
workers take the fork on from there."""

from __future__ import annotations

import re
from typing import Any

import httpx
import pytest

from tests.dashboard.test_browser import (  # noqa: F401 (fixtures)
    KEY,
    assert_labelled,
    page,
    server,
    shot,
    wait_status,
)

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")
AUTH = {"Authorization": f"Bearer {KEY}"}
SCRIPT = [
    {"tool_calls": [{"name": "add", "arguments": {"a": 1, "b": 2}}]},
    {"text": "the sum is 3"},
]


def completed(base: str) -> str:
    """A run that called `add` once (answered over HTTP) and answered: 4 checkpoints."""
    body = {
        "prompt": "add 1+2",
        "model": {"provider": "scripted", "name": "demo", "script": SCRIPT},
        "tools": [{"name": "add", "parameters": {"type": "object"}}],
    }
    made = httpx.post(f"{base}/v1/runs", json=body, headers=AUTH, timeout=10)
    assert made.status_code == 201, made.text
    run_id: str = made.json()["id"]
    waiting = wait_status(base, run_id, "requires_action")
    (call,) = waiting["required_action"]["tool_calls"]
    results = {"results": [{"tool_call_id": call["id"], "output": 3}]}
    sent = httpx.post(
        f"{base}/v1/runs/{run_id}/tool-results", json=results, headers=AUTH, timeout=10
    )
    assert sent.status_code == 200, sent.text
    wait_status(base, run_id, "completed")
    return run_id


def test_fork_from_here_in_chromium(page: Any, server: tuple[str, str]) -> None:  # noqa: F811
    base, backend = server
    run_id = completed(base)
    page.goto(f"{base}/admin/login")
    page.get_by_label("API key").fill(KEY)
    page.keyboard.press("Enter")
    page.wait_for_url(f"{base}/admin")
    page.goto(f"{base}/admin/runs/{run_id}")
    assert page.locator("li.checkpoint").count() == 4
    assert_labelled(page)
    page.fill("#fork-message-3", "and 2+2?")
    shot(page, f"{backend}-fork-01-checkpoints")
    page.click("#fork-3")  # (after the round's results)
    page.wait_for_selector("#confirm")
    assert "Fork this run here?" in page.inner_text("h1")
    assert "and 2+2?" in page.inner_text("main")
    page.click("#confirm")
    page.wait_for_url(re.compile(rf"{re.escape(base)}/admin/runs/run_\w+\?done=fork"))
    fork_id = page.url.split("/admin/runs/")[1].split("?")[0]
    assert fork_id != run_id
    shown = page.inner_text("#run-forked-from")
    assert shown == f"{run_id} at checkpoint 3"
    assert page.get_attribute("#run-forked-from a", "href") == f"/admin/runs/{run_id}"
    # The server's workers take it on: it asks the model, which answers (turn 2).
    fork = wait_status(base, fork_id, "completed")
    assert fork["forked_from"]["checkpoint"] == 3 and fork["output"] == "the sum is 3"
    shot(page, f"{backend}-fork-02-the-fork")
    # The original lists it; a second fork replaces the recorded result (3) with 5.
    page.goto(f"{base}/admin/runs/{run_id}")
    assert fork_id in page.inner_text("#run-forks")
    page.click("details.patch-result summary")
    page.fill(f"#fork-output-{call_id(page)}", "5")
    shot(page, f"{backend}-fork-03-another-result")
    page.click(f"#fork-result-{call_id(page)}")
    page.wait_for_selector("#confirm")
    assert "becomes" in page.inner_text("main") and "5" in page.inner_text("main")
    page.click("#confirm")
    page.wait_for_url(re.compile(rf"{re.escape(base)}/admin/runs/run_\w+\?done=fork"))
    patched_id = page.url.split("/admin/runs/")[1].split("?")[0]
    assert patched_id not in (run_id, fork_id)
    got = httpx.get(f"{base}/v1/runs/{patched_id}/messages", headers=AUTH, timeout=10).json()
    result = got["data"][2]["message"]["content"][0]
    assert result["content"] == [{"type": "text", "text": "5"}]


def call_id(browser_page: Any) -> str:
    """The id of the one recorded result's call on a run's page."""
    found = browser_page.get_attribute("details.patch-result input[name=tool_call_id]", "value")
    assert found
    return str(found)
