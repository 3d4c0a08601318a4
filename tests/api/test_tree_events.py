"""A tree's events (`GET /v1/runs/{id}/events?tree=true`), on SQLite and PostgreSQL: the
root's and every descendant's, each tagged with its `run_id`; a page continues from its
`next_cursor` and a stream from its last `id` (`Last-Event-ID`) with no gap and no
duplicate; a child started while the stream is open joins it; another tenant's root is a
404; a browser token for the root reads the tree."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from app.main import create_app
from app.store.run_records import NewEvent
from app.store.runs import RunStore
from tests.api.sse_client import read_events
from tests.conftest import make_settings
from tests.helpers import drive_due
from tests.mocks.uvicorn_thread import serve_in_thread

ECHO = {"provider": "scripted", "name": "echo"}
SSE = {"Accept": "text/event-stream"}
KEY = "tree-sse-key"


def script(*entries: dict[str, Any]) -> dict[str, Any]:
    return {**ECHO, "script": list(entries)}


def asks(n: int) -> dict[str, Any]:
    """A model turn that calls the agent tool `ask` `n` times."""
    return {"tool_calls": [{"name": "ask", "arguments": {"input": f"q{i}"}} for i in range(n)]}


LEAF = {"name": "leaf", "description": "answers", "model": script({"text": "found it"})}
#: A leaf that first waits for its client's `lookup` (so the test decides when it ends).
WAITING_LEAF = {
    **LEAF,
    "model": script({"tool_calls": [{"name": "lookup", "arguments": {}}]}, {"text": "ok"}),
    "tools": [{"name": "lookup"}],
}


def the_log(log: list[dict[str, Any]]) -> list[tuple[str, int]]:
    return [(e["run_id"], e["seq"]) for e in log]


def assert_whole(seen: list[tuple[str, int]], logs: dict[str, list[int]]) -> None:
    """`seen` holds each run's log once, each run's events in order."""
    assert Counter(seen) == Counter((r, s) for r, seqs in logs.items() for s in seqs), (
        "a gap or a duplicate"
    )
    for run_id, seqs in logs.items():
        assert [s for r, s in seen if r == run_id] == seqs


async def logs_of(client: httpx.AsyncClient, root_id: str) -> dict[str, list[int]]:
    """Each run's own log (the single-run read), by run id."""
    tree = (await client.get("/v1/runs", params={"root_run_id": root_id})).json()["data"]
    logs = {}
    for run in tree:
        log = (await client.get(f"/v1/runs/{run['id']}/events")).json()["data"]
        assert {e["run_id"] for e in log} == {run["id"]}
        logs[run["id"]] = [e["seq"] for e in log]
    return logs


async def finished_tree(client: httpx.AsyncClient, store: RunStore) -> str:
    """A completed root whose two children (agent `leaf`) completed: its id."""
    assert (await client.post("/v1/agents", json=LEAF)).status_code == 201
    body = {
        "prompt": "go",
        "model": script(asks(2), {"text": "all done"}),
        "tools": [{"name": "ask", "agent": "leaf"}],
    }
    root = (await client.post("/v1/runs", json=body)).json()
    await drive_due(store, client.app.state.settings)  # type: ignore[attr-defined]
    assert (await client.get(f"/v1/runs/{root['id']}")).json()["status"] == "completed"
    return str(root["id"])


async def every_page(
    client: httpx.AsyncClient, root_id: str, limit: int
) -> tuple[list[dict[str, Any]], str]:
    """The tree's events, page after page of `limit`; the last page's `next_cursor`."""
    events: list[dict[str, Any]] = []
    cursor = None
    while True:
        params: dict[str, Any] = {"tree": "true", "limit": limit}
        if cursor is not None:
            params["cursor"] = cursor
        response = await client.get(f"/v1/runs/{root_id}/events", params=params)
        assert response.status_code == 200, response.text
        page = response.json()["data"]
        events.extend(page)
        cursor = response.json()["next_cursor"]
        if len(page) < limit:
            return events, cursor


