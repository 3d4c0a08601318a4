"""Schedules through the client: `client.schedules` in-process (create, read, change,
pause, list, fire times, delete, and the refusals as the client's exceptions); and the
runs of a trigger and a backfill against the API on a loopback port with workers
in-process (both databases), with the ticks they leave and the schedule each run names."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import httpx
import pytest

from agentrun_client import (
    AsyncClient,
    Client,
    Conflict,
    FireTimeList,
    Forbidden,
    InvalidInput,
    NotFound,
    RunStatus,
    Schedule,
    ScheduleRef,
    TickOutcome,
    ValidationError,
)
from tests.client.conftest import Live, scripted
from tests.client.test_agents import unique

BERLIN = ZoneInfo("Europe/Berlin")
#: A run that waits for a tool's result until it is given: it stays open (not ended).
ADD = {"name": "add", "parameters": {"type": "object"}}
OPEN_RUN = {
    "prompt": "add",
    "model": scripted({"tool_calls": [{"name": "add", "arguments": {"a": 1}}]}, {"text": "ok"}),
    "tools": [ADD],
}


def key() -> str:
    return f"sch-{uuid.uuid4().hex[:8]}"


def hour(moment: datetime) -> datetime:
    return moment.replace(minute=0, second=0, microsecond=0)


async def test_a_schedule_is_created_read_changed_paused_listed_and_deleted(
    asgi: AsyncClient,
) -> None:
    agent = unique("reporter")
    await asgi.agents.create(agent, "reports", scripted({"text": "report"}))
    name, other = key(), key()
    start = datetime(2030, 1, 1, tzinfo=UTC)
    made = await asgi.schedules.create(
        name,
        "0 6 * * 1-5",
        {"agent": agent, "prompt": "the daily report", "metadata": None},
        timezone="Europe/Berlin",
        overlap="buffer_one",
        catchup="skip",
        jitter_seconds=5,
        start_at=start,
    )
    assert isinstance(made, Schedule)
    assert (made.key, made.cron, made.timezone) == (name, "0 6 * * 1-5", "Europe/Berlin")
    assert made.run == {"agent": agent, "prompt": "the daily report"}  # (None: left out)
    assert (made.overlap, made.catchup, made.jitter_seconds) == ("buffer_one", "skip", 5)
    assert made.catchup_window_seconds == 86400 and made.start_at == start
    assert not made.paused and made.note is None and made.last_run_id is None
    # The first weekday 06:00 in Berlin on or after 2030-01-01 (a Tuesday): 05:00 UTC.
    assert made.next_fire_at == datetime(2030, 1, 1, 5, tzinfo=UTC)
    local = made.next_fire_at_local
    assert local is not None and local == made.next_fire_at
    assert (local.hour, local.utcoffset()) == (6, timedelta(hours=1))
    assert made.created_by is not None and made.created_at.tzinfo is not None

    with pytest.raises(Conflict) as taken:
        await asgi.schedules.create(name, "@daily", {"agent": agent, "prompt": "again"})
    assert taken.value.code == "schedule-exists" and name in taken.value.detail
    with pytest.raises(ValidationError) as bad_cron:
        await asgi.schedules.create(other, "61 * * * *", {"agent": agent, "prompt": "x"})
    assert bad_cron.value.code == "invalid-request" and "cron" in bad_cron.value.detail
    with pytest.raises(ValidationError) as bad_zone:
        await asgi.schedules.create(other, "@daily", {"agent": agent, "prompt": "x"},
                                    timezone="Mars/Olympus")  # fmt: skip
    assert "timezone" in bad_zone.value.detail
    with pytest.raises(ValidationError) as bad_word:
        await asgi.schedules.create(other, "@daily", {"agent": agent, "prompt": "x"},
                                    overlap="never")  # type: ignore[arg-type]  # fmt: skip
    assert bad_word.value.code == "validation-error"
    assert [e.loc[-1] for e in bad_word.value.errors] == ["overlap"]
    with pytest.raises(ValidationError) as no_agent:  # (the run's own create checks)
        await asgi.schedules.create(other, "@daily", {"agent": unique("none"), "prompt": "x"})
    assert no_agent.value.detail.startswith("run:")
    with pytest.raises(NotFound):
        await asgi.schedules.get(other)  # (nothing was written)
    with pytest.raises(InvalidInput, match="not a schedule key"):
        await asgi.schedules.get("../runs")
    with pytest.raises(InvalidInput, match="timezone-aware"):
        await asgi.schedules.create(other, "@daily", {"agent": agent, "prompt": "x"},
                                    start_at=datetime(2030, 1, 1))  # fmt: skip

    # A change: the fields given, the others kept; a new timing plans the next tick again.
    changed = await asgi.schedules.update(
        name, cron="30 7 * * *", end_at="2031-01-01T00:00:00Z", note="moved"
    )
    assert (changed.cron, changed.timezone, changed.overlap) == ("30 7 * * *", "Europe/Berlin",
                                                                 "buffer_one")  # fmt: skip
    assert changed.next_fire_at == datetime(2030, 1, 1, 6, 30, tzinfo=UTC)
    assert changed.end_at == datetime(2031, 1, 1, tzinfo=UTC) and changed.note == "moved"
    cleared = await asgi.schedules.update(name, end_at=None, note=None)
    assert cleared.end_at is None and cleared.note is None and cleared.cron == "30 7 * * *"
    rerun = await asgi.schedules.update(name, run={"agent": f"{agent}@1", "prompt": "new"})
    assert rerun.run == {"agent": f"{agent}@1", "prompt": "new"}
    with pytest.raises(ValidationError, match="may not be null"):
        await asgi.schedules.update(name, cron=None)  # type: ignore[arg-type]

    paused = await asgi.schedules.pause(name, note="holidays")
    assert paused.paused and paused.note == "holidays"
    assert (await asgi.schedules.pause(name)).note is None  # (again: the same, no note)
    resumed = await asgi.schedules.resume(name)
    assert not resumed.paused and resumed.note is None
    assert resumed.next_fire_at == datetime(2030, 1, 1, 6, 30, tzinfo=UTC)  # (its start_at)
    assert (await asgi.schedules.get(name)).updated_at >= made.updated_at

    # Fire times across the spring DST jump (Berlin: 02:00 → 03:00 on 2030-03-31).
    await asgi.schedules.create(other, "30 2 * * *", {"agent": agent, "prompt": "night"},
                                timezone="Europe/Berlin", paused=True)  # fmt: skip
    times = await asgi.schedules.fire_times(
        other, from_=datetime(2030, 3, 29, 12, tzinfo=UTC), count=3
    )
    assert isinstance(times, FireTimeList) and times.timezone == "Europe/Berlin"
    assert [t.utc for t in times.data] == [
        datetime(2030, 3, 30, 1, 30, tzinfo=UTC),  # 02:30 CET
        datetime(2030, 3, 31, 1, 0, tzinfo=UTC),  # 02:30 does not exist: right after the jump
        datetime(2030, 4, 1, 0, 30, tzinfo=UTC),  # 02:30 CEST
    ]
    assert [t.local.isoformat() for t in times.data] == [
        "2030-03-30T02:30:00+01:00",
        "2030-03-31T03:00:00+02:00",
        "2030-04-01T02:30:00+02:00",
    ]
    assert all(t.local == t.utc for t in times.data)
    bounded = await asgi.schedules.fire_times(name, count=2)  # (from now: after its start_at)
    assert bounded.data[0].utc == datetime(2030, 1, 1, 6, 30, tzinfo=UTC)
    with pytest.raises(ValidationError):
        await asgi.schedules.fire_times(name, count=0)

    listed = [s.key async for s in asgi.schedules.list(page_size=1)]
    assert name in listed and other in listed and listed == sorted(listed)
    page = await asgi.schedules.list_page(limit=1)
    assert len(page.data) == 1 and page.next_cursor is not None
    assert (await asgi.schedules.ticks_page(name)).data == []

    await asgi.schedules.delete(other)
    with pytest.raises(NotFound) as gone:
        await asgi.schedules.get(other)
    assert gone.value.code == "schedule-not-found"
    for missing in (
        asgi.schedules.delete(other),
        asgi.schedules.update(other, note="x"),
        asgi.schedules.pause(other),
        asgi.schedules.resume(other),
        asgi.schedules.trigger(other),
        asgi.schedules.backfill(other, "2020-01-01T00:00:00Z", "2020-01-02T00:00:00Z"),
        asgi.schedules.fire_times(other),
        asgi.schedules.ticks_page(other),
    ):
        with pytest.raises(NotFound) as unknown:
            await missing
        assert unknown.value.code == "schedule-not-found"


async def test_a_viewer_reads_schedules_and_may_not_write_them(
    asgi: AsyncClient, asgi_app: Any
) -> None:
    agent, name = unique("reporter"), key()
    await asgi.agents.create(agent, "reports", scripted({"text": "report"}))
    await asgi.schedules.create(name, "@daily", {"agent": agent, "prompt": "x"}, paused=True)
    issued = await asgi.http.post("/v1/keys", json={"name": "viewer", "role": "viewer"})
    assert issued.status_code == 201, issued.text
    transport = httpx.ASGITransport(app=asgi_app)
    async with AsyncClient("http://test", issued.json()["secret"], transport=transport) as viewer:
        assert (await viewer.schedules.get(name)).key == name
        assert name in [s.key async for s in viewer.schedules.list()]
        assert len((await viewer.schedules.fire_times(name, count=2)).data) == 2
        assert [t async for t in viewer.schedules.ticks(name)] == []
        for write in (
            viewer.schedules.create(key(), "@daily", {"agent": agent, "prompt": "x"}),
            viewer.schedules.update(name, note="x"),
            viewer.schedules.pause(name),
            viewer.schedules.resume(name),
            viewer.schedules.trigger(name),
            viewer.schedules.delete(name),
        ):
            with pytest.raises(Forbidden):
                await write


def test_trigger_and_backfill_start_runs_that_name_their_schedule(live: Live) -> None:
    name = key()
    with live.client() as client:
        # Paused: the cron never fires during the test; triggers and backfills still do.
        client.schedules.create(name, "0 * * * *", OPEN_RUN, paused=True)
        first = client.schedules.trigger(name)
        assert isinstance(first, TickOutcome) and first.started and first.run_id is not None
        run = client.runs.get(first.run_id)
        assert run.schedule == ScheduleRef(key=name, scheduled_time=first.scheduled_time)
        assert client.schedules.get(name).last_run_id == first.run_id
        # Its run waits for the tool's result (not ended): `skip` lets the next tick go.
        skipped = client.schedules.trigger(name, overlap="skip")
        assert (skipped.outcome, skipped.reason, skipped.run_id) == (
            "skipped",
            "overlap",
            first.run_id,
        )

        top = hour(datetime.now(UTC))
        window = (top - timedelta(hours=3), top - timedelta(hours=1))
        started = client.schedules.backfill(name, *window)
        assert [o.scheduled_time for o in started] == [top - timedelta(hours=h) for h in (3, 2, 1)]
        assert all(o.started and o.run_id for o in started)  # (allow_all, the default)
        for outcome in started:
            assert client.runs.get(str(outcome.run_id)).schedule == ScheduleRef(
                key=name, scheduled_time=outcome.scheduled_time
            )
        again = client.schedules.backfill(name, window[0].isoformat(), window[1].isoformat())
        assert [o.outcome for o in again] == ["exists"] * 3  # (each tick once)
        assert client.schedules.backfill(name, window[0], window[0] + timedelta(minutes=5)) == [
            TickOutcome(scheduled_time=window[0], outcome="exists")
        ]
        with pytest.raises(ValidationError, match="past window"):
            client.schedules.backfill(name, top, datetime.now(UTC) + timedelta(hours=2))

        ticks = list(client.schedules.ticks(name, page_size=2))
        assert [(t.source, t.outcome) for t in ticks] == [
            ("trigger", "skipped"),
            ("trigger", "started"),
            ("backfill", "started"),
            ("backfill", "started"),
            ("backfill", "started"),
        ]  # (newest first)
        assert ticks[0].reason == "overlap" and ticks[1].run_id == first.run_id
        assert [t.scheduled_time for t in ticks[2:]] == [o.scheduled_time for o in started][::-1]
        page = client.schedules.ticks_page(name, limit=2)
        assert [t.scheduled_time for t in page.data] == [t.scheduled_time for t in ticks[:2]]
        assert page.next_cursor is not None
        older = client.schedules.ticks_page(name, limit=10, before=page.next_cursor)
        assert older.data == ticks[2:] and older.next_cursor is None
        before = client.schedules.ticks_page(name, before=ticks[2].scheduled_time)
        assert before.data == ticks[3:]

        client.schedules.delete(name)
        assert client.runs.get(first.run_id).schedule is not None  # (its runs stay)
        for outcome in (first, *started):
            client.runs.cancel(str(outcome.run_id))


def test_a_scheduled_run_of_an_agent_completes(live: Live) -> None:
    agent, name = unique("reporter"), key()
    with live.client() as client:
        client.agents.create(agent, "reports", scripted({"text": "report"}))
        client.schedules.create(name, "@yearly", {"agent": agent, "prompt": "go"}, paused=True)
        outcome = client.schedules.trigger(name, overlap="cancel_other")
        assert outcome.started and outcome.run_id is not None
        done = client.runs.wait(outcome.run_id, RunStatus.COMPLETED, timeout=30)
        assert done.output == "report" and done.schedule is not None
        assert done.schedule.key == name and done.agent is not None
        listed = next(r for r in client.runs.list() if r.id == outcome.run_id)  # (newest first)
        assert listed.schedule == done.schedule


def test_the_bodies_the_client_sends() -> None:
    """What leaves the client for a schedule's fields (no server: a transport that keeps
    the requests)."""
    sent: list[httpx.Request] = []

    def keep(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(404, json={"type": "/problems/schedule-not-found"})

    with Client("http://test", "k", transport=httpx.MockTransport(keep)) as client:
        for call in (
            lambda: client.schedules.create(
                "k1", "@daily", {"prompt": "p", "tools": [ADD], "webhook": "http://127.0.0.1:9/h"},
                start_at=datetime(2030, 1, 1, 1, tzinfo=BERLIN),
            ),
            lambda: client.schedules.update("k1", end_at=None, jitter_seconds=3),
            lambda: client.schedules.pause("k1"),
            lambda: client.schedules.trigger("k1", overlap="skip"),
            lambda: client.schedules.fire_times("k1", from_="2030-01-01T00:00:00+01:00"),
            lambda: client.schedules.ticks_page("k1", limit=5),
        ):  # fmt: skip
            with pytest.raises(NotFound):
                call()
    bodies = [json.loads(r.content) if r.content else None for r in sent]
    assert bodies[0] == {
        "key": "k1",
        "cron": "@daily",
        "run": {"prompt": "p", "tools": [ADD], "webhook": {"url": "http://127.0.0.1:9/h"}},
        "start_at": "2030-01-01T01:00:00+01:00",
    }
    assert [r.method for r in sent] == ["POST", "PATCH", "POST", "POST", "GET", "GET"]
    assert bodies[1] == {"end_at": None, "jitter_seconds": 3}
    assert sent[2].content == b"" and sent[2].url.path == "/v1/schedules/k1/pause"
    assert bodies[3] == {"overlap": "skip"}
    assert sent[4].url.params["from"] == "2030-01-01T00:00:00+01:00"
    assert dict(sent[5].url.params) == {"limit": "5"}
