"""Claims: many runs in one statement, and a lease holder's last write claiming the next."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest
from sqlalchemy.engine import make_url

from app.core.lifecycle import RunStatus, Transition
from app.core.scope import Scope
from app.service.runs import RunService
from app.settings import Settings
from app.store.backend.postgres import PostgresBackend
from app.store.change_rows import EventPlan
from app.store.changes import Change
from app.store.run_records import NewEvent, RunRecord
from app.store.runs import EVENTS_CHANNEL, NOTIFY_CHANNEL, RunStore
from app.webhooks.outbox import Outbox
from tests.helpers import heard, run_body


@pytest.fixture
def service(store: RunStore, settings: Settings) -> RunService:
    return RunService(store, settings)


def claim_values(until: datetime) -> dict[str, Any]:
    """The values of a claim statement's change (worker `w`, one `run.claimed` event)."""
    return {
        "v_status": "running",
        "v_lease_owner": "w",
        "v_lease_expires_at": until,
        "v_waiting_reason": {"type": "model_call"},
        "e0_type": "run.claimed",
        "e0_data": {"worker": "w"},
        "e0_actor": None,
    }


def lease() -> tuple[datetime, datetime]:
    now = datetime.now(UTC)
    return now, now + timedelta(seconds=30)


async def queued(service: RunService, n: int) -> list[str]:
    return [(await service.create_run(run_body()))[0].record.id for _ in range(n)]


async def completed(
    store: RunStore, run_id: str, version: int
) -> tuple[RunRecord | None, RunRecord | None]:
    now, until = lease()
    change = Change(
        Transition.COMPLETE,
        {"lease_owner": None, "output": "done"},
        (NewEvent("run.completed", {"output": "done"}),),
        expect_version=version,
    )
    return await store.apply(run_id, change, now, claim_for=("w-next", until), scope=Scope.ALL)


async def test_claim_many_takes_the_oldest_up_to_the_limit(service: RunService) -> None:
    ids = await queued(service, 5)
    now, until = lease()
    taken = await service.store.claim_many("w", now, until, 2)
    assert sorted(r.id for r in taken) == sorted(ids[:2])
    for record in taken:
        assert record.status == RunStatus.RUNNING and record.lease_owner == "w"
        events = await service.store.events(record.id)
        assert [e.type for e in events][-1] == "run.claimed"
    assert len(await service.store.claim_many("w", now, until, 10)) == 3
    assert await service.store.claim_many("w", now, until, 10) == []


async def test_concurrent_claim_many_take_each_run_once(service: RunService) -> None:
    ids = await queued(service, 12)
    now, until = lease()
    batches = await asyncio.gather(
        *[service.store.claim_many(f"w{i}", now, until, 3) for i in range(8)]
    )
    taken = [r.id for batch in batches for r in batch]
    assert sorted(taken) == sorted(ids)


async def test_last_write_claims_the_next_due_run(service: RunService) -> None:
    first, second = await queued(service, 2)
    now, until = lease()
    held = await service.store.claim("w", now, until)
    assert held is not None and held.id == first
    done, following = await completed(service.store, held.id, held.version)
    assert done is not None and done.status == RunStatus.COMPLETED
    assert following is not None and following.id == second
    stored = await service.store.get(second, scope=Scope.ALL)
    assert stored is not None
    assert stored.status == RunStatus.RUNNING and stored.lease_owner == "w-next"
    assert stored.version == following.version
    assert [e.type for e in await service.store.events(second)][-1] == "run.claimed"
    # Nothing else due: the same write claims nothing.
    again = await service.store.claim("w", now, until)
    assert again is None


async def test_last_write_with_nothing_due_claims_nothing(service: RunService) -> None:
    (only,) = await queued(service, 1)
    now, until = lease()
    held = await service.store.claim("w", now, until)
    assert held is not None
    done, following = await completed(service.store, only, held.version)
    assert done is not None and following is None


async def test_a_refused_last_write_still_hands_over_what_it_claimed(
    service: RunService,
) -> None:
    first, second = await queued(service, 2)
    now, until = lease()
    held = await service.store.claim("w", now, until)
    assert held is not None and held.id == first
    stale = held.version - 1  # the lease was lost: the fencing token moved on
    done, following = await completed(service.store, held.id, stale)
    assert done is None
    assert following is not None and following.id == second
    unchanged = await service.store.get(first, scope=Scope.ALL)
    assert unchanged is not None and unchanged.version == held.version
    assert unchanged.status == RunStatus.RUNNING


