"""Schedules over HTTP, on SQLite and PostgreSQL: create, read, change, pause, resume,
trigger, backfill, fire times and ticks; roles and tenants; and every hostile body a
problem document that creates nothing."""

from __future__ import annotations

from typing import Any

import httpx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.strategies import JSON_VALUES
from tests.tenancy.test_keys_api import bearer, new_tenant

ECHO = {"provider": "scripted", "name": "echo"}
RUN = {"model": ECHO, "prompt": "summarise the night's tickets"}


async def make(client: httpx.AsyncClient, **fields: Any) -> dict[str, Any]:
    body = {"key": "nightly", "cron": "0 6 * * 1-5", "timezone": "Europe/Berlin", "run": RUN}
    made = await client.post("/v1/schedules", json={**body, **fields})
    assert made.status_code == 201, made.text
    return dict(made.json())


async def keys_now(client: httpx.AsyncClient, headers: dict[str, str] | None = None) -> list[str]:
    listed = await client.get("/v1/schedules", headers=headers or {})
    assert listed.status_code == 200, listed.text
    return [s["key"] for s in listed.json()["data"]]


async def test_a_schedule_is_created_read_changed_and_deleted(client: httpx.AsyncClient) -> None:
    made = await make(client)
    assert made["overlap"] == "skip" and made["catchup"] == "latest"
    assert made["next_fire_at_local"].endswith(("06:00:00+01:00", "06:00:00+02:00"))
    assert (await client.get("/v1/schedules/nightly")).json() == made
    again = await client.post(
        "/v1/schedules", json={"key": "nightly", "cron": "@daily", "run": RUN}
    )
    assert again.status_code == 409 and again.json()["type"] == "/problems/schedule-exists"
    patched = await client.patch(
        "/v1/schedules/nightly", json={"cron": "@hourly", "timezone": "UTC", "overlap": "allow_all"}
    )
    assert patched.status_code == 200, patched.text
    body = patched.json()
    assert (body["cron"], body["overlap"], body["run"]) == ("@hourly", "allow_all", RUN)
    assert body["next_fire_at"].endswith(":00:00Z")
    paused = await client.post("/v1/schedules/nightly/pause", json={"note": "holidays"})
    assert (paused.json()["paused"], paused.json()["note"]) == (True, "holidays")
    resumed = await client.post("/v1/schedules/nightly/resume")
    assert (resumed.json()["paused"], resumed.json()["note"]) == (False, None)
    triggered = await client.post("/v1/schedules/nightly/trigger")
    assert triggered.status_code == 201 and triggered.json()["outcome"] == "started"
    run = (await client.get(f"/v1/runs/{triggered.json()['run_id']}")).json()
    assert run["schedule"] == {
        "key": "nightly",
        "scheduled_time": triggered.json()["scheduled_time"],
    }
    assert (await client.delete("/v1/schedules/nightly")).status_code == 204
    assert (await client.get("/v1/schedules/nightly")).status_code == 404
    assert (await client.get(f"/v1/runs/{run['id']}")).json()["schedule"]["key"] == "nightly"
    assert await keys_now(client) == []


async def test_fire_times_across_the_2027_dst_changes_in_new_york(
    client: httpx.AsyncClient,
) -> None:
    await make(client, key="ny", cron="30 2 * * *", timezone="America/New_York")
    spring = await client.get(
        "/v1/schedules/ny/fire-times", params={"from": "2027-03-13T00:00:00Z", "count": 3}
    )
    assert spring.status_code == 200, spring.text
    assert spring.json() == {
        "timezone": "America/New_York",
        "data": [
            {"utc": "2027-03-13T07:30:00Z", "local": "2027-03-13T02:30:00-05:00"},
            {"utc": "2027-03-14T07:00:00Z", "local": "2027-03-14T03:00:00-04:00"},
            {"utc": "2027-03-15T06:30:00Z", "local": "2027-03-15T02:30:00-04:00"},
        ],
    }
    autumn = await client.get(
        "/v1/schedules/ny/fire-times", params={"from": "2027-11-06T12:00:00Z", "count": 2}
    )
    assert [t["local"] for t in autumn.json()["data"]] == [
        "2027-11-07T02:30:00-05:00",
        "2027-11-08T02:30:00-05:00",
    ]
    await make(client, key="ny-0130", cron="30 1 * * *", timezone="America/New_York")
    repeated = await client.get(
        "/v1/schedules/ny-0130/fire-times", params={"from": "2027-11-06T12:00:00Z", "count": 2}
    )
    assert [t["local"] for t in repeated.json()["data"]] == [
        "2027-11-07T01:30:00-04:00",
        "2027-11-08T01:30:00-05:00",
    ]
    bounded = await make(
        client, key="bounded", cron="@daily", timezone="UTC", end_at="2030-01-02T12:00:00Z"
    )
    assert bounded["end_at"] == "2030-01-02T12:00:00Z"
    times = await client.get(
        "/v1/schedules/bounded/fire-times", params={"from": "2029-12-30T00:00:00Z", "count": 10}
    )
    assert [t["utc"] for t in times.json()["data"]] == [
        "2029-12-31T00:00:00Z",
        "2030-01-01T00:00:00Z",
        "2030-01-02T00:00:00Z",
    ]