async def test_a_page_holds_the_trees_events_by_time_and_continues_from_its_cursor(
    client: httpx.AsyncClient, store: RunStore
) -> None:
    root_id = await finished_tree(client, store)
    logs = await logs_of(client, root_id)
    assert len(logs) == 3 and all(logs.values())
    events, cursor = await every_page(client, root_id, 4)
    assert_whole(the_log(events), logs)
    when = [(e["created_at"], e["run_id"], e["seq"]) for e in events]
    assert when == sorted(when)
    # The last cursor is where later events would start: nothing yet.
    url = f"/v1/runs/{root_id}/events"
    later = await client.get(url, params={"tree": "true", "cursor": cursor})
    assert later.json() == {"data": [], "next_cursor": cursor}
    # A run's own log says nothing of a cursor.
    assert (await client.get(f"/v1/runs/{root_id}/events")).json()["next_cursor"] is None


async def test_pages_keep_each_runs_order_when_its_clock_went_back(
    client: httpx.AsyncClient, store: RunStore
) -> None:
    root_id = await finished_tree(client, store)
    child = next(r for r in await logs_of(client, root_id) if r != root_id)
    an_hour_ago = datetime.now(UTC) - timedelta(hours=1)  # (a writer whose clock is behind)
    assert await store.append_events(child, None, [NewEvent("note", {})], an_hour_ago)
    logs = await logs_of(client, root_id)
    for limit in (1, 2, 5):
        events, _ = await every_page(client, root_id, limit)
        assert_whole(the_log(events), logs)


