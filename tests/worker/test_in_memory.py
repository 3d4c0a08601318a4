"""The worker over the in-memory backend (tests/memory.py): a run's lifecycle and its
fencing, through the real repositories, without a database."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from app.core.lifecycle import RunStatus
from app.core.scope import Scope
from app.service.runs import RunService
from app.store.runs import RunStore
from tests.conftest import make_settings
from tests.helpers import drive_once, results_for, run_body, suspended_run
from tests.memory import MemoryBackend


def memory_service() -> RunService:
    store = RunStore(None, backend=MemoryBackend())  # type: ignore[arg-type]
    return RunService(store, make_settings("sqlite:///in-memory.db"))


async def test_a_worker_drives_a_run_to_suspension_and_after_its_results_to_the_end() -> None:
    service = memory_service()
    view = await suspended_run(service)  # created, claimed, driven to its tool round
    assert [c.name for c in view.pending] == ["add", "add"]
    assert view.record.waiting_round == view.pending[0].round
    outcome = await service.submit_tool_results(
        results_for(view), run_id=view.record.id, scope=Scope.ALL
    )
    assert outcome.resumed and outcome.record.status is RunStatus.QUEUED
    await drive_once(service.store, service.settings)
    done = await service.get_run(view.record.id, scope=Scope.ALL)
    assert done.record.status is RunStatus.COMPLETED
    assert done.record.output == "the sums are 3 and 7"
    types = [e.type for e in await service.store.events(view.record.id)]
    assert types[:2] == ["run.created", "run.claimed"]
    assert types.count("run.claimed") == 2 and types[-1] == "run.completed"
    assert [e.seq for e in await service.store.events(view.record.id)] == list(
        range(1, len(types) + 1)
    )


async def test_a_lease_holder_whose_token_moved_on_is_refused() -> None:
    service = memory_service()
    store = service.store
    view, _ = await service.create_run(run_body())
    now = datetime.now(UTC)
    claimed = await store.claim("w1", now, now + timedelta(seconds=5))
    assert claimed is not None and claimed.id == view.record.id
    assert await store.heartbeat(claimed.id, claimed.version, "w1", now, now)
    await service.cancel(claimed.id, scope=Scope.ALL)  # moves the fencing token on
    assert not await store.heartbeat(claimed.id, claimed.version, "w1", now, now)
    assert await store.claim("w2", now, now) is None  # nothing else is due
