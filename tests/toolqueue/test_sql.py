"""The tool-call queue in the store, on both back ends: a suspension offers the calls of
runs that name a queue; a lease takes them (new token, one more attempt, events, the run's
token moved on); a lapsed lease is taken again by the next lease; cancelled and expired
runs' calls leave the queue; heartbeats extend only the current lease."""

from __future__ import annotations

import asyncio
import re
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from app.core.lifecycle import RunStatus
from app.core.scope import Scope
from app.service.runs import RunService
from app.settings import Settings
from app.store import changes
from app.store.backend.pg_lease import lease_statement
from app.store.backend.postgres import PostgresBackend
from app.store.runs import RunStore
from app.toolqueue.sql import ToolCallQueue, call_statement, extend_statement, next_due_statement
from tests.helpers import ADD_TOOL, drive_once, run_body, suspended_run


def queue(store: RunStore) -> ToolCallQueue:
    """The queue's SQL over `store`'s backend (`app.toolqueue.sql`)."""
    return ToolCallQueue(store.backend)


@pytest.fixture
def service(store: RunStore, settings: Settings) -> RunService:
    return RunService(store, settings)


def later(seconds: float) -> datetime:
    return datetime.now(UTC) + timedelta(seconds=seconds)


async def test_a_suspension_offers_its_calls_and_a_lease_takes_them(
    store: RunStore, service: RunService
) -> None:
    view = await suspended_run(service, tool_queue="math")
    before = await store.get(view.record.id, scope=Scope.ALL)
    assert before is not None
    assert [c.queue for c in view.pending] == ["math", "math"]
    assert all(c.lease_expires_at is not None and c.attempts == 0 for c in view.pending)

    leased = await queue(store).lease_calls("math", "ex-1", later(0), later(30), 10)

    assert [(c.run_id, c.position, c.attempts, c.lease_owner) for c in leased] == [
        (view.record.id, 0, 1, "ex-1"),
        (view.record.id, 1, 1, "ex-1"),
    ]
    assert len({c.lease_token for c in leased}) == 2
    after = await store.get(view.record.id, scope=Scope.ALL)
    assert after is not None
    assert after.version == before.version + 1, "a lease moves the run's fencing token on"
    assert after.status == RunStatus.REQUIRES_ACTION
    events = (await store.events(view.record.id))[-2:]
    assert [e.type for e in events] == ["tool_call.leased", "tool_call.leased"]
    assert [e.seq for e in events] == [after.last_event_seq - 1, after.last_event_seq]
    assert events[0].data["tool_call_id"] == view.pending[0].call_id
    assert events[0].data | {"lease_expires_at": None} == {
        "tool_call_id": view.pending[0].call_id,
        "round": view.pending[0].round,
        "queue": "math",
        "executor": "ex-1",
        "attempt": 1,
        "lease_expires_at": None,
    }
    assert events[0].data["lease_expires_at"].endswith("Z")
    # Held: nothing more to lease, of this queue or another.
    assert await queue(store).lease_calls("math", "ex-2", later(0), later(30), 10) == []
    assert await queue(store).lease_calls("other", "ex-2", later(0), later(30), 10) == []


async def test_a_lease_takes_at_most_limit_calls_oldest_offer_first(
    store: RunStore, service: RunService
) -> None:
    first = await suspended_run(service, tool_queue="q")
    second = await suspended_run(service, tool_queue="q")
    taken = await queue(store).lease_calls("q", "ex", later(0), later(30), 3)
    assert [(c.run_id, c.position) for c in taken] == [
        (first.record.id, 0),
        (first.record.id, 1),
        (second.record.id, 0),
    ]
    rest = await queue(store).lease_calls("q", "ex", later(0), later(30), 3)
    assert [(c.run_id, c.position) for c in rest] == [(second.record.id, 1)]


