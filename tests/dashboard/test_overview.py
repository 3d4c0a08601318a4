"""The overview's spend, model health and waiting charts (both databases): a day's tokens
and cost by model are /v1/usage's for that day to the token; latency percentiles hold the
ledger's; a tenant sees its own spend only, a deployment's admin every tenant's; charts
are SVG in the page (no script needed); bad choices are named, never a 500."""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime, timedelta
from html import unescape
from typing import Any

import httpx
import sqlalchemy as sa
from fastapi import FastAPI

from app.core.events import EventType
from app.core.lifecycle import Transition
from app.core.scope import Scope
from app.service.runs import RunService
from app.store import samples
from app.store.changes import Change
from app.store.fold import fold
from app.store.run_records import NewEvent
from app.store.schema import model_calls
from tests.dashboard.conftest import KEY
from tests.dashboard.test_people import browser, signed_in
from tests.helpers import run_body
from tests.people import TENANT, person

API = {"Authorization": f"Bearer {KEY}"}
CELL = re.compile(r'<tr class="spend-cell" ([^>]*)>')
ATTR = re.compile(r'data-([a-z0-9-]+)="([^"]*)"')


def rows(html: str, pattern: re.Pattern[str]) -> list[dict[str, str]]:
    return [{k: unescape(v) for k, v in ATTR.findall(m)} for m in pattern.findall(html)]


async def bill(
    service: RunService, run_id: str, at: datetime, model: str, tokens: int, ms: float = 50.0
) -> None:
    data: dict[str, Any] = {"turn": 1, "provider": "scripted", "model": model}
    data["usage"] = {"input_tokens": tokens, "output_tokens": 2 * tokens}
    data["usage"]["total_tokens"] = 3 * tokens
    data |= {"cost_usd": tokens / 1000, "latency_ms": ms}
    event = NewEvent(EventType.MODEL_CALLED, data)
    change = Change(Transition.BILL, events=(event,))
    changed, _ = await service.store.apply(run_id, change, at, scope=Scope.ALL)
    assert changed is not None


async def test_a_days_spend_by_model_is_the_usage_report_of_that_day(
    admin: httpx.AsyncClient, service: RunService
) -> None:
    now = datetime.now(UTC)
    first, _ = await service.create_run(run_body())
    second, _ = await service.create_run(run_body())
    today = now.replace(hour=0, minute=0, second=0, microsecond=0)
    plan = [
        (first.record.id, today - timedelta(days=2, hours=-3), "alpha", 10),
        (first.record.id, today - timedelta(days=2, hours=-23, minutes=-59), "beta", 7),
        (second.record.id, today - timedelta(days=1, hours=-5), "alpha", 5),
        (second.record.id, today - timedelta(days=1, hours=-5), "alpha", 11),
        (second.record.id, today - timedelta(days=1), "beta", 1),
    ]
    for run_id, at, model, tokens in plan:
        await bill(service, run_id, at, model, tokens)
    await fold(service.store.engine)  # (nothing finished: the ledger's rows are read)
    page = await admin.get("/admin/overview", params={"window": "7d"})
    assert page.status_code == 200
    cells = rows(page.text, CELL)
    assert cells, page.text
    for back in (1, 2):
        day = today - timedelta(days=back)
        usage = await admin.get(
            "/v1/usage",
            params={"from": day.isoformat(), "to": (day + timedelta(days=1)).isoformat()},
            headers=API,
        )
        assert usage.status_code == 200, usage.text
        want = {
            m: (v["input_tokens"], v["output_tokens"], v["total_tokens"], v["calls"])
            for m, v in usage.json()["by_model"].items()
        }
        got = {
            c["key"]: (int(c["input"]), int(c["output"]), int(c["total"]), int(c["calls"]))
            for c in cells
            if datetime.fromisoformat(c["bucket"]) == day
        }
        assert got == want and got, (back, got, want)
        costs = {m: v["cost_usd"] for m, v in usage.json()["by_model"].items()}
        shown = {c["key"]: float(c["cost"]) for c in cells if c["bucket"] == day.isoformat()}
        assert shown == costs
    # The same days by the hour are the last 24 hours' cells; charts are drawn as SVG.
    assert page.text.count("<rect") >= 2 and 'id="tokens-chart"' in page.text
    assert 'id="cost-chart"' in page.text and "<script>" not in page.text


