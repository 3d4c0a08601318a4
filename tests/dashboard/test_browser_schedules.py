"""Schedules in a real browser (Chromium, as tests/dashboard/test_browser.py, whose
fixtures and helpers this uses) against a real server with workers, on SQLite and
PostgreSQL: a schedule made over HTTP is on the Schedules page; from its page it is
triggered (through the confirmation page), the new tick links the run the server's
workers complete, whose page names the schedule; then it is paused with a note."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import httpx

from tests.dashboard.test_browser import (  # noqa: F401  (fixtures: page, server)
    KEY,
    assert_labelled,
    docs_shot,
    page,
    server,
    shot,
    wait_status,
)

AUTH = {"Authorization": f"Bearer {KEY}"}
TEXT_ONLY = {"provider": "scripted", "name": "demo", "script": [{"text": "good morning"}]}


def test_a_schedule_triggered_from_its_page_in_chromium(
    page: Any,  # noqa: F811
    server: tuple[str, str],  # noqa: F811
) -> None:
    base, backend = server
    body = {
        "key": "morning",
        "cron": "0 6 * * 1-5",
        "timezone": "Europe/Berlin",
        "run": {"prompt": "the morning report", "model": TEXT_ONLY},
        # (no tick of the cron's own while the test runs: only the trigger's)
        "start_at": (datetime.now(UTC) + timedelta(days=8)).isoformat(),
    }
    made = httpx.post(f"{base}/v1/schedules", json=body, headers=AUTH, timeout=10)
    assert made.status_code == 201, made.text

    page.goto(f"{base}/admin/login")
    page.get_by_label("API key").fill(KEY)
    page.keyboard.press("Enter")
    page.wait_for_url(f"{base}/admin")
    page.click("#nav-schedules")
    page.wait_for_url(f"{base}/admin/schedules")
    row = page.locator("#schedule-morning")
    assert "0 6 * * 1-5" in row.inner_text() and "06:00:00 CE" in row.inner_text()
    shot(page, f"{backend}-schedules-01-list")
    if backend == "sqlite":
        docs_shot(page, "schedules")

    page.click("#open-schedule-morning")
    page.wait_for_url(f"{base}/admin/schedules/morning")
    assert page.locator("#no-ticks").is_visible()
    assert page.locator("#fire-times tbody tr").count() == 5
    assert_labelled(page)
    page.click("#trigger")
    page.wait_for_selector("#confirm")
    assert "Start a run of this schedule now?" in page.inner_text("h1")
    page.click("#confirm")
    page.wait_for_url(f"{base}/admin/schedules/morning?done=trigger-started")
    tick = page.locator("#ticks tr.tick")
    assert tick.count() == 1
    assert tick.locator(".source").inner_text() == "trigger"
    assert tick.locator(".outcome").inner_text() == "started"
    shot(page, f"{backend}-schedules-02-triggered")
    if backend == "sqlite":
        docs_shot(page, "schedule")

    run_id = tick.locator(".run a").inner_text()
    assert wait_status(base, run_id, "completed")["output"] == "good morning"
    tick.locator(".run a").click()
    page.wait_for_url(f"{base}/admin/runs/{run_id}")
    assert page.inner_text("#run-schedule").startswith("started by schedule morning at ")
    page.click("#run-schedule a")
    page.wait_for_url(f"{base}/admin/schedules/morning")

    page.fill("#p-note", "bank holiday")
    page.click("#pause")
    page.wait_for_selector("#confirm")
    assert "bank holiday" in page.inner_text("main")
    page.click("#confirm")
    page.wait_for_url(f"{base}/admin/schedules/morning?done=pause")
    assert page.inner_text("#schedule-state") == "paused"
    assert page.inner_text("#schedule-note") == "bank holiday"
    assert page.locator("#resume").is_visible()
    shot(page, f"{backend}-schedules-03-paused")
    got = httpx.get(f"{base}/v1/schedules/morning", headers=AUTH, timeout=10).json()
    assert (got["paused"], got["note"], got["last_run_id"]) == (True, "bank holiday", run_id)