async def test_a_lapsed_lease_is_taken_again_with_a_new_token(
    store: RunStore, service: RunService
) -> None:
    view = await suspended_run(service, tool_queue="q")
    first = await queue(store).lease_calls("q", "ex-1", later(0), later(1), 1)
    assert len(first) == 1
    assert (
        await queue(store).lease_calls("q", "ex-2", later(0.5), later(30), 1) != first
    )  # the other
    again = await queue(store).lease_calls("q", "ex-2", later(2), later(30), 5)
    assert [(c.position, c.attempts, c.lease_owner) for c in again] == [(0, 2, "ex-2")]
    assert again[0].lease_token != first[0].lease_token
    events = await store.events(view.record.id)
    lapsed = [e for e in events if e.type == "tool_call.lease_expired"]
    assert [e.data for e in lapsed] == [
        {
            "tool_call_id": first[0].call_id,
            "round": first[0].round,
            "attempt": 1,
            "executor": "ex-1",
        }
    ]
    seqs = [e.seq for e in events]
    assert seqs == list(range(1, len(events) + 1)), "event numbers stay gapless"
    assert events[-1].type == "tool_call.leased" and events[-2].type == "tool_call.lease_expired"


async def test_heartbeats_extend_only_the_current_lease(
    store: RunStore, service: RunService
) -> None:
    await suspended_run(service, tool_queue="q")
    (call,) = await queue(store).lease_calls("q", "ex-1", later(0), later(1), 1)
    assert call.lease_token is not None
    key = (call.run_id, call.round, call.position)
    until = later(60)
    assert await queue(store).extend_lease(*key, call.lease_token, "q", until) == until
    assert await queue(store).extend_lease(*key, call.lease_token, "other", until) is None
    assert await queue(store).extend_lease(*key, "0" * 32, "q", until) is None
    # Extended: not lapsed at +2 s; at +61 s it is, and the next lease takes it.
    other = await queue(store).lease_calls("q", "ex-2", later(2), later(600), 9)
    assert [c.position for c in other] == [1]
    (again,) = await queue(store).lease_calls("q", "ex-2", later(61), later(90), 9)
    assert again.position == 0 and again.attempts == 2
    assert await queue(store).extend_lease(*key, call.lease_token, "q", later(120)) is None
    row = await queue(store).call_row(*key, scope=Scope.ALL)
    assert row is not None and row.lease_token == again.lease_token


async def test_next_offer_is_the_earliest_call_or_lapse(
    store: RunStore, service: RunService
) -> None:
    assert await queue(store).next_offer("q") is None
    view = await suspended_run(service, tool_queue="q")
    offered = await queue(store).next_offer("q")
    assert offered is not None and offered <= later(0)
    until = later(30)
    await queue(store).lease_calls("q", "ex", later(0), until, 2)
    due = await queue(store).next_offer("q")
    assert due is not None and abs((due - until).total_seconds()) < 0.001
    await service.cancel(view.record.id, scope=Scope.ALL)
    assert await queue(store).next_offer("q") is None


@pytest.mark.parametrize("end", ["cancel", "expire"])
async def test_a_run_that_stops_waiting_takes_its_calls_out_of_the_queue(
    store: RunStore, service: RunService, end: str
) -> None:
    view = await suspended_run(service, tool_queue="q")
    await queue(store).lease_calls("q", "ex", later(0), later(1), 1)
    if end == "cancel":
        await service.cancel(view.record.id, scope=Scope.ALL)
    else:
        done, _ = await store.apply(view.record.id, changes.expire(), later(0), scope=Scope.ALL)
        assert done is not None and done.status == RunStatus.EXPIRED
    assert await queue(store).lease_calls("q", "ex", later(5), later(30), 9) == []
    rows = await store.tool_calls(view.record.id)
    assert [r.queue for r in rows] == [None, None]


async def test_runs_without_a_queue_offer_nothing_and_a_tool_may_name_its_own(
    store: RunStore, service: RunService
) -> None:
    await suspended_run(service)
    assert await queue(store).lease_calls("q", "ex", later(0), later(30), 9) == []
    mul = {**ADD_TOOL, "name": "mul", "queue": "slow"}
    script = [
        {"tool_calls": [{"name": "add", "arguments": {"a": 1, "b": 2}}, {"name": "mul"}]},
        {"text": "done"},
    ]
    model = {"provider": "scripted", "name": "demo", "script": script}
    view, _ = await service.create_run(run_body(tools=[ADD_TOOL, mul], model=model))
    await drive_once(store, service.settings)
    rows = await store.tool_calls(view.record.id)
    assert [(r.name, r.queue) for r in rows] == [("add", None), ("mul", "slow")]
    (call,) = await queue(store).lease_calls("slow", "ex", later(0), later(30), 9)
    assert call.name == "mul"
    got = await service.get_run(view.record.id, scope=Scope.ALL)
    assert got.record.config["tools"][0] == ADD_TOOL  # (no `queue` key when none is named)


