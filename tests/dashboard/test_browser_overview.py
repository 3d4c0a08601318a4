"""The overview in Chromium (as tests/dashboard/test_browser.py, whose fixtures this uses)
against a real server with workers: runs made through the API complete and fold, and the
overview draws their spend by model, the model's calls and latency, and what waited; the
window and split choices are a plain form. docs/img/overview.png is written when missing
or when AGENTRUN_UPDATE_DOCS_SCREENSHOT=1 (SQLite's run)."""

from __future__ import annotations

import os
from typing import Any

from tests.dashboard.test_browser import (  # noqa: F401  (fixtures: page, server)
    KEY,
    ROOT,
    assert_labelled,
    create_run,
    page,
    server,
    shot,
    wait_status,
)

SCRIPTS = {
    "gpt-4.1-mini": [{"text": "Refund of $30 approved for order 1042."}],
    "claude-sonnet-4": [{"text": "The invoice lines add up to $1,240."}],
}


def test_the_overview_in_chromium(page: Any, server: tuple[str, str]) -> None:  # noqa: F811
    base, backend = server
    done = []
    for n in range(6):
        name = list(SCRIPTS)[n % 2]
        model = {"provider": "scripted", "name": name, "script": SCRIPTS[name]}
        done.append(create_run(base, model=model, tools=[], metadata={"n": n}))
    waiting = create_run(base)  # (a tool round: it suspends)
    for run_id in done:
        wait_status(base, run_id, "completed")
    wait_status(base, waiting, "requires_action")

    page.goto(f"{base}/admin/overview")
    page.get_by_label("API key").fill(KEY)
    page.keyboard.press("Enter")
    page.wait_for_url(f"{base}/admin/overview")
    assert page.get_by_role("heading", level=1).inner_text().startswith("Overview")
    # Spend by model: one stacked bar for this hour, its parts titled by model.
    titles = page.locator("#tokens-chart rect title").evaluate_all(
        "els => els.map(e => e.textContent)"
    )
    assert any("scripted:gpt-4.1-mini" in t for t in titles), titles
    assert any("scripted:claude-sonnet-4" in t for t in titles), titles
    totals = page.locator("#spend-totals tbody tr").all_inner_texts()
    assert len(totals) == 3 and all("scripted:" in t for t in totals), totals
    # Each model's calls with their latency (answered ones: a figure, never a dash).
    health = page.locator("#health tbody tr[data-model='scripted:gpt-4.1-mini']")
    assert health.locator("td").nth(2).inner_text() == "3"
    assert "ms" in health.locator("td").nth(3).inner_text()
    # The window and split are a form: by agent, over 7 days.
    page.select_option("#o-window", "7d")
    page.select_option("#o-split", "agent")
    page.get_by_role("button", name="Show").click()
    page.wait_for_url(f"{base}/admin/overview?window=7d&split=agent*")
    assert page.locator("#spend-totals tbody tr").all_inner_texts()[0].startswith("(no agent)")
    assert_labelled(page)
    page.select_option("#o-window", "24h")
    page.select_option("#o-split", "model")
    page.get_by_role("button", name="Show").click()
    page.wait_for_url(f"{base}/admin/overview?window=24h&split=model*")
    shot(page, f"{backend}-overview")
    docs_shot = ROOT / "docs" / "img" / "overview.png"
    if backend == "sqlite" and (
        not docs_shot.exists() or os.environ.get("AGENTRUN_UPDATE_DOCS_SCREENSHOT")
    ):
        docs_shot.parent.mkdir(exist_ok=True)
        page.screenshot(path=str(docs_shot), full_page=True)
