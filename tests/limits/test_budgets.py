"""Budgets in the worker, over the in-memory backend (tests/memory.py): the check before
each model call never lets a run spend past its limits (over a thousand runs with random
limits and a scripted model whose answers cost a known amount and honour the cap they are
sent), a raised limit resumes a budget-suspended run, and the expiry fails it."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from typing import Any

from app import features
from app.clock import FakeClock
from app.core.lifecycle import RunStatus
from app.core.scope import Scope
from app.limits.run_limits import RunLimitsService
from app.service.runs import RunService
from app.service.schemas import LimitsIn
from app.store.runs import RunStore
from app.store.waiting import Budget
from tests.conftest import make_settings
from tests.helpers import ADD_TOOL, drive_once, results_for, run_body
from tests.memory import MemoryBackend

#: USD per 1M tokens of the scripted model the budgets are tested with.
PRICE = {"input": 3.0, "output": 15.0}


def budget_service() -> RunService:
    settings = make_settings("sqlite:///in-memory.db", prices={"scripted:priced": PRICE})
    store = RunStore(None, backend=MemoryBackend())  # type: ignore[arg-type]
    return RunService(features.install(store, settings), settings)


def script(rng: random.Random, turns: int) -> list[dict[str, Any]]:
    """Tool rounds whose answers cost a known amount: `usage` as the script says (the
    output cut to the request's `max_tokens`, as a provider does)."""
    return [
        {
            "tool_calls": [{"name": "add", "arguments": {"a": i, "b": 1}}],
            "usage": {
                "input_tokens": rng.randint(1, 40),
                "output_tokens": rng.choice([1, 10, 100, 1000, 5000, 20000]),
            },
        }
        for i in range(turns)
    ]


def random_limits(rng: random.Random) -> dict[str, Any]:
    limits: dict[str, Any] = {"max_cost_usd": round(rng.uniform(1e-5, 0.1), 6)}
    if rng.random() < 0.4:
        limits["max_total_tokens"] = rng.randint(50, 60_000)
    if rng.random() < 0.3:
        limits["max_model_calls"] = rng.randint(1, 6)
    return limits


async def drive_to_rest(service: RunService, run_id: str, rounds: int = 40) -> Any:
    """Drive the run, answering its tool calls, until it ends or suspends on a budget."""
    for _ in range(rounds):
        await drive_once(service.store, service.settings)
        view = await service.get_run(run_id, scope=Scope.ALL)
        record = view.record
        if record.status is not RunStatus.REQUIRES_ACTION or isinstance(record.waiting, Budget):
            return view
        await service.submit_tool_results(results_for(view), run_id=run_id, scope=Scope.ALL)
    raise AssertionError("the run neither ended nor hit its budget")


def spent(events: list[Any]) -> tuple[float, int, int]:
    called = [e.data for e in events if e.type == "model.called"]
    cost = sum(e["cost_usd"] for e in called)
    tokens = sum(e["usage"]["total_tokens"] for e in called)
    return cost, tokens, len(called)


async def test_a_thousand_runs_with_random_limits_never_overspend() -> None:
    service = budget_service()
    rng = random.Random(24)
    stops: dict[str, int] = {}
    for n in range(1000):
        limits = random_limits(rng)
        body = run_body(
            model={"provider": "scripted", "name": "priced", "script": script(rng, 8)},
            tools=[ADD_TOOL],
            max_turns=10,
            limits=limits,
            prompt=f"run {n}",
        )
        view, _ = await service.create_run(body)
        done = await drive_to_rest(service, view.record.id)
        cost, tokens, calls = spent(await service.store.events(view.record.id))
        assert cost <= limits["max_cost_usd"], (n, limits, cost)
        assert tokens <= limits.get("max_total_tokens", tokens), (n, limits, tokens)
        assert calls <= limits.get("max_model_calls", calls), (n, limits, calls)
        usage = done.record.usage or {}
        assert abs(usage.get("cost_usd", 0.0) - cost) < 1e-6
        assert usage.get("model_calls", 0) == calls
        reason = done.record.waiting
        if done.record.status is RunStatus.FAILED:  # (out of turns first)
            assert (done.record.error or {}).get("type") == "MaxTurnsError", done.record
            stops["max_turns"] = stops.get("max_turns", 0) + 1
            continue
        assert isinstance(reason, Budget), done.record
        stops[reason.limit] = stops.get(reason.limit, 0) + 1
    assert set(stops) >= {"max_cost_usd", "max_total_tokens", "max_model_calls"}, stops
    assert stops["max_cost_usd"] > 300, stops


async def test_a_raised_limit_resumes_the_run_and_the_expiry_fails_it() -> None:
    service = budget_service()
    rng = random.Random(7)
    body = run_body(
        model={"provider": "scripted", "name": "priced", "script": script(rng, 3)},
        max_turns=30,
        limits={"max_model_calls": 2},
    )
    view, _ = await service.create_run(body)
    run_id = view.record.id
    stopped = await drive_to_rest(service, run_id)
    assert stopped.record.waiting == Budget("max_model_calls", 2, 2, "run", 3)
    events = await service.store.events(run_id)
    assert events[-1].type == "run.budget_exceeded"
    assert events[-1].data["limit"] == "max_model_calls"

    limits = RunLimitsService.of(service.store, service.settings, service.clock)
    raised = await service.view(
        await limits.set_limits(
            run_id, LimitsIn(max_model_calls=3), actor="user:alice", scope=Scope.ALL
        )
    )
    assert raised.record.status is RunStatus.QUEUED and raised.record.limits == {
        "max_model_calls": 3
    }
    limits_event = [e for e in await service.store.events(run_id) if e.type == "run.limits_raised"]
    assert limits_event[0].actor == "user:alice"
    assert limits_event[0].data == {
        "limits": {"max_model_calls": 3},
        "previous": {"max_model_calls": 2},
    }
    again = await drive_to_rest(service, run_id)
    assert again.record.waiting == Budget("max_model_calls", 3, 3, "run", 4), again.record.error
    assert spent(await service.store.events(run_id))[2] == 3


async def test_the_output_cap_is_clamped_to_what_the_budget_leaves() -> None:
    service = budget_service()
    # 0.002 USD at $3 / $15 per 1M: after its input (estimated ~120 tokens), about 100
    # output tokens are left of the 500 the request asks for
    body = run_body(
        tools=[],
        model={
            "provider": "scripted",
            "name": "priced",
            "max_tokens": 500,
            "script": [{"text": "done", "usage": {"input_tokens": 5, "output_tokens": 400}}],
        },
        limits={"max_cost_usd": 0.002},
    )
    view, _ = await service.create_run(body)
    await drive_once(service.store, service.settings)
    done = await service.get_run(view.record.id, scope=Scope.ALL)
    assert done.record.status is RunStatus.COMPLETED
    (called,) = [e for e in await service.store.events(view.record.id) if e.type == "model.called"]
    assert called.data["finish_reason"] == "length"
    assert 50 < called.data["usage"]["output_tokens"] < 134
    assert called.data["cost_usd"] <= 0.002
    assert called.data["price_source"] == "config"


async def test_a_run_past_its_duration_is_suspended_before_its_call() -> None:
    service = budget_service()
    service.clock = FakeClock(datetime.now(UTC) - timedelta(seconds=90))  # (created 90 s ago)
    view, _ = await service.create_run(run_body(limits={"max_duration_seconds": 60}))
    await drive_once(service.store, service.settings)
    record = (await service.get_run(view.record.id, scope=Scope.ALL)).record
    assert record.status is RunStatus.REQUIRES_ACTION
    assert isinstance(record.waiting, Budget) and record.waiting.limit == "max_duration_seconds"
    assert record.waiting.allowed == 60 and record.waiting.spent >= 90
    assert not (record.usage or {}).get("model_calls")