async def test_concurrent_leases_never_take_one_call_twice(
    store: RunStore, service: RunService
) -> None:
    for _ in range(5):
        await suspended_run(service, tool_queue="q")
    got = await asyncio.gather(
        *[queue(store).lease_calls("q", f"ex-{i}", later(0), later(30), 3) for i in range(6)]
    )
    keys = [(c.run_id, c.position) for batch in got for c in batch]
    # (A lease skips a call whose run another lease holds locked at that moment, so the
    # burst may leave some for the next lease; none is ever taken twice.)
    while more := await queue(store).lease_calls("q", "ex-late", later(0), later(30), 10):
        keys += [(c.run_id, c.position) for c in more]
    assert len(keys) == 10 and len(set(keys)) == 10
    for run_id in {k[0] for k in keys}:
        events = await store.events(run_id)
        assert [e.seq for e in events] == list(range(1, len(events) + 1))


async def test_the_queue_statements_use_their_indexes_on_empty_tables(
    empty_postgres_url: str,
) -> None:
    """Planned generically on empty tables (the direct pool's sticky plan), the lease reads
    the partial index of leasable calls and the others the primary key: no scan."""
    from app.store.backend.engines import create_engine
    from tests.store.test_plans import generic_plan

    store = RunStore(create_engine(empty_postgres_url))
    now = later(0)
    values = {
        "p_queue": "q",
        "p_now": now,
        "p_limit": 5,
        "p_owner": "ex",
        "p_until": now,
        "p_until_iso": "x",
        "p_run": "run_x",
        "p_round": 1,
        "p_position": 0,
        "p_token": "t",
        "p_tenant": "default",
    }
    backend = store.backend
    assert isinstance(backend, PostgresBackend)
    try:
        for stmt, index in (
            (lease_statement(), "ix_tool_calls_leasable"),
            (next_due_statement(), "ix_tool_calls_leasable"),
            (extend_statement(), "pk_tool_calls"),
            (call_statement(), "pk_tool_calls"),
        ):
            compiled = backend.compile(stmt)
            params = {name: values[name] for name, _, fixed, _ in compiled.slots if not fixed}
            plan = await generic_plan(empty_postgres_url, compiled, params)
            assert index in plan and "Seq Scan" not in plan, plan
    finally:
        await store.aclose()


async def test_a_cancel_finds_its_calls_by_the_run_on_empty_tables(
    empty_postgres_url: str,
) -> None:
    """The cancel's statement (which takes the run's calls out of their queue) reaches
    them by the primary key, not by the index of every queue's leasable calls."""
    from app.store.backend.engines import create_engine
    from app.store.backend.pg_direct import DirectPool
    from tests.store.test_plans import generic_plan

    store = RunStore(create_engine(empty_postgres_url))
    sent = []
    fetchone = DirectPool.fetchone
    backend = type(store.backend)
    in_transaction = backend._fetch_one  # type: ignore[attr-defined]

    async def recording(self: DirectPool, compiled: object, values: object) -> object:
        sent.append((compiled, dict(values)))  # type: ignore[call-overload]
        return await fetchone(self, compiled, values)  # type: ignore[arg-type]

    async def recording_in(self: Any, conn: Any, stmt: Any, values: Any) -> Any:
        if conn is not None:  # (a cancel runs in a transaction: its tree goes with it)
            sent.append((self.compile(stmt), dict(values)))
        return await in_transaction(self, conn, stmt, values)

    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(DirectPool, "fetchone", recording)
            patch.setattr(backend, "_fetch_one", recording_in)
            service = RunService(store, store_settings(empty_postgres_url))
            view = await suspended_run(service, tool_queue="q")
            sent.clear()
            await service.cancel(view.record.id, scope=Scope.of("default"))  # (as the API does)
        (compiled, values), *_ = [s for s in sent if "unqueued" in s[0].sql]
        assert re.search(r"runs\.tenant_id = \$\d+", compiled.sql)  # (scoped in the CAS)
        plan = await generic_plan(empty_postgres_url, compiled, values)
        assert "ix_tool_calls_leasable" not in plan and "Seq Scan" not in plan, plan
    finally:
        await store.aclose()


def store_settings(url: str) -> Settings:
    from tests.conftest import make_settings

    return make_settings(url)