async def test_a_finished_trees_stream_resumes_from_any_id_with_the_rest(
    client: httpx.AsyncClient, store: RunStore
) -> None:
    root_id = await finished_tree(client, store)
    logs = await logs_of(client, root_id)
    url = f"/v1/runs/{root_id}/events"
    streamed = await client.get(url, params={"tree": "true"}, headers=SSE)
    assert streamed.status_code == 200, streamed.text
    events = list(read_events(streamed))
    assert_whole(the_log(events), logs)
    assert {e["run_id"] for e in events if e["event"] == "run.completed"} == set(logs)
    for cut in (0, len(events) // 2, len(events) - 1):
        last_id = events[cut]["id"]
        resume = {**SSE, "Last-Event-ID": last_id}
        rest = await client.get(url, params={"tree": "true"}, headers=resume)
        assert_whole(the_log(events[: cut + 1]) + the_log(list(read_events(rest))), logs)
        # (the same position as a query parameter, for a client that cannot send headers)
        again = await client.get(url, params={"tree": "true", "cursor": last_id}, headers=SSE)
        assert the_log(list(read_events(again))) == the_log(list(read_events(rest)))


async def test_another_tenant_gets_404_and_a_browser_token_for_the_root_reads_the_tree(
    client: httpx.AsyncClient, store: RunStore
) -> None:
    root_id = await finished_tree(client, store)
    logs = await logs_of(client, root_id)
    tenant = "tree-other"
    assert (await client.post("/v1/tenants", json={"id": tenant})).status_code == 201
    key = await client.post(
        "/v1/keys", params={"tenant": tenant}, json={"name": "other", "role": "admin"}
    )
    theirs = {"Authorization": f"Bearer {key.json()['secret']}"}
    url = f"/v1/runs/{root_id}/events"
    for headers in (theirs, {**theirs, **SSE}):
        refused = await client.get(url, params={"tree": "true"}, headers=headers)
        assert refused.status_code == 404, refused.text
        assert refused.json()["type"] == "/problems/run-not-found"
    minted = await client.post(f"/v1/runs/{root_id}/browser-tokens")
    token = minted.json()["token"]
    page = await client.get(
        url, params={"tree": "true", "access_token": token}, headers={"Authorization": ""}
    )
    assert page.status_code == 200, page.text
    assert_whole(the_log(page.json()["data"]), logs)
    child = next(r for r in logs if r != root_id)
    other = await client.get(
        f"/v1/runs/{child}/events",
        params={"tree": "true", "access_token": token},
        headers={"Authorization": ""},
    )
    assert other.status_code == 404  # (the token is the root's, not its children's)


@pytest.mark.parametrize(
    ("params", "headers"),
    [
        ({"tree": "true", "cursor": "not-a-cursor"}, {}),
        ({"tree": "true"}, {**SSE, "Last-Event-ID": "eyJhIjotMX0"}),  # {"a":-1}
        ({"tree": "true", "after": 3}, {}),
        ({"cursor": "eyJhIjoxfQ"}, {}),  # a cursor without tree=true
        ({}, {**SSE, "Last-Event-ID": "eyJhIjoxfQ"}),  # a cursor as a run's Last-Event-ID
    ],
)
async def test_a_bad_position_is_a_422(
    client: httpx.AsyncClient, store: RunStore, params: dict[str, Any], headers: dict[str, str]
) -> None:
    root_id = await finished_tree(client, store)
    response = await client.get(f"/v1/runs/{root_id}/events", params=params, headers=headers)
    assert response.status_code == 422, response.text
    assert response.headers["content-type"].startswith("application/problem+json")


@pytest.fixture
def live(database_url: str, store: object) -> Iterator[str]:
    """A server with workers (its scripted runs move by themselves)."""
    settings = make_settings(database_url, api_keys=KEY)
    with serve_in_thread(create_app(settings, worker_slots=2)) as base:
        yield base


def answer(client: httpx.Client, run_id: str) -> None:
    """Answer the run's pending client calls."""
    calls = client.get(f"/v1/runs/{run_id}").json()["required_action"]["tool_calls"]
    results = [{"tool_call_id": c["id"], "output": "x"} for c in calls]
    response = client.post(f"/v1/runs/{run_id}/tool-results", json={"results": results})
    assert response.status_code == 200, response.text


def test_children_started_while_streaming_join_and_a_reconnect_gets_the_rest(
    live: str,
) -> None:
    headers = {"Authorization": f"Bearer {KEY}"}
    with httpx.Client(base_url=live, headers=headers, timeout=30) as client:
        assert client.post("/v1/agents", json=WAITING_LEAF).status_code == 201
        # The root first waits for its client's `start`: its children start only once the
        # test answers it, with the stream open.
        body = {
            "prompt": "go",
            "model": script(
                {"tool_calls": [{"name": "start", "arguments": {}}]}, asks(2), {"text": "done"}
            ),
            "tools": [{"name": "start"}, {"name": "ask", "agent": "leaf"}],
        }
        root_id = client.post("/v1/runs", json=body).json()["id"]
        url = f"/v1/runs/{root_id}/events"
        seen: list[dict[str, Any]] = []
        children: set[str] = set()
        with client.stream("GET", url, params={"tree": "true"}, headers=SSE) as r:
            assert r.status_code == 200
            for event in read_events(r):
                seen.append(event)
                if event["event"] == "run.requires_action" and event["run_id"] == root_id:
                    answer(client, root_id)
                if event["event"] == "run.children_started":
                    children = {c["run_id"] for c in event["data"]["children"]}
                waiting = {e["run_id"] for e in seen if e["event"] == "run.requires_action"}
                if children and children <= waiting:
                    break  # (both children wait for their clients: drop the connection)
        assert len(children) == 2
        for child in children:
            answer(client, child)
        resume = {**SSE, "Last-Event-ID": seen[-1]["id"]}
        with client.stream("GET", url, params={"tree": "true"}, headers=resume) as r:
            seen.extend(read_events(r))  # (until the root and its children have ended)
        logs = {
            run_id: [e["seq"] for e in client.get(f"/v1/runs/{run_id}/events").json()["data"]]
            for run_id in (root_id, *children)
        }
    assert_whole(the_log(seen), logs)
    ended = {e["run_id"] for e in seen if e["event"] == "run.completed"}
    assert ended == {root_id, *children}
