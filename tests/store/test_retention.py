"""Retention: finished runs past the cutoff are deleted with everything they own, their
usage stays in the rollups, and nothing else is touched (both databases)."""

from __future__ import annotations

import asyncio
import subprocess
from datetime import UTC, datetime, time, timedelta

import pytest
import sqlalchemy as sa

from app.cli.retention import parse_age
from app.core.lifecycle import RunStatus
from app.core.scope import Scope
from app.service.runs import RunService
from app.settings import Settings
from app.store.retention import purge, purge_batch
from app.store.run_records import utc
from app.store.runs import RunStore
from app.store.schema import (
    model_calls,
    run_events,
    runs,
    tool_calls,
    usage_hourly,
    webhook_attempts,
    webhook_outbox,
)
from tests.e2e.processes import AGENTRUN
from tests.helpers import drive_once, run_body, suspended_run

TEXT_ONLY = {"provider": "scripted", "name": "demo", "script": [{"text": "done"}]}


async def _counts(store: RunStore, run_id: str) -> dict[str, int]:
    out = {}
    async with store.engine.connect() as conn:
        for table in (runs, tool_calls, run_events, model_calls, webhook_outbox):
            column = table.c.id if table is runs else table.c.run_id
            query = sa.select(sa.func.count()).select_from(table).where(column == run_id)
            out[table.name] = (await conn.execute(query)).scalar_one()
    return out


def _today() -> tuple[datetime, datetime]:
    midnight = datetime.combine(datetime.now(UTC).date(), time(), UTC)
    return midnight, midnight + timedelta(days=1)


async def test_finished_runs_go_with_everything_they_own_and_their_usage_stays(
    store: RunStore, settings: Settings
) -> None:
    service = RunService(store, settings)
    hooked = settings.model_copy(update={"webhook_allow_private": True})
    done, _ = await RunService(store, hooked).create_run(
        run_body(model=TEXT_ONLY, webhook={"url": "http://127.0.0.1:9/hook"})
    )
    assert await drive_once(store, settings) == RunStatus.COMPLETED
    waiting = await suspended_run(service)
    cancelled, _ = await service.create_run(run_body())
    await service.cancel(cancelled.record.id, scope=Scope.ALL)
    before = await store.usage_totals(*_today(), scope=Scope.ALL)
    assert before["calls"] == 2  # the completed run's call and the suspended run's call
    assert (await _counts(store, done.record.id))["webhook_outbox"] == 1

    assert await purge(store.engine, datetime.now(UTC) - timedelta(days=1), batch=1) == 0
    deleted = await purge(store.engine, datetime.now(UTC) + timedelta(minutes=1), batch=1)

    assert deleted == 2
    assert await store.get(done.record.id, scope=Scope.ALL) is None
    assert await store.get(cancelled.record.id, scope=Scope.ALL) is None
    assert set((await _counts(store, done.record.id)).values()) == {0}
    kept = await store.get(waiting.record.id, scope=Scope.ALL)
    assert kept is not None and kept.status == RunStatus.REQUIRES_ACTION
    assert (await _counts(store, waiting.record.id))["tool_calls"] == 2
    async with store.engine.connect() as conn:
        orphans = await conn.execute(sa.select(sa.func.count()).select_from(webhook_attempts))
        assert orphans.scalar_one() == 0
    after = await store.usage_totals(*_today(), scope=Scope.ALL)
    assert after == before  # the ledger row became a daily aggregate: same totals


async def test_usage_of_deleted_runs_counts_for_ranges_that_hold_its_hour(
    store: RunStore, settings: Settings
) -> None:
    service = RunService(store, settings)
    await service.create_run(run_body(model=TEXT_ONLY))
    await drive_once(store, settings)
    async with store.engine.connect() as conn:
        called = (await conn.execute(sa.select(model_calls.c.created_at))).scalar_one()
    hour = utc(called).replace(minute=0, second=0, microsecond=0)
    await purge(store.engine, datetime.now(UTC) + timedelta(minutes=1))
    assert (await store.usage_totals(hour, hour + timedelta(hours=1), scope=Scope.ALL))[
        "calls"
    ] == 1
    assert (await store.usage_totals(hour - timedelta(hours=2), hour, scope=Scope.ALL))[
        "calls"
    ] == 0
    # A range that holds only part of the hour reads its ledger, where the run is gone.
    part = (hour + timedelta(microseconds=1), hour + timedelta(hours=1))
    assert (await store.usage_totals(*part, scope=Scope.ALL))["calls"] == 0
    by_model = (await store.usage_totals(hour, hour + timedelta(hours=1), scope=Scope.ALL))[
        "by_model"
    ]
    assert by_model["scripted:demo"]["calls"] == 1


@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
async def test_concurrent_sweeps_never_count_a_run_twice(
    store: RunStore, settings: Settings
) -> None:
    service = RunService(store, settings)
    for _ in range(6):
        await service.create_run(run_body(model=TEXT_ONLY))
        await drive_once(store, settings)
    cutoff = datetime.now(UTC) + timedelta(minutes=1)
    results = await asyncio.gather(*[purge_batch(store.engine, cutoff, 2) for _ in range(4)])
    assert sum(results) <= 6
    assert sum(results) + await purge(store.engine, cutoff) == 6
    async with store.engine.connect() as conn:
        calls = await conn.execute(sa.select(sa.func.sum(usage_hourly.c.calls)))
        assert calls.scalar_one() == 6


def test_ages_are_read_with_units() -> None:
    assert parse_age("30d") == timedelta(days=30)
    assert parse_age("12h") == timedelta(hours=12)
    assert parse_age("90m") == timedelta(minutes=90)
    assert parse_age("3600s") == timedelta(hours=1)
    assert parse_age("7") == timedelta(days=7)
    import argparse

    for bad in ("", "d", "-1d", "0", "soon", "infd"):
        with pytest.raises(argparse.ArgumentTypeError):
            parse_age(bad)


async def test_the_purge_command(store: RunStore, settings: Settings, database_url: str) -> None:
    service = RunService(store, settings)
    view, _ = await service.create_run(run_body(model=TEXT_ONLY))
    await drive_once(store, settings)
    await asyncio.sleep(0.01)
    import os

    done = subprocess.run(
        [AGENTRUN, "purge", "--older-than", "0.005s"],
        env={**os.environ, "AGENTRUN_DATABASE_URL": database_url},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "deleted 1 finished runs" in done.stdout
    assert await store.get(view.record.id, scope=Scope.ALL) is None
    refused = subprocess.run(
        [AGENTRUN, "purge", "--older-than", "soon"], capture_output=True, text=True, timeout=60
    )
    assert refused.returncode == 2 and "not an age" in refused.stderr


async def test_workers_sweep_finished_runs_past_the_retention_age(
    store: RunStore, settings: Settings
) -> None:
    from tests.helpers import running_worker, wait_for

    quick = settings.model_copy(
        update={"retention_days": 0.1 / 86400, "retention_interval": 0.1, "retention_batch": 1}
    )
    service = RunService(store, quick)
    waiting = await suspended_run(service)
    finished = [(await service.create_run(run_body(model=TEXT_ONLY)))[0] for _ in range(3)]
    async with running_worker(store, quick):

        async def gone() -> bool:
            return all([await store.get(v.record.id, scope=Scope.ALL) is None for v in finished])

        await wait_for(gone, bool)
    assert (await store.get(waiting.record.id, scope=Scope.ALL)) is not None
