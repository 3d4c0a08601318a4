"""The overview in Chromium (as tests/dashboard/test_browser.py, whose fixtures this uses)
against a real server with workers: runs made through the API complete and fold, and the
overview draws their spend by model, the model's calls and latency, and what waited; the
window and split choices are a plain form. docs/img/overview.png is written when missing
or when AGENTRUN_UPDATE_DOCS_SCREENSHOT=1 (SQLite's run)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.main import create_app
from tests.conftest import make_settings
from tests.dashboard.test_browser import (  # noqa: F401  (fixtures: page)
    KEY,
    _fresh_database,
    assert_labelled,
    create_run,
    docs_shot,
    page,
    shot,
    wait_status,
)
from tests.mocks.uvicorn_thread import serve_in_thread

#: model -> (its answer, its tokens in and out, its latency in ms)
MODELS = {
    "gpt-4.1-mini": ("Refund of $30 approved for order 1042.", 1200, 300, 40),
    "claude-sonnet-4": ("The invoice lines add up to $1,240.", 2400, 800, 120),
}
PRICES = {
    "scripted:gpt-4.1-mini": {"input": 0.4, "output": 1.6},
    "scripted:claude-sonnet-4": {"input": 3.0, "output": 15.0},
}


@pytest.fixture(params=["sqlite", "postgres"])
def priced(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, str]]:
    """(base URL, back end) of a real server with workers whose scripted models are
    priced (AGENTRUN_PRICES), so the overview has costs to draw."""
    with _fresh_database(request, tmp_path) as url:
        settings = make_settings(url, api_keys=KEY, prices=PRICES)
        with serve_in_thread(create_app(settings, worker_slots=2)) as base:
            yield base, request.param


def test_the_overview_in_chromium(page: Any, priced: tuple[str, str]) -> None:  # noqa: F811
    base, backend = priced
    done = []
    for n in range(6):
        name = list(MODELS)[n % 2]
        text, tokens_in, tokens_out, delay = MODELS[name]
        usage = {"input_tokens": tokens_in + 100 * n, "output_tokens": tokens_out}
        script = [{"text": text, "usage": usage}]
        model = {"provider": "scripted", "name": name, "script": script, "delay_ms": delay}
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
    assert page.locator("#cost-chart rect").count() >= 1
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
    if backend == "sqlite":
        docs_shot(page, "overview")
