"""Schedules on the dashboard, on both back ends: the Schedules page and a schedule's page
(its fields, run body, next fire times in UTC and its zone, its ticks), its pause, resume
and trigger through a confirmation step for a role holding schedules:manage (none of it
for a viewer or an operator, whose posts are refused), a scheduled run's page naming its
schedule; another tenant's schedules are in no page and no action reaches them."""

from __future__ import annotations

import html
import itertools
import re
from datetime import date, datetime
from typing import Any, get_args
from zoneinfo import ZoneInfo

import httpx
import pytest
from fastapi import FastAPI

from app.agents.service import AgentService
from app.agents.specs import AgentIn
from app.dashboard import present
from app.dashboard import schedules as schedule_pages
from app.schedules.service import ScheduleService
from app.schedules.specs import Overlap, ScheduleIn, TriggerIn
from app.service.runs import RunService
from app.tenancy.operators import OperatorService
from tests.dashboard.helpers import csrf
from tests.dashboard.test_people import browser, signed_in
from tests.helpers import run_body
from tests.people import TENANT, person

BERLIN = ZoneInfo("Europe/Berlin")
TEXT_ONLY = {"provider": "scripted", "name": "demo", "script": [{"text": "good morning"}]}


@pytest.fixture
def schedules(app: FastAPI) -> ScheduleService:
    service: ScheduleService = app.state.schedules
    return service


async def make(schedules: ScheduleService, tenant: str = "default", **body: Any) -> None:
    body.setdefault("cron", "0 6 * * *")
    body.setdefault("run", {"prompt": "morning report", "model": TEXT_ONLY})
    made = ScheduleIn.model_validate(body)
    await schedules.create(made, tenant=tenant, actor="key:test")


async def trio(schedules: ScheduleService) -> None:
    await make(schedules, key="nightly", timezone="Europe/Berlin")
    await make(
        schedules,
        key="hourly",
        cron="@hourly",
        overlap="buffer_one",
        catchup="all",
        run=run_body().model_dump(mode="json", exclude_unset=True),
    )
    await make(schedules, key="weekly", cron="0 9 * * 1", paused=True, note="holidays & <b>x</b>")


def row(page: str, element_id: str) -> str:
    match = re.search(rf'<tr id="{element_id}"(.*?)</tr>', page, re.S)
    assert match, f"no #{element_id}"
    return match.group(1)


def dd(page: str, element_id: str) -> str:
    match = re.search(rf'<dd id="{element_id}">(.*?)</dd>', page, re.S)
    assert match, f"no #{element_id}"
    return match.group(1)


def ticks(page: str) -> list[dict[str, str]]:
    """The ticks table's rows: {cell class: its text}."""
    found = []
    for body in re.findall(r'<tr class="tick tick-[a-z]+">(.*?)</tr>', page, re.S):
        cells = dict(re.findall(r'<td class="([a-z]+)">(.*?)</td>', body, re.S))
        found.append({k: re.sub(r"<[^>]+>", "", v).strip() for k, v in cells.items()} | {"": body})
    return found


async def post(
    client: httpx.AsyncClient, key: str, action: str, token: str, confirmed: bool = True, **f: str
) -> httpx.Response:
    data = {"csrf_token": token, **f} | ({"confirmed": "yes"} if confirmed else {})
    return await client.post(f"/admin/schedules/{key}/{action}", data=data)


async def state(schedules: ScheduleService, key: str, tenant: str = "default") -> tuple[Any, ...]:
    """Everything stored about a schedule, to prove a refused post changed nothing."""
    record = await schedules.get(key, tenant=tenant)
    return record, await schedules.ticks(key, tenant=tenant, limit=100, before=None)