async def test_backfill_and_ticks(client: httpx.AsyncClient) -> None:
    await make(client, key="b", cron="0 6 * * *", timezone="UTC")
    window = {"from": "2026-11-01T06:00:00Z", "to": "2026-11-03T06:00:00Z"}
    done = await client.post("/v1/schedules/b/backfill", json=window)
    assert done.status_code == 200, done.text
    times = ["2026-11-01T06:00:00Z", "2026-11-02T06:00:00Z", "2026-11-03T06:00:00Z"]
    assert [(o["scheduled_time"], o["outcome"]) for o in done.json()["data"]] == [
        (t, "started") for t in times
    ]
    again = await client.post("/v1/schedules/b/backfill", json={**window, "overlap": "skip"})
    assert [o["outcome"] for o in again.json()["data"]] == ["exists"] * 3
    page = await client.get("/v1/schedules/b/ticks", params={"limit": 2})
    assert [t["scheduled_time"] for t in page.json()["data"]] == times[::-1][:2]
    rest = await client.get(
        "/v1/schedules/b/ticks", params={"limit": 2, "before": page.json()["next_cursor"]}
    )
    assert [t["scheduled_time"] for t in rest.json()["data"]] == times[:1]
    assert rest.json()["next_cursor"] is None
    for bad, says in [
        ({"from": "2026-11-03T00:00:00Z", "to": "2026-11-01T00:00:00Z"}, "to: must not be"),
        ({"from": "2026-11-01T00:00:00Z", "to": "2999-01-01T00:00:00Z"}, "past window"),
        ({"from": "2000-01-01T00:00:00Z", "to": "2026-11-01T00:00:00Z"}, "more than 500"),
    ]:
        refused = await client.post("/v1/schedules/b/backfill", json=bad)
        assert refused.status_code == 422 and says in refused.json()["detail"], refused.text
    # A minutely cron over 26 years (14 million ticks) is refused as soon as it is too long.
    await make(client, key="m", cron="* * * * *", timezone="UTC")
    years = {"from": "2000-01-01T00:00:00Z", "to": "2026-11-01T00:00:00Z"}
    refused = await client.post("/v1/schedules/m/backfill", json=years)
    assert refused.status_code == 422 and "more than 500" in refused.json()["detail"]
    assert (await client.get("/v1/schedules/m/ticks")).json()["data"] == []
    skipped = await client.post(
        "/v1/schedules/b/backfill",
        json={"from": "2026-10-01T06:00:00Z", "to": "2026-10-03T06:00:00Z", "overlap": "skip"},
    )
    # (the last backfilled run has not ended: no worker runs here)
    assert [(o["outcome"], o["reason"]) for o in skipped.json()["data"]] == [
        ("skipped", "overlap")
    ] * 3


