"""The claim's order: higher priority first; within a priority, fair keys take turns
(start-time fair queuing ranks set by the INSERT); then the oldest due."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy.engine import make_url

from app.approvals import policies
from app.core.scope import Scope
from app.service import convert
from app.service.new_runs import without_unset_queues
from app.service.runs import RunService
from app.settings import Settings
from app.store.backend.pg_statements import Shape
from app.store.backend.postgres import PostgresBackend
from app.store.change_rows import EventPlan
from app.store.run_reads import queue_ahead
from app.store.run_records import NewEvent
from app.store.runs import RunStore
from app.store.schema import runs
from tests.conftest import make_settings
from tests.helpers import run_body
from tests.store.test_claims import claim_values
from tests.store.test_plans import generic_plan


def lease() -> tuple[datetime, datetime]:
    now = datetime.now(UTC)
    return now, now + timedelta(seconds=30)


async def create(service: RunService, tenant: str = "default", **body: object) -> str:
    return (await service.create_run(run_body(**body), tenant=tenant))[0].record.id


async def claim_order(store: RunStore) -> list[str]:
    """The runs in the order claims of one run each take them, until none is due."""
    order: list[str] = []
    now, until = lease()
    while (record := await store.claim("w", now, until)) is not None:
        order.append(record.id)
    return order


async def test_higher_priority_goes_first_then_the_oldest(
    store: RunStore, settings: Settings
) -> None:
    service = RunService(store, settings)
    low = await create(service, priority=-5)
    plain = [await create(service) for _ in range(2)]
    high = await create(service, priority=10)
    assert await claim_order(store) == [high, *plain, low]


async def test_a_backlog_does_not_starve_a_tenant_queued_after_it(
    store: RunStore, settings: Settings
) -> None:
    service = RunService(store, settings)
    a = [await create(service, "a") for _ in range(6)]
    b = [await create(service, "b") for _ in range(2)]
    # A ranks 1..6; B joins at the head (rank 1): 2, 3. Equal ranks: the older first.
    assert await claim_order(store) == [a[0], a[1], b[0], a[2], b[1], a[3], a[4], a[5]]


async def test_priority_ranks_keep_to_their_priority(store: RunStore, settings: Settings) -> None:
    service = RunService(store, settings)
    a = [await create(service, "a") for _ in range(3)]
    urgent = await create(service, "a", priority=1)
    b = await create(service, "b")
    record = await store.get(urgent, with_log=False, scope=Scope.ALL)
    assert (record.priority, record.fair_rank, record.fair_key) == (1, 1, "a")
    assert await claim_order(store) == [urgent, a[0], a[1], b, a[2]]


async def test_concurrent_creates_of_one_key_get_ranks_of_their_own(
    store: RunStore, settings: Settings
) -> None:
    """Not the same rank (which would give the key several runs per turn): the upsert of
    the key's rank row orders them."""
    service = RunService(store, settings)
    ids = await asyncio.gather(*(create(service, "a") for _ in range(8)))
    ranks = [(await store.get(i, with_log=False, scope=Scope.ALL)).fair_rank for i in ids]  # type: ignore[union-attr]
    assert sorted(ranks) == list(range(1, 9))


async def test_ranks_go_on_from_the_last_given_when_nothing_is_queued(
    store: RunStore, settings: Settings
) -> None:
    service = RunService(store, settings)
    for _ in range(3):
        await create(service, "a")
    assert len(await claim_order(store)) == 3
    b = await create(service, "b")
    record = await store.get(b, with_log=False, scope=Scope.ALL)
    assert record is not None and record.fair_rank == 4  # (not 1: A's next would be 4 too)


async def test_a_run_not_yet_due_is_stepped_over(store: RunStore, settings: Settings) -> None:
    service = RunService(store, settings)
    later = await create(service, priority=5)
    now, _ = lease()
    async with store.backend.transaction() as conn:  # (as a backoff leaves it)
        await conn.execute(
            runs.update().where(runs.c.id == later).values(available_at=now + timedelta(hours=1))
        )
    first = await create(service)
    assert await claim_order(store) == [first]


async def test_metadata_fair_key_takes_turns_within_a_tenant(
    store: RunStore, database_url: str
) -> None:
    service = RunService(store, make_settings(database_url, fair_share_key="metadata:user"))
    u1 = [await create(service, metadata={"user": "u1"}) for _ in range(3)]
    u2 = [await create(service, metadata={"user": "u2"}) for _ in range(2)]
    record = await store.get(u2[0], with_log=False, scope=Scope.ALL)
    assert record.fair_key == "default/u2"
    assert await claim_order(store) == [u1[0], u1[1], u2[0], u1[2], u2[1]]