async def test_the_schedules_page_lists_the_tenants_schedules(
    admin: httpx.AsyncClient, schedules: ScheduleService, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert (await admin.get("/admin/schedules")).text.count('id="no-schedules"') == 1
    await trio(schedules)
    page = await admin.get("/admin/schedules")
    assert page.status_code == 200
    text = page.text
    assert 'aria-current="page" id="nav-schedules"' in text
    assert re.findall(r'<tr id="schedule-([^"]+)"', text) == ["hourly", "nightly", "weekly"]

    nightly = row(text, "schedule-nightly")
    assert 'href="/admin/schedules/nightly"' in nightly
    assert "<code>0 6 * * *</code>" in nightly and "Europe/Berlin" in nightly
    nxt = (await schedules.get("nightly", tenant="default")).next_fire_at
    assert nxt is not None
    local = nxt.astimezone(BERLIN)
    assert local.hour == 6 and nxt.hour in (4, 5)  # (CEST, CET)
    assert f"{local:%Y-%m-%d} 06:00:00 {local.tzname()} (+0" in nightly
    assert f'title="{present.timestamp(nxt)} (UTC)"' in nightly
    assert "active" in nightly and "<code>skip</code> / <code>latest</code>" in nightly
    assert "none yet" in nightly  # no run yet

    hourly = row(text, "schedule-hourly")
    assert "<code>@hourly</code>" in hourly and "UTC" in hourly
    assert "<code>buffer_one</code> / <code>all</code>" in hourly
    weekly = row(text, "schedule-weekly")
    assert "paused" in weekly and "none while paused" in weekly
    assert "holidays &amp; &lt;b&gt;x&lt;/b&gt;" in weekly  # the note, escaped

    # The last run each schedule started, linked.
    outcome = await schedules.trigger("nightly", "allow_all", tenant="default")
    assert outcome.outcome == "started" and outcome.run_id
    nightly = row((await admin.get("/admin/schedules")).text, "schedule-nightly")
    assert f'<a href="/admin/runs/{outcome.run_id}">' in nightly

    # Paged by key; a malformed cursor is answered with the first page.
    monkeypatch.setattr(schedule_pages, "PAGE_SIZE", 2)
    first = (await admin.get("/admin/schedules")).text
    assert re.findall(r'<tr id="schedule-([^"]+)"', first) == ["hourly", "nightly"]
    assert 'href="/admin/schedules?cursor=nightly"' in first
    second = (await admin.get("/admin/schedules", params={"cursor": "nightly"})).text
    assert re.findall(r'<tr id="schedule-([^"]+)"', second) == ["weekly"]
    bad = await admin.get("/admin/schedules", params={"cursor": "no\x00pe"})
    assert bad.status_code == 200 and "first page is shown" in bad.text


async def test_a_schedules_page_shows_its_fields_fire_times_and_ticks(
    admin: httpx.AsyncClient, schedules: ScheduleService, service: RunService
) -> None:
    await trio(schedules)
    page = await admin.get("/admin/schedules/nightly")
    assert page.status_code == 200
    text = page.text
    assert 'id="schedule-state">active<' in text
    assert dd(text, "schedule-cron") == "<code>0 6 * * *</code> in <code>Europe/Berlin</code>"
    assert "06:00:00" in dd(text, "schedule-next")
    run = re.search(r'<pre class="spec" id="schedule-run">(.*?)</pre>', text, re.S)
    assert run and '"prompt": "morning report"' in html.unescape(run.group(1))
    assert 'id="no-ticks"' in text

    # The next 5 fire times, in UTC and in Berlin, one day apart.
    table = re.search(r'<table class="mini fire-times" id="fire-times">(.*?)</table>', text, re.S)
    assert table
    times = re.findall(r'<td class="num">([^<]+)</td><td class="num">([^<]+)</td>', table.group(1))
    assert len(times) == 5
    _, fire = await schedules.fire_times("nightly", tenant="default", start=None, count=5)
    assert times == [(present.timestamp(f.utc), present.zoned(f.local)) for f in fire]
    assert all(" 06:00:00 CE" in local for _, local in times)
    days = [date.fromisoformat(local[:10]) for _, local in times]
    assert [(b - a).days for a, b in itertools.pairwise(days)] == [1, 1, 1, 1]

    # Ticks: what each became, why, and its run.
    started = await schedules.trigger("nightly", "allow_all", tenant="default")
    skipped = await schedules.trigger("nightly", "skip", tenant="default")  # (still queued)
    assert (started.outcome, skipped.outcome) == ("started", "skipped")
    shown = ticks((await admin.get("/admin/schedules/nightly")).text)
    assert [(t["source"], t["outcome"], t["reason"]) for t in shown] == [
        ("trigger", "skipped", "overlap"),
        ("trigger", "started", ""),
    ]
    for t in shown:  # (the skipped tick names the run that was still going)
        assert f'<a href="/admin/runs/{started.run_id}">' in t[""]
    assert "(still running)" in shown[0][""] and "(still running)" not in shown[1][""]
    assert present.zoned(started.scheduled_time.astimezone(BERLIN)) in shown[1][""]
    assert present.timestamp(started.scheduled_time) in shown[1][""]

    # A paused schedule: no next tick, its note, and what it would fire were it resumed.
    weekly = (await admin.get("/admin/schedules/weekly")).text
    assert 'id="schedule-state">paused<' in weekly
    assert dd(weekly, "schedule-note") == "holidays &amp; &lt;b&gt;x&lt;/b&gt;"
    assert "none while paused" in dd(weekly, "schedule-next")
    assert "were it resumed now" in weekly

    # Unknown and malformed keys are "not found", not a 500.
    for key in ("nobody", "bad%00key", "x" * 65, "bad%0Akey", "nightly%0A"):
        missing = await admin.get(f"/admin/schedules/{key}")
        assert missing.status_code == 404, key
    await schedules.delete("weekly", tenant="default")
    assert (await admin.get("/admin/schedules/weekly")).status_code == 404


async def test_pause_resume_and_trigger_each_after_a_confirmation(
    admin: httpx.AsyncClient, schedules: ScheduleService, service: RunService
) -> None:
    await trio(schedules)
    token = csrf(admin)
    page = (await admin.get("/admin/schedules/nightly")).text
    for form in ("pause-form", "trigger-form"):
        assert f'id="{form}"' in page
    assert 'id="resume-form"' not in page and 'id="read-only"' not in page

    # Pause with a note: the confirmation page first, nothing changed yet.
    before = await state(schedules, "nightly")
    asked = await post(admin, "nightly", "pause", token, confirmed=False, note=" out of office ")
    assert asked.status_code == 200
    assert "Pause this schedule?" in asked.text and 'id="confirm"' in asked.text
    assert '<input type="hidden" name="note" value="out of office">' in asked.text
    assert await state(schedules, "nightly") == before
    done = await post(admin, "nightly", "pause", token, note="out of office")
    assert done.status_code == 303 and done.headers["location"] == (
        "/admin/schedules/nightly?done=pause"
    )
    record = await schedules.get("nightly", tenant="default")
    assert (record.paused, record.note) == (True, "out of office")
    page = (await admin.get(done.headers["location"])).text
    assert "The schedule is paused" in page and dd(page, "schedule-note") == "out of office"
    assert 'id="resume-form"' in page and 'id="pause-form"' not in page

    # Resume: confirmed, then active again with its next tick after now.
    asked = await post(admin, "nightly", "resume", token, confirmed=False)
    assert "Resume this schedule?" in asked.text
    assert (await schedules.get("nightly", tenant="default")).paused
    done = await post(admin, "nightly", "resume", token)
    assert done.headers["location"] == "/admin/schedules/nightly?done=resume"
    record = await schedules.get("nightly", tenant="default")
    assert (record.paused, record.note) == (False, None)

    # Trigger now (the default overlap: start anyway), twice; then one that skips.
    asked = await post(admin, "nightly", "trigger", token, confirmed=False)
    assert "Start a run of this schedule now?" in asked.text
    assert '<input type="hidden" name="overlap" value="allow_all">' in asked.text
    assert await schedules.ticks("nightly", tenant="default", limit=5, before=None) == []
    for _ in range(2):
        done = await post(admin, "nightly", "trigger", token, overlap="allow_all")
        assert done.headers["location"] == "/admin/schedules/nightly?done=trigger-started"
    done = await post(admin, "nightly", "trigger", token, overlap="skip")
    assert done.headers["location"] == "/admin/schedules/nightly?done=trigger-skipped"
    page = (await admin.get(done.headers["location"])).text
    assert "The tick was skipped" in page
    found = await schedules.ticks("nightly", tenant="default", limit=5, before=None)
    assert [(t.source, t.outcome) for t in found] == [
        ("trigger", "skipped"),
        ("trigger", "started"),
        ("trigger", "started"),
    ]
    assert [t["outcome"] for t in ticks(page)] == ["skipped", "started", "started"]

    # The run it started names its schedule and tick, linked.
    run_id = found[1].run_id
    assert run_id is not None
    run_page = (await admin.get(f"/admin/runs/{run_id}")).text
    mark = dd(run_page, "run-schedule")
    assert 'started by schedule <a href="/admin/schedules/nightly"><code>nightly</code></a>' in mark
    assert mark.endswith(f"at {present.timestamp(found[1].scheduled_time)}")
    plain = (await service.create_run(run_body()))[0].record.id
    assert 'id="run-schedule"' not in (await admin.get(f"/admin/runs/{plain}")).text


async def test_a_form_that_does_not_parse_or_a_refusal_changes_nothing(
    app: FastAPI, admin: httpx.AsyncClient, schedules: ScheduleService
) -> None:
    await trio(schedules)
    token = csrf(admin)
    before = await state(schedules, "nightly")

    long = await post(admin, "nightly", "pause", token, note="n" * 2001)
    assert long.status_code == 422
    assert "Please correct the form below." in long.text
    assert 'id="p-note-error"' in long.text and "2000" in long.text
    assert 'value="' + "n" * 2001 + '"' in long.text  # kept for correction
    wrong = await post(admin, "nightly", "trigger", token, overlap="sometimes")
    assert wrong.status_code == 422 and 'id="t-overlap-error"' in wrong.text
    paused = await post(admin, "weekly", "pause", token, note="n" * 2001)  # (no pause form)
    assert paused.status_code == 422 and "Nothing was changed: note:" in paused.text
    unknown = await post(admin, "nightly", "delete", token)
    assert unknown.status_code == 404
    forged = await post(admin, "nightly", "trigger", "not-the-token")
    assert forged.status_code == 403 and "CSRF" in forged.text
    missing = await post(admin, "nobody", "trigger", token)
    assert missing.status_code == 404
    assert "no schedule with key 'nobody'" in html.unescape(missing.text)
    assert await state(schedules, "nightly") == before

    # The service refuses a trigger whose run body no longer starts (its agent is gone).
    agents: AgentService = app.state.agents
    spec = {"name": "reporter", "description": "reports", "model": TEXT_ONLY}
    await agents.create(AgentIn.model_validate(spec), tenant="default", actor="key:test")
    await make(schedules, key="report", run={"agent": "reporter", "prompt": "go"})
    page = (await admin.get("/admin/schedules/report")).text
    assert '<a href="/admin/agents/reporter"><code>reporter</code></a>' in page
    await agents.delete("reporter", tenant="default")
    refused = await post(admin, "report", "trigger", token)
    assert refused.status_code == 422
    error = re.search(r'id="action-error">(.*?)</p>', refused.text, re.S)
    assert error and error.group(1).startswith("run: ")
    assert await schedules.ticks("report", tenant="default", limit=5, before=None) == []


@pytest.mark.parametrize("role", ["viewer", "operator"])
async def test_a_role_without_schedules_manage_sees_no_action_and_posts_are_refused(
    app: FastAPI, people: OperatorService, schedules: ScheduleService, role: str
) -> None:
    await trio(schedules)
    await person(people, "vera", role=role)
    before = {k: await state(schedules, k) for k in ("nightly", "weekly")}
    async with browser(app) as vera:
        token = await signed_in(vera, "vera")
        assert 'id="nav-schedules"' in (await vera.get("/admin")).text
        listed = await vera.get("/admin/schedules")
        assert listed.status_code == 200 and 'id="schedule-nightly"' in listed.text
        for key in before:
            page = await vera.get(f"/admin/schedules/{key}")
            assert page.status_code == 200
            assert '<form method="post" action="/admin/schedules/' not in page.text
            assert 'id="read-only"' in page.text and f"<code>{role}</code>" in page.text
            for action in schedule_pages.KINDS:
                for confirmed in (True, False):
                    refused = await post(vera, key, action, token, confirmed, note="mine")
                    assert refused.status_code == 403, (key, action, refused.text)
                    assert "schedules:manage" in refused.text
    assert {k: await state(schedules, k) for k in before} == before


async def test_another_tenants_schedules_are_in_no_page_and_no_action_reaches_them(
    app: FastAPI, admin: httpx.AsyncClient, people: OperatorService, schedules: ScheduleService
) -> None:
    await trio(schedules)
    await make(schedules, tenant=TENANT, key="acme-daily", note="acme's own")
    await make(schedules, tenant=TENANT, key="nightly", cron="30 2 * * *")
    theirs = await schedules.trigger("acme-daily", "allow_all", tenant=TENANT)
    ours = {k: await state(schedules, k) for k in ("nightly", "hourly", "weekly")}
    listed = (await admin.get("/admin/schedules")).text  # the default tenant's admin
    assert "acme-daily" not in listed and "30 2 * * *" not in listed
    assert (await admin.get("/admin/schedules/acme-daily")).status_code == 404
    token = csrf(admin)
    for action in ("pause", "resume", "trigger"):
        assert (await post(admin, "acme-daily", action, token)).status_code == 404

    await person(people, "wile", role="admin", tenant=TENANT)
    async with browser(app) as wile:
        token = await signed_in(wile, "wile")
        listed = (await wile.get("/admin/schedules")).text
        assert re.findall(r'<tr id="schedule-([^"]+)"', listed) == ["acme-daily", "nightly"]
        assert "30 2 * * *" in row(listed, "schedule-nightly")
        for key in ("hourly", "weekly"):
            assert (await wile.get(f"/admin/schedules/{key}")).status_code == 404
            for action in ("pause", "resume", "trigger"):
                refused = await post(wile, key, action, token)
                assert refused.status_code == 404, (key, action)
        # Their `nightly` is theirs: acting on it leaves the default tenant's alone.
        done = await post(wile, "nightly", "pause", token, note="acme pauses")
        assert done.status_code == 303
        run_page = await wile.get(f"/admin/runs/{theirs.run_id}")
        assert 'href="/admin/schedules/acme-daily"' in run_page.text
    assert (await schedules.get("nightly", tenant=TENANT)).note == "acme pauses"
    assert {k: await state(schedules, k) for k in ours} == ours
    # The default tenant's admin (a deployment's) reads their run, read-only; the
    # schedule is acme's, not a page of theirs: named, not linked.
    run_page = await admin.get(f"/admin/runs/{theirs.run_id}")
    assert run_page.status_code == 200 and 'id="foreign-run"' in run_page.text
    assert "acme-daily" in run_page.text and "/admin/schedules/acme-daily" not in run_page.text


def test_the_trigger_form_offers_every_overlap_the_apis_default_first() -> None:
    assert set(schedule_pages.OVERLAPS) == set(get_args(Overlap))
    assert next(iter(schedule_pages.OVERLAPS)) == TriggerIn().overlap


def test_a_time_in_its_zone() -> None:
    utc = ZoneInfo("UTC")
    summer = datetime(2026, 3, 29, 1, 30, tzinfo=utc)  # (30 minutes after the jump)
    assert present.zoned(summer.astimezone(BERLIN)) == "2026-03-29 03:30:00 CEST (+02:00)"
    winter = datetime(2026, 1, 5, 5, 0, tzinfo=utc)
    assert present.zoned(winter.astimezone(BERLIN)) == "2026-01-05 06:00:00 CET (+01:00)"
    assert present.zoned(winter) == "2026-01-05 05:00:00 UTC (+00:00)"
    kolkata = winter.astimezone(ZoneInfo("Asia/Kolkata"))
    assert present.zoned(kolkata) == "2026-01-05 10:30:00 IST (+05:30)"
    assert present.zoned(None) == "—"
