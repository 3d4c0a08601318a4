"""A tree of runs in a real browser (Chromium, as tests/dashboard/test_browser.py), on
SQLite and PostgreSQL: agents made over HTTP, a run of the root agent driven by the
server's workers; its page lists every run of the tree with the status the API gives it,
links a child to its parent and root, and leads to the agent's page."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.dashboard.test_browser import (  # noqa: F401 (fixtures)
    KEY,
    assert_labelled,
    docs_shot,
    page,
    server,
    shot,
    wait_status,
)

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")
AUTH = {"Authorization": f"Bearer {KEY}"}


def script(*entries: dict[str, Any]) -> dict[str, Any]:
    return {"provider": "scripted", "name": "echo", "script": list(entries)}


def post(base: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
    response = httpx.post(f"{base}{path}", json=body, headers=AUTH, timeout=10)
    assert response.status_code == 201, response.text
    data: dict[str, Any] = response.json()
    return data


def tree(base: str, root: str) -> list[dict[str, Any]]:
    response = httpx.get(f"{base}/v1/runs", params={"root_run_id": root}, headers=AUTH, timeout=10)
    data: list[dict[str, Any]] = response.json()["data"]
    return data


def calls(*names: str) -> dict[str, Any]:
    return {"tool_calls": [{"name": n, "arguments": {"input": n}} for n in names]}


def agent(base: str, name: str, *entries: dict[str, Any], tools: Any = ()) -> None:
    body = {"name": name, "description": f"the {name}", "model": script(*entries)}
    post(base, "/v1/agents", {**body, "tools": list(tools)})


def test_a_tree_of_runs_in_chromium(page: Any, server: tuple[str, str]) -> None:  # noqa: F811
    base, backend = server
    agent(base, "researcher", {"text": "found it"})
    agent(base, "waiter", calls("lookup"), tools=[{"name": "lookup"}])
    ask, wait = {"name": "ask", "agent": "researcher"}, {"name": "wait", "agent": "waiter"}
    agent(base, "boss", calls("ask", "wait"), tools=[ask, wait])
    root = post(base, "/v1/runs", {"agent": "boss", "prompt": "go"})["id"]
    wait_status(base, root, "requires_action")  # (its calls started the children)
    runs = {r["agent"]["name"]: r["id"] for r in tree(base, root)}
    assert sorted(runs) == ["boss", "researcher", "waiter"]
    wait_status(base, runs["researcher"], "completed")
    wait_status(base, runs["waiter"], "requires_action")
    want = {r["id"]: r["status"] for r in tree(base, root)}
    assert sorted(want.values()) == ["completed", "requires_action", "requires_action"]

    page.goto(f"{base}/admin/login")
    page.get_by_label("API key").fill(KEY)
    page.keyboard.press("Enter")
    page.wait_for_url(f"{base}/admin")
    page.goto(f"{base}/admin/runs/{runs['waiter']}")
    for run_id, status in want.items():
        assert page.inner_text(f"#node-{run_id} > .node-status") == status, run_id
    assert page.inner_text("#run-parent").startswith(root)
    assert page.inner_text("#run-root").startswith(root)
    assert "waiter@1" in page.inner_text("#run-agent")
    assert_labelled(page)
    shot(page, f"{backend}-tree-01-child")
    if backend == "sqlite":
        docs_shot(page, "run-tree")

    page.click(f"#node-{root} > a")
    page.wait_for_url(f"{base}/admin/runs/{root}")
    assert page.locator("#run-parent").count() == 0
    page.click("#run-agent a")
    page.wait_for_url(f"{base}/admin/agents/boss#v1")
    assert page.get_by_role("heading", level=1).inner_text() == "Agent boss version 1"
    assert "agent researcher" in page.inner_text("#latest-tools")
    shot(page, f"{backend}-tree-02-agent")
    page.click("#nav-agents")
    page.wait_for_url(f"{base}/admin/agents")
    assert page.locator("table.agents tbody tr").count() == 3
    shot(page, f"{backend}-tree-03-agents")
    if backend == "sqlite":
        docs_shot(page, "agents")