async def test_latency_figures_hold_the_ledgers_percentiles(
    admin: httpx.AsyncClient, service: RunService
) -> None:
    now = datetime.now(UTC)
    run, _ = await service.create_run(run_body())
    latencies = [12.0, 30.0, 31.0, 33.0, 90.0, 400.0, 410.0, 2500.0, 2600.0, 9000.0, 15.5]
    for n, ms in enumerate(latencies):
        await bill(service, run.record.id, now - timedelta(hours=n % 5, minutes=1), "m", 1, ms)
    page = await admin.get("/admin/overview")
    (row,) = rows(page.text, re.compile(r'<tr (data-model="scripted:m"[^>]*)>'))
    async with service.store.engine.connect() as conn:
        ledger = sorted(
            float(ms)
            for (ms,) in await conn.execute(
                sa.select(model_calls.c.latency_ms).where(model_calls.c.run_id == run.record.id)
            )
        )
    assert ledger == sorted(latencies)
    for q, name in ((0.5, "p50"), (0.95, "p95")):
        exact = ledger[math.ceil(q * len(ledger)) - 1]
        assert float(row[f"{name}-low"]) <= exact < float(row[f"{name}-high"]), (name, row)


async def test_each_tenant_sees_its_own_spend_and_an_admin_every_tenants(
    app: FastAPI,
    admin: httpx.AsyncClient,
    service: RunService,
    people: Any,
) -> None:
    now = datetime.now(UTC) - timedelta(minutes=1)
    ours, _ = await service.create_run(run_body())
    theirs, _ = await service.create_run(run_body(), tenant=TENANT)
    await bill(service, ours.record.id, now, "ours-model", 3)
    await bill(service, theirs.record.id, now, "their-model", 4)
    await samples.sample(service.store.engine, datetime.now(UTC))
    mine = (await admin.get("/admin/overview", params={"split": "tenant"})).text
    assert {c["key"] for c in rows(mine, CELL)} == {"default"}
    every = (await admin.get("/admin/overview", params={"split": "tenant", "tenant": "*"})).text
    assert {c["key"] for c in rows(every, CELL)} == {"default", TENANT}
    assert "every tenant" in every
    # Each tenant's queued run, sampled: one each, two for every tenant.
    assert '<span id="sampled">1</span>' in mine and "queued: peak 1<" in mine
    assert "queued: peak 2<" in every
    await person(people, "wile", role="viewer", tenant=TENANT)
    async with browser(app) as client:
        await signed_in(client, "wile")
        page = await client.get("/admin/overview", params={"split": "model", "tenant": "*"})
        assert page.status_code == 200
        assert {c["key"] for c in rows(page.text, CELL)} == {"scripted:their-model"}
        assert "Only a deployment&#39;s admins" in page.text
        assert "queued: peak 1<" in page.text


async def test_unknown_choices_are_named_and_the_defaults_shown(admin: httpx.AsyncClient) -> None:
    for params, named in (
        ({"window": "1y"}, "unknown choice &#39;1y&#39;"),
        ({"split": "colour"}, "unknown choice &#39;colour&#39;"),
        ({"tenant": "Not A Tenant"}, "no tenant can be named"),
        ({"window": "\x00"}, "unknown choice"),
    ):
        page = await admin.get("/admin/overview", params=params)
        assert page.status_code == 200, params
        assert named in page.text, (params, page.text[:2000])
        assert "No model call in this window." in page.text
