"""Live event streams: resume with Last-Event-ID with no gap and no duplicate."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from app.main import create_app
from app.settings import Settings
from tests.api.sse_client import read_events
from tests.conftest import make_settings
from tests.helpers import run_body
from tests.mocks.uvicorn_thread import serve_in_thread

KEY = "sse-key"


@pytest.fixture
def live(database_url: str, store: object) -> Iterator[tuple[str, Settings]]:
    settings = make_settings(database_url, api_keys=KEY)
    with serve_in_thread(create_app(settings, worker_slots=2)) as base:
        yield base, settings


def answers(run: dict) -> dict:  # type: ignore[type-arg]
    calls = run["required_action"]["tool_calls"]
    return {
        "results": [
            {"tool_call_id": c["id"], "output": str(sum(c["arguments"].values()))} for c in calls
        ]
    }


def test_reconnect_with_last_event_id_sees_every_event_once_in_order(
    live: tuple[str, Settings],
) -> None:
    base, _ = live
    headers = {"Authorization": f"Bearer {KEY}"}
    with httpx.Client(base_url=base, headers=headers, timeout=30) as client:
        run = client.post("/v1/runs", json=run_body().model_dump(mode="json", exclude_none=True))
        run_id = run.json()["id"]
        seen: list[dict] = []  # type: ignore[type-arg]
        stream_headers = {"Accept": "text/event-stream"}
        # First connection: read until the run suspends, then drop the connection.
        with client.stream("GET", f"/v1/runs/{run_id}/events", headers=stream_headers) as r:
            assert r.status_code == 200
            assert r.headers["content-type"].startswith("text/event-stream")
            for event in read_events(r):
                seen.append(event)
                if event["event"] == "run.requires_action":
                    break
        suspended = client.get(f"/v1/runs/{run_id}").json()
        client.post(f"/v1/runs/{run_id}/tool-results", json=answers(suspended))
        # Reconnect from the last id seen: live events until the run ends, then the end.
        resume = {**stream_headers, "Last-Event-ID": str(seen[-1]["id"])}
        with client.stream("GET", f"/v1/runs/{run_id}/events", headers=resume) as r:
            seen.extend(read_events(r))
        log = client.get(f"/v1/runs/{run_id}/events").json()["data"]
    assert [e["id"] for e in seen] == [e["seq"] for e in log], "a gap or a duplicate"
    assert [e["event"] for e in seen] == [e["type"] for e in log]
    assert seen[-1]["event"] == "run.completed"


def test_stream_refusals(live: tuple[str, Settings]) -> None:
    base, _ = live
    stream = {"Accept": "text/event-stream", "Authorization": f"Bearer {KEY}"}
    with httpx.Client(base_url=base, timeout=10) as client:
        assert client.get("/v1/runs/run_missing/events", headers=stream).status_code == 404
        no_key = client.get("/v1/runs/run_missing/events", headers={"Accept": "text/event-stream"})
        assert no_key.status_code == 401
        run = client.post(
            "/v1/runs",
            json=run_body().model_dump(mode="json", exclude_none=True),
            headers={"Authorization": f"Bearer {KEY}"},
        ).json()
        bad = client.get(f"/v1/runs/{run['id']}/events", headers={**stream, "Last-Event-ID": "abc"})
        assert bad.status_code == 422
