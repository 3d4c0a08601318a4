"""Budgets over HTTP on SQLite and PostgreSQL: limits at create and their refusals, a run
suspended on its budget (waiting reason, required action, event, webhook), raised limits
resuming it, its expiry failing it, the price source on the ledger, a deployment's daily
limit."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
import sqlalchemy as sa

from app.clock import SYSTEM_CLOCK
from app.core.lifecycle import RunStatus
from app.core.scope import Scope
from app.service.runs import RunService
from app.settings import Settings
from app.store.runs import RunStore
from app.store.schema import model_calls, webhook_outbox
from app.store.waiting import Budget
from app.tenancy.identities import Identities
from app.tenancy.tenants import TenantLimits, Tenants
from tests.api.conftest import KEY
from tests.api.test_runs_api import answers, assert_problem, body
from tests.conftest import make_settings
from tests.helpers import api_client, drive_once, run_body

PRICES = {"scripted:priced": {"input": 3.0, "output": 15.0}}
ROUND = {"tool_calls": [{"name": "add", "arguments": {"a": 1, "b": 2}}]}


def priced(*script: dict[str, Any], **params: Any) -> dict[str, Any]:
    return {"provider": "scripted", "name": "priced", "script": list(script), **params}


@pytest.fixture
def budget_settings(database_url: str, store: RunStore) -> Settings:
    return make_settings(database_url, api_keys=KEY, prices=PRICES, webhook_allow_private=True)


@pytest.fixture
async def client(budget_settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    async with api_client(budget_settings, KEY) as c:
        yield c


async def drive(client: httpx.AsyncClient, store: RunStore, run_id: str) -> dict[str, Any]:
    await drive_once(store, client.app.state.settings)  # type: ignore[attr-defined]
    return (await client.get(f"/v1/runs/{run_id}")).json()  # type: ignore[no-any-return]


async def test_limits_are_kept_and_refused_when_they_cannot_be_enforced(
    client: httpx.AsyncClient,
) -> None:
    limits = {"max_cost_usd": 0.5, "max_total_tokens": 9000, "max_model_calls": 3.0}
    created = await client.post("/v1/runs", json=body(model=priced({"text": "hi"}), limits=limits))
    assert created.status_code == 201, created.text
    assert created.json()["limits"] == {**limits, "max_model_calls": 3}
    events = (await client.get(f"/v1/runs/{created.json()['id']}/events")).json()["data"]
    assert events[0]["data"]["limits"] == {**limits, "max_model_calls": 3}

    unpriced = await client.post("/v1/runs", json=body(limits={"max_cost_usd": 1}))
    doc = assert_problem(unpriced, 422, "invalid-request")
    assert "scripted:demo has no price" in doc["detail"]
    for bad in (
        {"max_cost_usd": 0},
        {"max_cost_usd": "1"},
        {"max_total_tokens": 1.5},
        {"max_model_calls": True},
        {"max_duration_seconds": -1},
        {"max_turns": 3},
        [],
    ):
        response = await client.post("/v1/runs", json={**body(), "limits": bad})
        assert_problem(response, 422, "validation-error")
    plain = await client.post("/v1/runs", json=body(limits={"max_total_tokens": 10}))
    assert plain.status_code == 201  # (a token limit needs no price)


async def test_a_run_suspends_on_its_budget_and_a_raised_limit_resumes_it(
    client: httpx.AsyncClient, store: RunStore
) -> None:
    hook = {"url": "http://127.0.0.1:9/hooks"}
    created = await client.post(
        "/v1/runs",
        json=body(model=priced(ROUND, {"text": "3"}), limits={"max_model_calls": 1}, webhook=hook),
    )
    run_id = created.json()["id"]
    run = await drive(client, store, run_id)
    posted = await client.post(f"/v1/runs/{run_id}/tool-results", json=answers(run))
    assert posted.json()["resumed"] is True
    stopped = await drive(client, store, run_id)
    assert stopped["status"] == "requires_action"
    reason = {"limit": "max_model_calls", "scope": "run", "spent": 1, "allowed": 1, "needed": 2}
    assert stopped["waiting_reason"] == {"type": "budget", **reason}
    assert stopped["required_action"] == {"type": "raise_limits", **reason}
    assert stopped["expires_at"] is not None
    events = (await client.get(f"/v1/runs/{run_id}/events")).json()["data"]
    assert events[-1]["type"] == "run.budget_exceeded" and events[-1]["data"] == reason
    async with store.engine.connect() as conn:
        hooks = (
            await conn.execute(
                sa.select(webhook_outbox.c.event_type).where(webhook_outbox.c.run_id == run_id)
            )
        ).scalars()
        assert "run.budget_exceeded" in list(hooks)

    raised = await client.post(f"/v1/runs/{run_id}/limits", json={"max_model_calls": 2})
    assert raised.status_code == 200, raised.text
    assert raised.json()["status"] == "queued" and raised.json()["limits"] == {"max_model_calls": 2}
    done = await drive(client, store, run_id)
    assert done["status"] == "completed" and done["output"] == "3"
    assert done["usage"]["model_calls"] == 2 and done["usage"]["cost_usd"] > 0
    types = [e["type"] for e in (await client.get(f"/v1/runs/{run_id}/events")).json()["data"]]
    at = types.index("run.limits_raised")
    assert types[at + 1] == "run.resumed"
    async with store.engine.connect() as conn:
        sources = (
            await conn.execute(
                sa.select(model_calls.c.price_source, model_calls.c.cost_usd).where(
                    model_calls.c.run_id == run_id
                )
            )
        ).all()
    assert [s for s, _ in sources] == ["config", "config"]
    assert abs(sum(c for _, c in sources) - done["usage"]["cost_usd"]) < 1e-9

    again = await client.post(f"/v1/runs/{run_id}/limits", json={"max_model_calls": 5})
    assert_problem(again, 409, "run-state-conflict")


async def test_limits_of_a_run_that_is_not_waiting_on_them_and_refusals(
    client: httpx.AsyncClient, store: RunStore
) -> None:
    created = await client.post("/v1/runs", json=body(limits={"max_total_tokens": 100_000}))
    run_id = created.json()["id"]
    changed = await client.post(
        f"/v1/runs/{run_id}/limits", json={"max_total_tokens": None, "max_model_calls": 4}
    )
    assert changed.status_code == 200, changed.text
    assert changed.json()["status"] == "queued"
    assert changed.json()["limits"] == {"max_model_calls": 4}
    suspended = await drive(client, store, run_id)  # (for tools: not a budget)
    assert suspended["waiting_reason"]["type"] == "tool_results"
    kept = await client.post(f"/v1/runs/{run_id}/limits", json={})
    assert kept.json()["status"] == "requires_action"
    assert kept.json()["required_action"]["type"] == "submit_tool_results"

    refused = await client.post(f"/v1/runs/{run_id}/limits", json={"max_cost_usd": 2})
    assert_problem(refused, 422, "invalid-request")  # (scripted:demo has no price)
    assert_problem(
        await client.post(f"/v1/runs/{run_id}/limits", json={"max_model_calls": 0}),
        422,
        "validation-error",
    )
    assert_problem(
        await client.post(f"/v1/runs/{run_id}/limits", json={"other": 1}), 422, "validation-error"
    )
    missing = await client.post("/v1/runs/run_000000000000000000000/limits", json={})
    assert_problem(missing, 404, "run-not-found")


async def test_a_budget_suspended_run_past_its_expiry_fails(
    client: httpx.AsyncClient, store: RunStore
) -> None:
    created = await client.post(
        "/v1/runs", json=body(model=priced({"text": "hi"}), limits={"max_total_tokens": 5})
    )
    run_id = created.json()["id"]
    stopped = await drive(client, store, run_id)
    assert stopped["waiting_reason"]["limit"] == "max_total_tokens"
    assert stopped["waiting_reason"]["needed"] > 5
    expired = await store.expire_suspended(datetime.now(UTC) + timedelta(days=30))
    assert run_id in expired
    failed = (await client.get(f"/v1/runs/{run_id}")).json()
    assert failed["status"] == "failed"
    assert failed["error"]["type"] == "budget_exceeded"
    assert failed["error"]["limit"] == "max_total_tokens"
    events = (await client.get(f"/v1/runs/{run_id}/events")).json()["data"]
    assert events[-1]["type"] == "run.failed"
    assert events[-1]["data"]["type"] == "budget_exceeded"


async def test_the_deployments_daily_tokens_stop_the_next_call(
    database_url: str, store: RunStore
) -> None:
    settings = make_settings(database_url, api_keys=KEY, prices=PRICES, daily_tokens=1000)
    async with api_client(settings, KEY) as client:
        usage = {"input_tokens": 10, "output_tokens": 600}
        first = await client.post(
            "/v1/runs", json=body(tools=[], model=priced({"text": "a", "usage": usage}))
        )
        done = await drive(client, store, first.json()["id"])
        assert done["status"] == "completed", done
        assert done["usage"]["total_tokens"] == 610
        second = await client.post(
            "/v1/runs", json=body(tools=[], model=priced({"text": "b", "usage": usage}))
        )
        answered = await drive(client, store, second.json()["id"])
        # 1000 - 610 left: the call may write what its input estimate leaves
        assert answered["status"] == "completed"
        assert answered["usage"]["output_tokens"] < 390  # (clamped)
        third = await client.post("/v1/runs", json=body(tools=[], model=priced({"text": "c"})))
        stopped = await drive(client, store, third.json()["id"])
        assert stopped["waiting_reason"]["type"] == "budget"
        assert stopped["waiting_reason"]["scope"] == "deployment"
        assert stopped["waiting_reason"]["limit"] == "daily_tokens"
        unpriced_cost = make_settings(database_url, api_keys=KEY, daily_cost_usd=5.0)
    async with api_client(unpriced_cost, KEY) as client:
        refused = await client.post("/v1/runs", json=body())
        assert_problem(refused, 422, "invalid-request")


async def test_a_tenants_daily_limits_stop_its_runs_and_not_anothers(
    database_url: str, store: RunStore
) -> None:
    tenant = f"budget-{secrets.token_hex(4)}"
    await Tenants(Identities(store.backend), clock=SYSTEM_CLOCK).create(
        tenant, limits=TenantLimits(daily_tokens=700, daily_cost_usd=1.0)
    )
    service = RunService(store, make_settings(database_url, prices=PRICES))
    usage = {"input_tokens": 10, "output_tokens": 600}
    first, _ = await service.create_run(
        run_body(tools=[], model=priced({"text": "a", "usage": usage})), tenant=tenant
    )
    await drive_once(store, service.settings)
    done = (await service.get_run(first.record.id, scope=Scope.ALL)).record
    assert done.status is RunStatus.COMPLETED and done.usage is not None
    spent = done.usage["total_tokens"]
    assert spent < 700  # (its output clamped to what the day left)
    second, _ = await service.create_run(
        run_body(tools=[], model=priced({"text": "b"})), tenant=tenant
    )
    await drive_once(store, service.settings)
    stopped = (await service.get_run(second.record.id, scope=Scope.ALL)).record
    assert stopped.waiting == Budget("daily_tokens", spent, 700, "tenant", stopped.waiting.needed)
    # a model without a price under the tenant's daily_cost_usd: created, never called
    unpriced, _ = await service.create_run(run_body(tools=[]), tenant=tenant)
    await drive_once(store, service.settings)
    record = (await service.get_run(unpriced.record.id, scope=Scope.ALL)).record
    assert isinstance(record.waiting, Budget) and record.waiting.limit in (
        "daily_tokens",
        "daily_cost_usd",
    )
    assert record.usage is None
    other, _ = await service.create_run(run_body(tools=[], model=priced({"text": "c"})))
    await drive_once(store, service.settings)
    assert (
        await service.get_run(other.record.id, scope=Scope.ALL)
    ).record.status is RunStatus.COMPLETED


async def test_a_cancel_stops_a_budget_suspended_run(
    client: httpx.AsyncClient, store: RunStore
) -> None:
    created = await client.post(
        "/v1/runs", json=body(model=priced({"text": "hi"}), limits={"max_total_tokens": 5})
    )
    run_id = created.json()["id"]
    assert (await drive(client, store, run_id))["waiting_reason"]["type"] == "budget"
    cancelled = await client.post(f"/v1/runs/{run_id}/cancel")
    assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled"
    assert cancelled.json()["required_action"] is None
    late = await client.post(f"/v1/runs/{run_id}/limits", json={"max_total_tokens": 10_000})
    assert_problem(late, 409, "run-state-conflict")