@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
async def test_notifications_only_for_what_changed(service: RunService, database_url: str) -> None:
    conninfo = make_url(database_url).set(drivername="postgresql").render_as_string(False)
    async with await psycopg.AsyncConnection.connect(conninfo, autocommit=True) as listener:
        await listener.execute(f"LISTEN {EVENTS_CHANNEL}")
        await listener.execute(f"LISTEN {NOTIFY_CHANNEL}")
        (only,) = await queued(service, 1)
        await service.store.watch("test", [only], 30)
        now, until = lease()
        held = await service.store.claim("w", now, until)
        assert held is not None
        # Refused write, empty claim: neither may notify (not even with an empty payload).
        assert await completed(service.store, only, held.version - 1) == (None, None)
        assert await service.store.claim("w", now, until) is None
        assert (await completed(service.store, only, held.version))[0] is not None
        received = await heard(listener, 3)
    # The workers' wake-up: a lone create sends it in its own statement (the run's id).
    assert sorted(received) == [
        (EVENTS_CHANNEL, only),  # run.claimed (created before it was watched)
        (EVENTS_CHANNEL, only),  # run.completed
        (NOTIFY_CHANNEL, only),  # queued: wake the workers
    ]


@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
async def test_event_notifications_only_for_watched_runs(
    service: RunService, database_url: str
) -> None:
    conninfo = make_url(database_url).set(drivername="postgresql").render_as_string(False)
    store = service.store
    watched, unwatched, lapsed, dropped = await queued(service, 4)
    await store.watch("api-1", [watched, lapsed, dropped], 30)
    await store.watch("api-2", [watched], 30)
    await store.watch("api-1", [lapsed], 0)  # renewed with no time left: lapsed
    await store.unwatch("api-1", [dropped])
    mine = {watched, unwatched, lapsed, dropped}

    async def watches() -> list[tuple[str, str]]:
        return [w for w in await store.watched() if w[0] in mine]

    assert await watches() == [(watched, "api-1"), (watched, "api-2")]
    async with await psycopg.AsyncConnection.connect(conninfo, autocommit=True) as listener:
        await listener.execute(f"LISTEN {EVENTS_CHANNEL}")
        for run_id in (watched, unwatched, lapsed, dropped):
            assert await store.append_events(run_id, None, [NewEvent("note", {})], lease()[0])
        received = [payload for _, payload in await heard(listener, 1)]
    assert received == [watched]  # once, however many processes watch it
    await store.unwatch("api-1")
    await store.unwatch("api-2")
    assert await watches() == []


@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
async def test_claim_plan_keeps_its_index_when_planned_generic_on_an_empty_table(
    store: RunStore, database_url: str
) -> None:
    """The performance notes' first trap: a claim planned while the queue table is empty
    must not stick to a sequential scan. The direct pool plans generically, so the plan
    made now, on an empty table, is the one every later claim on that connection uses."""
    events = [NewEvent("run.claimed", {"worker": "w"})]
    # White-box: the claim statement exactly as the store sends it.
    backend = store.backend
    assert isinstance(backend, PostgresBackend)
    compiled = backend.compile(backend.sql.claim(EventPlan.of(events)))
    now, until = lease()
    values = {"p_now": now, "p_limit": 1, **claim_values(until)}
    args = ", ".join(["%s"] * len(compiled.slots))
    conninfo = make_url(database_url).set(drivername="postgresql").render_as_string(False)
    async with await psycopg.AsyncConnection.connect(conninfo, autocommit=True) as conn:
        await conn.execute("SET plan_cache_mode = force_generic_plan")
        await conn.execute(f"PREPARE claim AS {compiled.sql}")
        cursor = psycopg.AsyncClientCursor(conn)
        await cursor.execute(f"EXPLAIN EXECUTE claim({args})", compiled.params(values))
        rows = await cursor.fetchall()
    plan = "\n".join(row[0] for row in rows)
    assert "ix_runs_claim" in plan, plan
    assert "Seq Scan on runs" not in plan, plan


@pytest.mark.parametrize("webhook", [None, "http://127.0.0.1:9/hook"])
async def test_a_write_by_a_holder_of_the_run_takes_its_configuration_from_it(
    service: RunService, webhook: str | None
) -> None:
    """A writer that holds the run as read (`known`) gets the same record back without
    the statement reading the configuration again; its webhook events still reach the
    outbox when the run has a webhook, and none is prepared when it has none."""
    extra = {"webhook": {"url": webhook}} if webhook else {}
    settings = service.settings.model_copy(update={"webhook_allow_private": True})
    service = RunService(service.store, settings)
    view, _ = await service.create_run(run_body(metadata={"team": "a"}, **extra))
    now, until = lease()
    held = await service.store.claim("w", now, until)
    assert held is not None and held.id == view.record.id
    change = Change(
        Transition.COMPLETE,
        {"lease_owner": None, "lease_expires_at": None, "output": "done"},
        (NewEvent("run.completed", {"output": "done"}),),
        expect_version=held.version,
    )
    done, _ = await service.store.apply(held.id, change, now, known=held, scope=Scope.ALL)
    assert done is not None and done.status == RunStatus.COMPLETED
    stored = await service.store.get(held.id, scope=Scope.ALL)
    assert stored is not None
    assert (done.config, done.metadata) == (stored.config, stored.metadata)
    assert done.metadata == {"team": "a"} and done.version == stored.version
    deliveries = await Outbox(service.store.backend).webhook_deliveries(held.id)
    assert [d["event_type"] for d in deliveries] == (["run.completed"] if webhook else [])
