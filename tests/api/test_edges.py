"""Edges a client sees: a failed run's usage, one timestamp form everywhere, run ids."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from app.service import new_runs as service_runs
from app.settings import Settings
from tests.api.sse_client import read_events
from tests.api.test_runs_api import body
from tests.conftest import make_settings
from tests.helpers import drive_once
from tests.mocks.receiver import SECRET, Receiver, webhook_receiver
from tests.mocks.uvicorn_thread import serve_in_thread

KEY = "edge-key"
#: RFC 3339 in UTC with `Z`, microseconds when there are any: the one form.
RFC3339_Z = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{6})?Z$")


# --- usage of a failed run ---------------------------------------------------------------


async def test_a_run_that_fails_after_a_billed_call_shows_its_usage(
    client: httpx.AsyncClient, api_settings: Settings
) -> None:
    """The model answered (billed), then the run failed on the answer: the run's usage
    is the ledger's, not null."""
    script = [
        {
            "tool_calls": [{"name": "not_a_tool", "arguments": {}}],
            "usage": {"input_tokens": 123, "output_tokens": 45},
        }
    ]
    created = await client.post(
        "/v1/runs", json=body(model={"provider": "scripted", "name": "demo", "script": script})
    )
    run_id = created.json()["id"]
    store = client.app.state.service.store  # type: ignore[attr-defined]
    assert await drive_once(store, api_settings) is not None
    run = (await client.get(f"/v1/runs/{run_id}")).json()
    assert run["status"] == "failed"
    ledger = (await client.get("/v1/usage")).json()
    assert (ledger["calls"], ledger["input_tokens"], ledger["output_tokens"]) == (1, 123, 45)
    assert run["usage"] is not None
    assert (run["usage"]["input_tokens"], run["usage"]["output_tokens"]) == (123, 45)
    assert run["usage"]["total_tokens"] == ledger["total_tokens"] == 168
    # (Stored without its zero counters, shown with every one.)
    assert run["usage"]["cached_input_tokens"] == run["usage"]["reasoning_tokens"] == 0


async def test_usage_over_the_whole_calendar_answers(client: httpx.AsyncClient) -> None:
    """Ranges at the calendar's ends are ranges like any other (once a 500: an overflow
    past year 9999 while finding the range's whole days)."""
    response = await client.get(
        "/v1/usage", params={"from": "0001-01-01T00:00:00Z", "to": "9999-12-31T23:59:59Z"}
    )
    assert response.status_code == 200, response.text
    assert response.json()["calls"] == 0
    inside = {"from": "9999-12-31T23:10:00Z", "to": "9999-12-31T23:20:00Z"}
    assert (await client.get("/v1/usage", params=inside)).status_code == 200


# --- run ids ---------------------------------------------------------------------------------


def test_run_ids_are_alphanumeric_after_the_prefix() -> None:
    ids = [service_runs.run_id() for _ in range(2000)]
    assert all(re.fullmatch(r"run_[A-Za-z0-9]{21}", i) for i in ids)
    assert len(set(ids)) == len(ids)
    # every symbol is reachable, including from the bytes that map to the last ones
    assert set("".join(i[4:] for i in ids)) == set(service_runs.RUN_ID_ALPHABET)


def test_run_id_random_part_is_uniform_over_the_bytes_it_keeps() -> None:
    """Bytes 248..255 would bias `% 62`: they are dropped, not folded in."""
    stream = iter([bytes([247, 248, 255, 0, 61, 62, 123, 124, 185, 186] + [1] * 22)])
    rid = service_runs.run_id(lambda n: next(stream))
    alphabet = service_runs.RUN_ID_ALPHABET
    expected = [247 % 62, 0, 61, 0, 61, 0, 61, 0] + [1] * 13
    assert rid == "run_" + "".join(alphabet[i] for i in expected)


async def test_ids_minted_before_still_work(
    client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    for old in ("run_-Ab3_xY9kLm2Qr5Tu8Wz", "run__0aB-cD1eF2gH3iJ4kL"):
        monkeypatch.setattr("app.service.runs.run_id", lambda old=old: old)  # (where used)
        assert (await client.post("/v1/runs", json=body())).json()["id"] == old
        assert (await client.get(f"/v1/runs/{old}")).json()["id"] == old
        events = (await client.get(f"/v1/runs/{old}/events")).json()["data"]
        assert events[0]["type"] == "run.created"
        assert (await client.post(f"/v1/runs/{old}/cancel")).json()["status"] == "cancelled"


# --- one timestamp form ----------------------------------------------------------------------


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with webhook_receiver() as r:
        yield r


def timestamps(value: Any) -> list[str]:
    """Every string in `value` that looks like a date-time, whatever its form."""
    if isinstance(value, dict):
        return [t for v in value.values() for t in timestamps(v)]
    if isinstance(value, list):
        return [t for v in value for t in timestamps(v)]
    if isinstance(value, str) and re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d", value):
        return [value]
    return []


def test_api_json_sse_and_webhooks_write_timestamps_alike(
    database_url: str, store: object, receiver: Receiver
) -> None:
    settings = make_settings(
        database_url, api_keys=KEY, webhook_secret=SECRET, webhook_allow_private=True
    )
    with (
        serve_in_thread(create_app_with(settings)) as base,
        httpx.Client(base_url=base, headers={"Authorization": f"Bearer {KEY}"}, timeout=30) as c,
    ):
        run_id = c.post("/v1/runs", json=body(webhook={"url": receiver.url})).json()["id"]
        stream = {"Accept": "text/event-stream"}
        with c.stream("GET", f"/v1/runs/{run_id}/events", headers=stream) as r:
            sse = []
            for event in read_events(r):
                sse.append(event)
                if event["event"] == "run.requires_action":
                    break
        run = c.get(f"/v1/runs/{run_id}").json()
        log = c.get(f"/v1/runs/{run_id}/events").json()["data"]
        usage = c.get("/v1/usage", params={"from": "2020-01-01T00:00:00+00:00"}).json()
        deadline = time.monotonic() + 20
        while not receiver.of_type("run.requires_action") and time.monotonic() < deadline:
            time.sleep(0.02)
    hook = receiver.of_type("run.requires_action")[0].payload
    # the same event has the same created_at in the JSON log and on the live stream
    by_seq = {e["seq"]: e["created_at"] for e in log}
    assert sse and all(e["created_at"] == by_seq[e["id"]] for e in sse)
    found = [
        *timestamps(run),
        *timestamps(log),
        *timestamps(sse),
        *timestamps(hook),
        *timestamps({k: usage[k] for k in ("from", "to")}),
    ]
    assert run["created_at"] in found and run["expires_at"] in found
    assert hook["timestamp"] in found and usage["from"] == "2020-01-01T00:00:00Z"
    assert len(found) >= 10
    bad = [t for t in found if not RFC3339_Z.match(t)]
    assert bad == []


def create_app_with(settings: Settings) -> Any:
    from app.main import create_app

    return create_app(settings, worker_slots=1)
