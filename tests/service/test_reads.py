"""What the API and the dashboard read through the service (app.service.reads), on both
back ends."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from app.core.lifecycle import RunStatus
from app.core.scope import Scope
from app.service.errors import is_unavailable
from app.service.reads import RunReads
from app.service.runs import RunService
from app.service.types import BadCursor, RunFilter
from app.settings import Settings
from app.store.backend.engines import create_engine
from app.store.runs import RunStore
from app.webhooks.outbox import Outbox
from tests.helpers import run_body, suspended_run
from tests.ports import free_port


@pytest.fixture
def service(store: RunStore, settings: Settings) -> RunService:
    return RunService(store, settings)


@pytest.fixture
def reads(store: RunStore) -> RunReads:
    """As the composition root builds them: deliveries read from the webhooks' outbox."""
    return RunReads(store, deliveries=Outbox(store.backend).webhook_deliveries)


async def test_ready_when_the_database_answers(reads: RunReads) -> None:
    await reads.ready()


async def test_not_ready_when_the_database_is_unreachable() -> None:
    port = free_port()  # a loopback port nothing listens on
    store = RunStore(create_engine(f"postgresql://postgres@127.0.0.1:{port}/postgres"))
    try:
        with pytest.raises(Exception) as refused:
            await RunReads(store).ready()
        assert is_unavailable(refused.value)  # what the API answers with 503
    finally:
        await store.aclose()


async def test_pending_calls_are_those_of_the_round_a_run_waits_on(
    service: RunService, reads: RunReads
) -> None:
    waiting = await suspended_run(service)
    queued, _ = await service.create_run(run_body())
    pending = await reads.pending_calls([waiting.record, queued.record])
    assert list(pending) == [waiting.record.id]  # a queued run waits on no calls
    assert [c.call_id for c in pending[waiting.record.id]] == [c.call_id for c in waiting.pending]
    assert [c.arguments for c in pending[waiting.record.id]] == [
        {"a": 1, "b": 2},
        {"a": 3, "b": 4},
    ]


async def test_suspended_since_is_when_a_suspended_run_last_suspended(
    service: RunService, reads: RunReads
) -> None:
    waiting = await suspended_run(service)
    queued, _ = await service.create_run(run_body())
    since = await reads.suspended_since([waiting.record, queued.record])
    assert list(since) == [waiting.record.id]
    suspended = [
        e for e in await reads.events(waiting.record.id) if e.type == "run.requires_action"
    ]
    assert since[waiting.record.id] == suspended[-1].created_at


async def test_runs_page_filters_pages_and_refuses_a_forged_cursor(
    service: RunService, reads: RunReads
) -> None:
    ids = [(await service.create_run(run_body()))[0].record.id for _ in range(3)]
    first, cursor = await reads.runs_page(
        RunFilter(RunStatus.QUEUED, scope=Scope.ALL), limit=2, cursor=None
    )
    assert [r.id for r in first] == ids[:2]  # waiting statuses: oldest first
    assert cursor is not None
    rest, last = await reads.runs_page(
        RunFilter(RunStatus.QUEUED, scope=Scope.ALL), limit=2, cursor=cursor
    )
    assert [r.id for r in rest] == ids[2:] and last is None
    none, _ = await reads.runs_page(
        RunFilter(RunStatus.COMPLETED, scope=Scope.ALL), limit=2, cursor=None
    )
    assert none == []
    with pytest.raises(BadCursor):
        await reads.runs_page(RunFilter(RunStatus.QUEUED, scope=Scope.ALL), limit=2, cursor="%%%")


async def test_overview_counts_runs_and_buckets_suspended_ages(
    service: RunService, reads: RunReads
) -> None:
    await suspended_run(service)
    await service.create_run(run_body())
    overview = await reads.overview(datetime.now(UTC), scope=Scope.ALL)
    assert overview.counts == {"requires_action": 1, "queued": 1}
    assert len(overview.suspended_ages) == 1 and overview.suspended_ages[0] < 60
    assert dict(overview.age_histogram)["<1m"] == 1
    assert sum(n for _, n in overview.age_histogram) == 1
    assert overview.activity.completed == 0 and overview.activity.window_minutes == 60


async def test_a_shared_secret_is_made_once_for_every_reader(
    store: RunStore, reads: RunReads
) -> None:
    name = f"test-secret-{id(reads)}"
    first = await reads.shared_secret(name)
    assert len(first) >= 32
    assert await RunReads(store).shared_secret(name) == first
    assert await reads.shared_secret(name + "-other") != first


async def test_usage_and_ledger_of_a_run_without_model_calls(
    service: RunService, reads: RunReads
) -> None:
    view, _ = await service.create_run(run_body())
    assert await reads.ledger(view.record.id) == {"calls": 0, "failed_calls": 0, "cost_usd": None}
    assert await reads.deliveries(view.record.id) == []
    now = datetime.now(UTC)
    totals = await reads.usage(now.replace(year=now.year - 1), now, scope=Scope.ALL)
    assert totals["calls"] == 0 and totals["by_model"] == {}
