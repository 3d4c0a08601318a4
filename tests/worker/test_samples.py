"""Workers sample what waits, once a minute, for the overview (app.store.samples): a
running worker writes the minute's row for each tenant with waiting runs, a second worker
in the same minute adds none, and the sample counts the runs as they are."""

from __future__ import annotations

from datetime import UTC, datetime

import sqlalchemy as sa

from app.core.scope import Scope
from app.service.runs import RunService
from app.settings import Settings
from app.store import samples
from app.store.fold import minute_of
from app.store.runs import RunStore
from app.store.schema import gauge_samples
from tests.helpers import drive_once, run_body, running_worker, wait_for


async def rows(store: RunStore) -> list[samples.Sample]:
    return await samples.samples(
        store.engine, datetime(2000, 1, 1, tzinfo=UTC), datetime(3000, 1, 1, tzinfo=UTC), Scope.ALL
    )


async def test_a_running_worker_samples_what_waits_once_a_minute(
    store: RunStore, settings: Settings
) -> None:
    service = RunService(store, settings)
    waiting, _ = await service.create_run(run_body())
    await drive_once(store, settings)  # suspended on its two calls
    theirs, _ = await service.create_run(run_body(), tenant="acme")
    async with running_worker(store, settings):
        found = await wait_for(lambda: rows(store), lambda r: len(r) == 2)
    by_tenant = {s.tenant_id: s for s in found}
    assert by_tenant["default"].suspended == 1 and by_tenant["default"].queued == 0
    assert by_tenant["default"].oldest_suspended_s is not None
    assert by_tenant["default"].oldest_suspended_s >= 0
    acme = by_tenant["acme"]  # (queued, running or suspended: the worker drives it)
    assert acme.queued + acme.running + acme.suspended == 1
    minute = found[0].minute
    assert {s.minute for s in found} == {minute}
    # Another worker's sample of the same minute adds nothing.
    if minute_of(datetime.now(UTC)) == minute:
        assert await samples.sample(store.engine, datetime.now(UTC)) == 2
        async with store.engine.connect() as conn:
            count = await conn.execute(sa.select(sa.func.count()).select_from(gauge_samples))
            assert count.scalar_one() == 2
    await samples.forget(store.engine, datetime(3000, 1, 1, tzinfo=UTC))
    assert await rows(store) == []
    assert waiting.record.id != theirs.record.id