async def test_hostile_bodies_are_4xx_and_create_nothing(client: httpx.AsyncClient) -> None:
    base = {"key": "x", "cron": "0 6 * * *", "run": RUN}
    for bad, says in [
        ({"cron": "0 6 * *"}, "cron:"),
        ({"cron": "99 * * * *"}, "cron:"),
        ({"cron": "@reboot"}, "cron:"),
        ({"timezone": "Europe/Atlantis"}, "timezone:"),
        ({"timezone": "/etc/passwd"}, "timezone:"),
        ({"start_at": "2030-01-02T00:00:00Z", "end_at": "2030-01-01T00:00:00Z"}, "end_at:"),
        ({"run": {"prompt": "x"}}, "run: model is required"),
        ({"run": {**RUN, "previous_run_id": "run_x"}}, "run.previous_run_id"),
        ({"run": {"agent": "nobody", "prompt": "x"}}, "run: agent: no agent"),
        ({"run": {**RUN, "webhook": {"url": "http://127.0.0.1:1/hook"}}}, "run: webhook.url"),
        ({"run": {**RUN, "tool_choice": {"function": "nope"}}}, "run"),
    ]:
        refused = await client.post("/v1/schedules", json={**base, **bad})
        assert refused.status_code == 422, (bad, refused.text)
        assert says in refused.json()["detail"], (bad, refused.json())
    for bad in [
        {"catchup_window_seconds": 0},
        {"catchup_window_seconds": 10**9},
        {"jitter_seconds": -1},
        {"overlap": "queue"},
        {"catchup": "some"},
        {"start_at": "2030-01-01T00:00:00"},  # (no zone: ambiguous)
        {"key": "../etc"},
        {"surprise": 1},
    ]:
        refused = await client.post("/v1/schedules", json={**base, **bad})
        assert refused.status_code == 422, (bad, refused.text)
    assert await keys_now(client) == []
    await make(client, key="kept")
    before = (await client.get("/v1/schedules/kept")).json()
    for bad in [
        {"cron": "nope"},
        {"timezone": "Nowhere"},
        {"run": {"prompt": "x"}},
        {"cron": None},
        {"end_at": "2000-01-01T00:00:00Z", "start_at": "2001-01-01T00:00:00Z"},
    ]:
        refused = await client.patch("/v1/schedules/kept", json=bad)
        assert refused.status_code == 422, (bad, refused.text)
    assert (await client.get("/v1/schedules/kept")).json() == before


JSON = JSON_VALUES
#: Bodies near a schedule's: its fields, each with an arbitrary value.
NEAR = st.fixed_dictionaries(
    {},
    optional={
        k: JSON | st.text(max_size=30)
        for k in ("key", "cron", "timezone", "run", "overlap", "catchup", "start_at", "end_at")
    },
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(JSON | NEAR)
async def test_arbitrary_json_is_refused_or_makes_a_schedule_never_a_500(
    client: httpx.AsyncClient, body: Any
) -> None:
    answer = await client.post("/v1/schedules", json=body)
    assert answer.status_code in (201, 400, 409, 422), answer.text
    patch = await client.patch("/v1/schedules/nightly", json=body)
    assert patch.status_code in (200, 400, 404, 422), patch.text


async def test_roles_and_tenants(client: httpx.AsyncClient) -> None:
    await make(client)
    creator = (await client.post("/v1/keys", json={"name": "c", "role": "creator"})).json()
    as_creator = bearer(creator["secret"])
    refused = await client.post(
        "/v1/schedules", headers=as_creator, json={"key": "c", "cron": "@daily", "run": RUN}
    )
    assert refused.status_code == 403 and refused.json()["permission"] == "schedules:manage"
    for path in ("pause", "resume", "trigger"):
        no = await client.post(f"/v1/schedules/nightly/{path}", headers=as_creator)
        assert no.status_code == 403, path
    assert await keys_now(client, as_creator) == ["nightly"]  # (readers read)
    tenant = await new_tenant(client)
    theirs = await client.post(
        "/v1/keys", params={"tenant": tenant}, json={"name": "t", "role": "admin"}
    )
    other = bearer(theirs.json()["secret"])
    assert await keys_now(client, other) == []
    for method, path in [
        ("GET", "/v1/schedules/nightly"),
        ("PATCH", "/v1/schedules/nightly"),
        ("DELETE", "/v1/schedules/nightly"),
        ("POST", "/v1/schedules/nightly/trigger"),
        ("POST", "/v1/schedules/nightly/pause"),
        ("GET", "/v1/schedules/nightly/ticks"),
        ("GET", "/v1/schedules/nightly/fire-times"),
    ]:
        kwargs: dict[str, Any] = {"json": {}} if method == "PATCH" else {}
        answer = await client.request(method, path, headers=other, **kwargs)
        assert answer.status_code == 404, (method, path, answer.text)
    mine = await client.post(
        "/v1/schedules", headers=other, json={"key": "nightly", "cron": "@daily", "run": RUN}
    )
    assert mine.status_code == 201  # (keys are per tenant)
    assert (await client.get("/v1/schedules/nightly")).json()["cron"] == "0 6 * * 1-5"
