"""Races against the real database, with concurrent tasks: one winner, nothing lost."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest

from app.clock import SYSTEM_CLOCK
from app.core.lifecycle import RunStatus, Transition
from app.core.scope import Scope
from app.service.errors import RunStateConflict
from app.service.runs import RunService
from app.service.tokens import new_key
from app.settings import Settings
from app.store.changes import Change
from app.store.run_records import NewEvent
from app.store.runs import RunStore
from app.worker.driver import RunDriver
from app.worker.providers import make_provider
from tests.helpers import results_for, run_body, suspended_run


@pytest.fixture
def service(store: RunStore, settings: Settings) -> RunService:
    return RunService(store, settings)


async def attempt(coro: object) -> object:
    try:
        return await coro  # type: ignore[misc]
    except RunStateConflict as exc:
        return exc


@pytest.mark.parametrize("round_", range(5))
async def test_cancel_races_the_last_tool_result(service: RunService, round_: int) -> None:
    view = await suspended_run(service)
    submit, cancel = await asyncio.gather(
        attempt(
            service.submit_tool_results(results_for(view), run_id=view.record.id, scope=Scope.ALL)
        ),
        attempt(service.cancel(view.record.id, scope=Scope.ALL)),
    )
    final = await service.get_run(view.record.id, scope=Scope.ALL)
    assert final.record.status == RunStatus.CANCELLED  # cancel wins either way
    rows = await service.store.tool_calls(view.record.id)
    if isinstance(submit, RunStateConflict):
        assert submit.current == "cancelled"  # the refusal names the winner
        assert all(r.result is None for r in rows), "a refused submission wrote results"
    else:
        assert all(r.result is not None for r in rows)
    assert not isinstance(cancel, RunStateConflict)
    types = [e.type for e in await service.store.events(view.record.id)]
    assert types.count("run.cancelled") == 1


@pytest.mark.parametrize("round_", range(5))
async def test_expiry_races_the_last_tool_result(service: RunService, round_: int) -> None:
    view = await suspended_run(service)
    later = datetime.now(UTC) + timedelta(days=30)  # as if the run waited too long
    submit, expired = await asyncio.gather(
        attempt(
            service.submit_tool_results(results_for(view), run_id=view.record.id, scope=Scope.ALL)
        ),
        service.store.expire_suspended(later),
    )
    final = await service.get_run(view.record.id, scope=Scope.ALL)
    if isinstance(submit, RunStateConflict):
        assert submit.current == "expired" and final.record.status == RunStatus.EXPIRED
        assert expired == [view.record.id]
    else:
        assert final.record.status == RunStatus.QUEUED and expired == []


async def test_a_worker_that_lost_its_lease_cannot_write(service: RunService) -> None:
    store, settings = service.store, service.settings
    view, _ = await service.create_run(run_body())
    now = datetime.now(UTC)
    claimed = await store.claim("w1", now, now + timedelta(seconds=1))
    assert claimed is not None and claimed.lease_owner == "w1"
    requeued = await store.reap_expired_leases(now + timedelta(seconds=2))
    assert requeued == [view.record.id]
    stolen = await store.claim("w2", now + timedelta(seconds=2), now + timedelta(seconds=60))
    assert stolen is not None and stolen.version > claimed.version
    key = await store.secret("callback_key", new_key)
    late = RunDriver(
        store,
        settings,
        "w1",
        lambda s: make_provider(s, settings, clock=SYSTEM_CLOCK),
        key,
        clock=SYSTEM_CLOCK,
    )
    assert await late.drive(claimed) is None  # fenced out: LeaseLost
    current = await store.get(view.record.id, scope=Scope.ALL)
    assert current is not None
    assert current.status == RunStatus.RUNNING and current.lease_owner == "w2"
    assert current.version == stolen.version
    assert await store.tool_calls(view.record.id) == []
    assert not await store.heartbeat(view.record.id, claimed.version, "w1", now, now)


async def test_concurrent_claims_take_each_run_once(service: RunService) -> None:
    ids = {(await service.create_run(run_body()))[0].record.id for _ in range(10)}
    now = datetime.now(UTC)
    claims = await asyncio.gather(
        *[service.store.claim(f"w{i}", now, now + timedelta(seconds=30)) for i in range(20)]
    )
    taken = [c.id for c in claims if c is not None]
    assert sorted(taken) == sorted(ids)


async def test_claim_skips_runs_not_yet_due(service: RunService) -> None:
    view, _ = await service.create_run(run_body())
    now = datetime.now(UTC)
    delay = Change(
        Transition.BILL, {"available_at": now + timedelta(seconds=60)}, (NewEvent("x.delayed", {}),)
    )
    assert (await service.store.apply(view.record.id, delay, now, scope=Scope.ALL))[0] is not None
    assert await service.store.claim("w", now, now + timedelta(seconds=5)) is None
    later = now + timedelta(seconds=61)
    claimed = await service.store.claim("w", later, later + timedelta(seconds=5))
    assert claimed is not None and claimed.id == view.record.id


async def test_wrong_fencing_token_changes_nothing(service: RunService) -> None:
    view, _ = await service.create_run(run_body())
    now = datetime.now(UTC)
    claimed = await service.store.claim("w", now, now + timedelta(seconds=30))
    assert claimed is not None
    forged = Change(
        Transition.COMPLETE,
        {"output": "forged"},
        (NewEvent("run.completed", {}),),
        expect_version=claimed.version - 1,
    )
    refused, _ = await service.store.apply(view.record.id, forged, now, scope=Scope.ALL)
    assert refused is None
    current = await service.store.get(view.record.id, scope=Scope.ALL)
    assert current is not None and current.status == RunStatus.RUNNING
    assert current.output is None and current.version == claimed.version
