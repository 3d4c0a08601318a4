"""A call a turn-boundary hook makes with a model of its own (a compaction's summary by
`compaction.model`) is priced, capped and keyed by that model, not the run's: its wire's
output cap parameter, its price against a cost limit (a create, an agent or a limits
change whose summarising model has no price is refused while a cost limit applies), its
shared limits' keys (over the mock provider server, both databases)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from app.core.events import EventType as E
from app.core.lifecycle import RunStatus
from app.core.scope import Scope
from app.limits.shared import shared
from app.service.runs import RunService
from app.service.schemas import RunCreate
from app.settings import Settings
from app.store.runs import RunStore
from tests.api.conftest import KEY
from tests.api.test_runs_api import assert_problem
from tests.compaction.support import Model, drive_to_end, driver, run_doc, step, summaries
from tests.conftest import make_settings
from tests.helpers import api_client
from tests.mocks.replies import Reply
from tests.mocks.server import MockProviderServer

PRICES = {
    "openai:cheap-run": {"input": 0.01, "output": 0.01},
    "openai:dear-summary": {"input": 1.0, "output": 1000.0},
    "scripted:priced": {"input": 1.0, "output": 1.0},
}
UNPRICED = {"provider": "scripted", "name": "unpriced-summariser"}


def spec(provider: str, name: str = "mock-model") -> dict[str, Any]:
    return {"provider": provider, "name": name}


async def summaries_of(
    service: RunService, mock: MockProviderServer, doc: dict[str, Any]
) -> tuple[str, list[dict[str, Any]]]:
    """A run of `doc` driven to its end, and its summaries' request bodies."""
    mock.reset()
    mock.responder = Model(turns=8)
    view, _ = await service.create_run(RunCreate.model_validate(doc))
    status = await drive_to_end(service, await driver(service, mock), view.record.id)
    assert status is RunStatus.COMPLETED
    asked = summaries(mock)
    assert asked
    return view.record.id, asked


async def test_a_summary_on_another_wire_gets_its_own_wire_s_output_cap(
    store: RunStore, settings: Settings, mock: MockProviderServer
) -> None:
    """A token limit caps every call's output: a Chat Completions summary of a Responses
    run gets `max_completion_tokens`, a Responses summary of an Anthropic run
    `max_output_tokens` (a real provider refuses the other wire's parameter)."""
    service = RunService(store, settings)
    limits = {"max_total_tokens": 10**7}
    _, chat = await summaries_of(
        service,
        mock,
        {
            **run_doc(8, 1000, keep_recent_turns=1, model=spec("openai")),
            "model": spec("openai_responses"),
            "limits": limits,
        },
    )
    for body in chat:
        assert body["max_completion_tokens"] == 4096 and "max_output_tokens" not in body
        assert "messages" in body  # (the Chat wire)
    _, responses = await summaries_of(
        service,
        mock,
        {
            **run_doc(8, 1000, keep_recent_turns=1, model=spec("openai_responses")),
            "model": spec("anthropic"),
            "limits": limits,
        },
    )
    for body in responses:
        assert body["max_output_tokens"] == 4096 and "max_tokens" not in body
        assert "input" in body  # (the Responses wire)


async def test_a_summary_is_priced_against_a_cost_limit_at_its_own_model_s_price(
    store: RunStore, settings: Settings, mock: MockProviderServer
) -> None:
    """A cheap run model and a dear summarising one under a cost limit: the summary's
    output is capped at what the limit leaves at the summary's price, and it is billed
    at that price in the run's cost."""
    service = RunService(store, settings.model_copy(update={"prices": PRICES}))
    doc = {
        **run_doc(8, 1000, keep_recent_turns=1, model=spec("openai", "dear-summary")),
        "model": spec("openai", "cheap-run"),
        "limits": {"max_cost_usd": 0.5},
    }
    run_id, asked = await summaries_of(service, mock, doc)
    # $0.5 at $1000 per 1M output tokens: 500 tokens at most, less what was spent.
    assert all(0 < b["max_completion_tokens"] < 500 for b in asked)
    run = (await service.get_run(run_id, scope=Scope.ALL)).record
    events = await store.events(run_id, limit=100_000)
    called = [e.data for e in events if e.type == E.MODEL_CALLED and e.data.get("purpose")]
    assert called and all(d["model"] == "dear-summary" and d["cost_usd"] > 0 for d in called)
    assert run.usage is not None
    assert run.usage["cost_usd"] >= sum(d["cost_usd"] for d in called)


async def test_a_summary_s_429_slows_the_summarising_model_not_the_run_s(
    store: RunStore, settings: Settings, mock: MockProviderServer
) -> None:
    service = RunService(store, settings)
    run_model, summariser = f"run-{uuid.uuid4().hex[:8]}", f"sum-{uuid.uuid4().hex[:8]}"

    class Throttled(Model):
        def __call__(self, body: Any) -> Reply:
            if "tools" not in body:
                self.summaries += 1
                fault = Reply.fault(429, "Rate limit reached", retry_after="2")
                fault.headers["x-ratelimit-limit-requests"] = "60"
                return fault
            return super().__call__(body)

    model = Throttled(turns=8)
    mock.responder = model
    doc = {
        **run_doc(8, 1000, keep_recent_turns=1, model=spec("openai", summariser)),
        "model": spec("openai", run_model),
    }
    view, _ = await service.create_run(RunCreate.model_validate(doc))
    run_driver = await driver(service, mock)
    while model.summaries == 0:
        await step(service, run_driver, view.record.id)
    slowed = await shared(store).flow.slow_rates()
    assert f"model:openai/{summariser}" in slowed
    assert f"model:openai/{run_model}" not in slowed


@pytest.fixture
async def priced_client(database_url: str, store: RunStore) -> AsyncIterator[httpx.AsyncClient]:
    settings = make_settings(database_url, api_keys=KEY, prices=PRICES)
    async with api_client(settings, KEY) as client:
        yield client


def create(**fields: Any) -> dict[str, Any]:
    return {
        "prompt": "hi",
        "model": {"provider": "scripted", "name": "priced"},
        "compaction": {"threshold_tokens": 5000, "model": UNPRICED},
        **fields,
    }


async def test_a_cost_limit_needs_a_price_for_the_summarising_model_too(
    priced_client: httpx.AsyncClient,
) -> None:
    client = priced_client
    before = (await client.get("/v1/runs")).json()
    refused = await client.post("/v1/runs", json=create(limits={"max_cost_usd": 1}))
    doc = assert_problem(refused, 422, "invalid-request")
    assert "compaction.model scripted:unpriced-summariser has no price" in doc["detail"]
    agent = {"name": "summing", "description": "d", **create(limits={"max_cost_usd": 1})}
    agent.pop("prompt")
    assert_problem(await client.post("/v1/agents", json=agent), 422, "invalid-request")
    assert (await client.get("/v1/runs")).json() == before

    # Without a cost limit it runs; a cost limit set later is refused the same way.
    made = await client.post("/v1/runs", json=create(limits={"max_total_tokens": 10**6}))
    assert made.status_code == 201, made.text
    later = await client.post(f"/v1/runs/{made.json()['id']}/limits", json={"max_cost_usd": 1})
    doc = assert_problem(later, 422, "invalid-request")
    assert "compaction.model" in doc["detail"]
    # A priced summariser (or the run's own model) is accepted.
    priced = {"threshold_tokens": 5000, "model": {"provider": "scripted", "name": "priced"}}
    ok = await client.post("/v1/runs", json=create(limits={"max_cost_usd": 1}, compaction=priced))
    assert ok.status_code == 201, ok.text