def test_the_fair_share_key_setting_is_validated(database_url: str) -> None:
    with pytest.raises(ValueError, match="fair_share_key"):
        make_settings(database_url, fair_share_key="user")


@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
@pytest.mark.parametrize("chained", [False, True])
async def test_the_claim_index_still_serves_the_pick(
    store: RunStore, database_url: str, chained: bool
) -> None:
    """EXPLAIN of the claim (and of a change's chained claim), planned generic: the pick
    reads ix_runs_claim in its order (no sort, no sequential scan)."""
    backend = store.backend
    assert isinstance(backend, PostgresBackend)
    events = [NewEvent("run.claimed", {"worker": "w"})]
    now, until = lease()
    claim = claim_values(until)
    if chained:
        plan = EventPlan.of([])
        shape = Shape(("output",), ("running",), plan, False, chain=EventPlan.of(events))
        stmt = backend.sql.change(shape)
        values = {"p_id": "r", "p_now": now, "v_output": "x", "n_p_limit": 1}
        values |= {f"n_{k}": v for k, v in claim.items()}
    else:
        stmt = backend.sql.claim(EventPlan.of(events))
        values = {"p_now": now, "p_limit": 1, **claim}
    conninfo = make_url(database_url).set(drivername="postgresql").render_as_string(False)
    plan = await generic_plan(conninfo, backend.compile(stmt), values)
    assert "ix_runs_claim" in plan, plan
    assert "Seq Scan on runs" not in plan and "Sort" not in plan, plan


@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
async def test_a_runs_place_is_counted_on_the_claim_index(
    store: RunStore, database_url: str
) -> None:
    backend = store.backend
    assert isinstance(backend, PostgresBackend)
    now, _ = lease()
    values = {"p_priority": 0, "p_rank": 5, "p_available": now, "p_id": "run_x", "p_now": now}
    conninfo = make_url(database_url).set(drivername="postgresql").render_as_string(False)
    plan = await generic_plan(conninfo, backend.compile(queue_ahead()), values)
    assert "ix_runs_claim" in plan and "Seq Scan on runs" not in plan, plan


async def test_a_run_not_due_does_not_hold_the_head_of_the_turns(
    store: RunStore, settings: Settings
) -> None:
    # A run that waits (its conversation, a backoff, a shared limit) keeps its low rank;
    # the turns' head is the lowest rank that may go, else a newcomer's burst is ranked
    # below every run of a backlog that advanced meanwhile and all of it goes first.
    service = RunService(store, settings)
    waits = await create(service, "old")
    now, until = lease()
    async with store.backend.transaction() as conn:
        await conn.execute(
            runs.update().where(runs.c.id == waits).values(available_at=now + timedelta(days=1))
        )
    b = [await create(service, "b") for _ in range(4)]
    now, until = lease()
    for _ in range(2):
        assert await store.claim("w", now, until) is not None
    c = [await create(service, "c") for _ in range(3)]
    ranks = [(await store.get(i, with_log=False, scope=Scope.ALL)).fair_rank for i in [*b[2:], *c]]  # type: ignore[union-attr]
    assert ranks == [4, 5, 5, 6, 7]  # (the head: b's 4, the lowest that may go)


async def test_with_no_run_due_a_newcomer_joins_at_the_lowest_queued(
    store: RunStore, settings: Settings
) -> None:
    # (Not behind the whole backlog of a key whose runs all wait a moment: a backoff.)
    service = RunService(store, settings)
    a = [await create(service, "a") for _ in range(4)]
    now, _ = lease()
    async with store.backend.transaction() as conn:
        await conn.execute(
            runs.update().where(runs.c.id.in_(a)).values(available_at=now + timedelta(minutes=1))
        )
    b = await create(service, "b")
    assert (await store.get(b, with_log=False, scope=Scope.ALL)).fair_rank == 2  # type: ignore[union-attr]


async def test_the_default_priority_is_hashed_as_before_it_existed(
    store: RunStore, settings: Settings
) -> None:
    # An Idempotency-Key's request hash stored before `priority` existed must match the
    # same body replayed after the upgrade (not a 422 idempotency-key-reused).
    service = RunService(store, settings)
    body = run_body()
    view, _ = await service.create_run(body, idempotency_key="k-prio")
    request = policies.without_unset_approvals(without_unset_queues(body.model_dump(mode="json")))
    # (options that did not always exist)
    for added in ("priority", "if_busy", "agent", "output_schema", "compaction"):
        request.pop(added)
    assert view.record.request_hash == convert.canonical_hash(request)
    urgent = await service.create_run(run_body(priority=5), idempotency_key="k-prio-5")
    assert urgent[0].record.request_hash != view.record.request_hash
